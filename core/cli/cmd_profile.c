/* cmd_profile.c - dkv profile: the CUDA backend's kernels timed on the GPU at hand over a grid of
 * shapes (cuda/profile.h), written as a profile file (docs/PROFILE_FORMAT.md) for the simulator.
 * The file is rewritten after every section, so a run cut short (deadline, error, kill) still
 * leaves what it measured, marked complete = false. */
#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <lauxlib.h>
#include <lua.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "dkv_commit.h"
#include "cli/commands.h"
#include "lua/dkv_lua.h"
#include "lua/presets.h"
#include "model/model.h"
#ifdef DKV_HAVE_CUDA
#include "cuda/profile.h"
#endif

#define MAX_GAPS 8   /* --sustain-gaps values (DKV_PROF_SUSTAIN_MAX_GAPS; cuda/profile.h needs CUDA) */
#ifdef DKV_HAVE_CUDA
_Static_assert(MAX_GAPS == DKV_PROF_SUSTAIN_MAX_GAPS, "--sustain-gaps' limit is the profile's");
#endif

#define MAX_MODELS 4

static void usage(FILE *f)
{
    fputs("usage: dkv profile -o FILE.lua [options]\n"
          "\n"
          "Times every kernel class the CUDA backend launches on this machine's GPU over a grid of shapes\n"
          "(GEMMs by m, n, k incl. the LM head, attention, RoPE + KV store, the sparse selection, the\n"
          "elementwise kernels, the low-rank compressor, the copy engine alone and beside compute, the\n"
          "first use of a shape, the host's enqueue time per launch) on seeded random device data, and\n"
          "writes a profile for the simulator (docs/PROFILE_FORMAT.md, docs/GPU.md \"dkv profile\").\n"
          "\n"
          "options:\n"
          "  -o FILE.lua          output (rewritten after every section)\n"
          "  --model NAME         exact shapes of this model preset (repeatable; default llada-8b);\n"
          "                       other models are predicted from the generic GEMM grid\n"
          "  --quick              a small grid (seconds), for a first check\n"
          "  --grid LIST          sections to run, comma-separated (default all): gemm, lm_head, attn,\n"
          "                       kv_store, elementwise, select, gemm_grid, compress, copy, host, memory,\n"
          "                       sustained (only with --sustain; all leaves it out without it)\n"
          "  --deadline SECONDS   stop measuring after this many seconds (default 480); what was\n"
          "                       measured is written with complete = false\n"
          "  --repeats N          timed calls per shape (default 20; median, p10, p90)\n"
          "  --warmup N           untimed calls per shape after the first (default 2)\n"
          "  --device N           CUDA device (default 0)\n"
          "  --l2 flush|warm      flush (default): a read of twice the L2 before every timed call (outside\n"
          "                       its events), as a real step finds its weights and KV; also records the\n"
          "                       median without it (warm_s).  warm: no flush (profiles before 2026-12-02)\n"
          "  --name NAME          the profile's name (default <gpu>-<date>)\n"
          "  --root DIR           project root for the model presets (default: $DKV_ROOT, else found from the\n"
          "                       dkv executable, as dkv run)\n"
          "  --min-rows N         the GEMM sections (gemm, gemm_grid) measure only shapes of at least N\n"
          "                       rows (default 0: all): new rows for an existing profile, merged by hand\n"
          "  --gemm-step N        the gemm section times the models' class GEMMs at every multiple of N rows\n"
          "                       (8 to 8,192, a multiple of 8) up to 8,192 instead of the grid's rows: the\n"
          "                       staircase between the grid's rows (scripts/gemm_steps.py; docs/COST_MODEL.md\n"
          "                       \"GEMM rows between the grid's\")\n"
          "  --states             also time every shape in two power states (cool: each call after a\n"
          "                       one-thread spin; hot: each right after a heater GEMM), the SM clock\n"
          "                       sampled while they run\n"
          "                       (columns cool_s, cool_mhz, hot_s, hot_mhz; needs NVML): each kernel's clock\n"
          "                       sensitivity (docs/COST_MODEL.md \"Clock sensitivity\"); ~0.15 s more a shape\n"
          "  --probe              also read the SMs' own clock (their cycle counters against the global\n"
          "                       timer) over each shape's timed calls: columns probe_mhz (the flushed calls)\n"
          "                       and warm_probe_mhz (docs/COST_MODEL.md \"The clock that follows the work\")\n"
          "  --sustain SECONDS    also the sustained section: each model's layer GEMMs at 64 to 16,384 rows and\n"
          "                       its attention, each back to back for SECONDS (0.2 to 60; 2 is a good choice)\n"
          "                       after a light spin, the SMs' own clock read over four windows of it: the\n"
          "                       clock seconds of that work settle at (block `sustained`;\n"
          "                       docs/COST_MODEL.md \"Settle clocks measured\")\n"
          "  --sustain-windows N  windows a sustained run is read over (1 to 64, default 4)\n"
          "  --sustain-lead SECONDS  the spin before each sustained run (0 to 10, default 0.3; 0: the run starts\n"
          "                       at the clock the run before it left)\n"
          "  --sustain-gaps MS[,MS...]  the sustained section runs, instead, each model's forward as steps (its\n"
          "                       layer count of whole layers at 256, 1,024, 2,048 and 4,096 rows), the host\n"
          "                       idle MS milliseconds after each step (0 to 1000; at most 8 values), SECONDS\n"
          "                       each: the SMs' clock over the steps against the duty cycle (kind duty;\n"
          "                       docs/COST_MODEL.md \"The clock against the duty cycle\")\n"
          "  --estimate           print the grid's estimated time (H200 ceilings) and exit; no GPU needed\n"
          "\n"
          "exit status: 0 written complete, 1 error or incomplete (the file holds what was measured),\n"
          "2 usage error or a build without the CUDA backend\n",
          f);
}

typedef struct opts {
    const char *out, *name, *root, *models[MAX_MODELS], *grid;
    int         n_models, device, quick, estimate, l2_warm, states, probe;
    double      deadline;
    long        repeats, warmup;
    double      min_rows, gemm_step, sustain, sustain_windows, sustain_lead;
    double      gaps_s[MAX_GAPS];
    int         n_gaps;
} opts;

static int parse_num(const char *flag, const char *v, double lo, double hi, double *out)
{
    char *end;
    errno = 0;
    double x = v ? strtod(v, &end) : 0;
    if (!v || errno || *end || x < lo || x > hi) {
        fprintf(stderr, "dkv profile: %s needs a number in [%g, %g], got '%s'\n", flag, lo, hi, v ? v : "");
        return 0;
    }
    *out = x;
    return 1;
}

/* --sustain-gaps MS[,MS...]: 1 to MAX_GAPS numbers in [0, 1000], into seconds */
static int parse_gaps(const char *v, opts *o)
{
    char buf[256], *save = NULL;
    if (!v || !*v || strlen(v) >= sizeof buf) {
        fprintf(stderr, "dkv profile: --sustain-gaps needs a comma-separated list of milliseconds, got '%s'\n",
                v ? v : "");
        return 0;
    }
    snprintf(buf, sizeof buf, "%s", v);
    o->n_gaps = 0;
    for (char *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        double ms;
        if (o->n_gaps == MAX_GAPS) {
            fprintf(stderr, "dkv profile: --sustain-gaps: at most %d gaps, got '%s'\n", MAX_GAPS, v);
            return 0;
        }
        if (!parse_num("--sustain-gaps", t, 0, 1000, &ms))
            return 0;
        o->gaps_s[o->n_gaps++] = ms / 1e3;
    }
    if (o->n_gaps == 0 || v[strlen(v) - 1] == ',' || v[0] == ',' || strstr(v, ",,")) {
        fprintf(stderr, "dkv profile: --sustain-gaps: an empty value in '%s'\n", v);
        return 0;
    }
    return 1;
}

/* A setting that cannot take effect is an error, not a silent default: 1 when every option given can, else 0 (said). */
static int settings_take_effect(const opts *o)
{
    if (!(o->sustain > 0) && (o->sustain_windows > 0 || o->sustain_lead >= 0 || o->n_gaps > 0)) {
        fprintf(stderr, "dkv profile: --sustain-windows, --sustain-lead and --sustain-gaps need --sustain SECONDS\n");
        return 0;
    }
    if (o->grid) {
        char g[520];
        snprintf(g, sizeof g, ",%s,", o->grid);
        bool named = strstr(g, ",sustained,") != NULL;
        if (named && !(o->sustain > 0)) {
            fprintf(stderr, "dkv profile: --grid names sustained: give --sustain SECONDS too\n");
            return 0;
        }
        if (!named && o->sustain > 0) {
            fprintf(stderr, "dkv profile: --sustain: --grid '%s' leaves the sustained section out (add sustained)\n",
                    o->grid);
            return 0;
        }
        if (o->gemm_step > 0 && !strstr(g, ",gemm,")) {
            fprintf(stderr, "dkv profile: --gemm-step changes only the gemm section: --grid '%s' leaves it out "
                            "(add gemm)\n", o->grid);
            return 0;
        }
    }
    return 1;
}

static int parse(int argc, char **argv, opts *o)
{
    memset(o, 0, sizeof *o);
    o->deadline = 480, o->repeats = 20, o->warmup = 2, o->root = NULL, o->sustain_lead = -1;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        double x;
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            usage(stdout);
            return -1;
        } else if (strcmp(a, "--quick") == 0) {
            o->quick = 1;
        } else if (strcmp(a, "--estimate") == 0) {
            o->estimate = 1;
        } else if (strcmp(a, "--states") == 0) {
            o->states = 1;
        } else if (strcmp(a, "--probe") == 0) {
            o->probe = 1;
        } else if (strcmp(a, "--l2") == 0) {
            if (!v || (strcmp(v, "flush") != 0 && strcmp(v, "warm") != 0)) {
                fprintf(stderr, "dkv profile: --l2 needs 'flush' or 'warm', got '%s'\n", v ? v : "");
                return 0;
            }
            o->l2_warm = v[0] == 'w';
            i++;
        } else if ((strcmp(a, "-o") == 0 || strcmp(a, "--name") == 0 || strcmp(a, "--grid") == 0 ||
                    strcmp(a, "--root") == 0 || strcmp(a, "--model") == 0) && v) {
            if (a[1] == 'o')
                o->out = v;
            else if (a[2] == 'n')
                o->name = v;
            else if (a[2] == 'g')
                o->grid = v;
            else if (a[2] == 'r')
                o->root = v;
            else if (o->n_models == MAX_MODELS) {
                fprintf(stderr, "dkv profile: at most %d --model\n", MAX_MODELS);
                return 0;
            } else
                o->models[o->n_models++] = v;
            i++;
        } else if (strcmp(a, "--sustain-windows") == 0 || strcmp(a, "--sustain-lead") == 0) {
            if (!parse_num(a, v, a[10] == 'w' ? 1 : 0, a[10] == 'w' ? 64 : 10,
                           a[10] == 'w' ? &o->sustain_windows : &o->sustain_lead))
                return 0;
            if (a[10] == 'w' && o->sustain_windows != (double)(int)o->sustain_windows) {
                fprintf(stderr, "dkv profile: --sustain-windows needs a whole number, got '%s'\n", v);
                return 0;
            }
            i++;
        } else if (strcmp(a, "--sustain-gaps") == 0) {
            if (!parse_gaps(v, o))
                return 0;
            i++;
        } else if (strcmp(a, "--sustain") == 0) {
            if (!parse_num(a, v, 0.2, 60, &o->sustain))
                return 0;
            i++;
        } else if (strcmp(a, "--min-rows") == 0) {
            if (!parse_num(a, v, 0, 1 << 20, &o->min_rows))
                return 0;
            i++;
        } else if (strcmp(a, "--gemm-step") == 0) {
            if (!parse_num(a, v, 8, 8192, &o->gemm_step))
                return 0;
            if (o->gemm_step != (double)(8 * (int)(o->gemm_step / 8))) {
                fprintf(stderr, "dkv profile: --gemm-step needs a multiple of 8 rows (the backend's GEMM warm-up "
                                "grid), got '%s'\n", v);
                return 0;
            }
            i++;
        } else if (strcmp(a, "--deadline") == 0 || strcmp(a, "--repeats") == 0 || strcmp(a, "--warmup") == 0 ||
                   strcmp(a, "--device") == 0) {
            double lo = a[2] == 'r' ? 3 : 0, hi = a[2] == 'd' && a[3] == 'e' && a[4] == 'a' ? 86400 : a[2] == 'r' ? 62 : 64;
            if (!parse_num(a, v, lo, hi, &x))
                return 0;
            if (a[2] == 'r')
                o->repeats = (long)x;
            else if (a[2] == 'w')
                o->warmup = (long)x;
            else if (a[4] == 'a')
                o->deadline = x;
            else
                o->device = (int)x;
            i++;
        } else {
            fprintf(stderr, "dkv profile: unknown option or missing value '%s' (dkv profile --help)\n", a);
            return 0;
        }
    }
    if (!o->out && !o->estimate) {
        fprintf(stderr, "dkv profile: -o FILE.lua is required (dkv profile --help)\n");
        return 0;
    }
    if (o->n_models == 0)
        o->models[o->n_models++] = "llada-8b";
    return settings_take_effect(o);
}

#ifdef DKV_HAVE_CUDA
/* Model presets through the sandbox's preset loader (errors name the preset and the field). */
typedef struct model_req {
    const char *name;
    dkv_model  *m;
} model_req;

static int load_model_l(lua_State *L)
{
    model_req *r = lua_touserdata(L, 1);
    lua_pushstring(L, r->name);
    dkv_lua_check_model_at(L, -1, "--model", r->m);
    return 0;
}

static int load_models(const opts *o, dkv_model *ms)
{
    dkv_lua_config c = dkv_lua_config_default();
    char found[PATH_MAX];
    if (!o->root)
        dkv_cli_find_root(found, sizeof found);
    c.root = o->root ? o->root : found;
    dkv_lua *s = NULL;
    dkv_err err = {0};
    if (dkv_lua_new(&c, &s, &err) != DKV_OK) {
        fprintf(stderr, "dkv profile: %s\n", err.msg);
        return 0;
    }
    lua_State *L = dkv_lua_state(s);
    int ok = 1;
    for (int i = 0; ok && i < o->n_models; i++) {
        model_req r = {o->models[i], &ms[i]};
        lua_pushcfunction(L, load_model_l);
        lua_pushlightuserdata(L, &r);
        if (lua_pcall(L, 1, 0, 0) != LUA_OK) {
            fprintf(stderr, "dkv profile: %s\n", lua_tostring(L, -1));
            ok = 0;
        }
    }
    dkv_lua_close(s, &err);
    return ok;
}

#include "cli/profile_write.h"
#endif

int dkv_cmd_profile(int argc, char **argv)
{
    opts o;
    int pr = parse(argc, argv, &o);
    if (pr <= 0)
        return pr < 0 ? DKV_EXIT_OK : DKV_EXIT_USAGE;
#ifndef DKV_HAVE_CUDA
    if (!o.estimate) {
        fprintf(stderr, "dkv profile: this dkv was built without the CUDA backend (scons cuda=yes on a machine "
                        "with the CUDA toolkit); nothing measured\n");
        return DKV_EXIT_USAGE;
    }
    fprintf(stderr, "dkv profile: --estimate needs a build with the CUDA backend (the grid lives in cuda/)\n");
    return DKV_EXIT_USAGE;
#else
    dkv_model ms[MAX_MODELS];
    if (!load_models(&o, ms))
        return DKV_EXIT_USAGE;
    dkv_cli_profile_args a = {.out = o.out, .name = o.name, .grid = o.grid, .models = ms, .model_names = o.models,
                              .n_models = (uint32_t)o.n_models, .quick = o.quick, .estimate = o.estimate,
                              .deadline = o.deadline, .repeats = (uint32_t)o.repeats, .warmup = (uint32_t)o.warmup,
                              .device = o.device, .l2_warm = o.l2_warm, .min_rows = (uint32_t)o.min_rows,
                              .gemm_step = (uint32_t)o.gemm_step,
                              .states = o.states != 0, .probe = o.probe != 0, .sustain_s = o.sustain,
                              .sustain_windows = (uint32_t)o.sustain_windows, .sustain_lead_s = o.sustain_lead,
                              .sustain_gaps_s = o.gaps_s, .n_sustain_gaps = (uint32_t)o.n_gaps,
                              .argc = argc, .argv = argv};
    return dkv_cli_profile_main(&a);
#endif
}
