/* l_execute.c - dkv.execute(cfg [, opts]): the engine of dkv.simulate run by the CUDA backend
 * (cuda/backend.h) instead of the simulator.  The same configuration table, parsed by the same
 * code (l_engine_cfg.c), and the same result userdata (dkv.save takes it unchanged); a second
 * return value describes the device run.  docs/LUA_API.md ("dkv.execute") documents it.
 * Without a usable GPU, or in a build without CUDA, it raises
 * "dkv.execute: no CUDA device (<reason>)". */
#include <lauxlib.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "io/safetensors.h"
#include "lua/exec_follow.h"
#include "lua/exec_select.h"
#include "lua/exec_outputs.h"
#include "lua/exec_score.h"
#include "lua/l_engine_cfg.h"
#include "lua/lconf.h"
#include "lua/lua_modules.h"
#include "cpu/backend.h"
#include "util/mono.h"

#ifdef DKV_HAVE_CUDA
#include "cuda/backend.h"
#include "lua/exec_device.h"
#endif

#define LEXEC_MT "dkv.execute.state"

/* What dkv.execute owns besides the engine state: the options and the device report.  A Lua
 * userdata, so an error half-way leaks nothing. */
typedef struct lexec {
    int      device;
    int64_t  seed;             /* -1: cfg.seed */
    int      layout;           /* -1: cfg.policies.layout.layout; 0 layer-major; 1 t-major */
    uint32_t attn_streams, max_logit_rows;
    bool     class_timing;
    bool     sm_clock;         /* opts.sm_clock: each step's mean SM clock (cuda/clock.h) (false) */
    bool     clock_probe;      /* opts.clock_probe: each step's SM clock from the SMs' cycle counters (false) */
    bool     warm_gemms;       /* opts.warm_gemms: cuda/dkv_cuda.h dkv_cuda_gemm_warm at begin (true) */
    bool     warm_compressor;  /* opts.warm_compressor: with warm_gemms, the low-rank compressor's first call at begin (true) */
    uint32_t n_l2f;            /* opts.l2_flush: the CUDA backend's L2 flush diagnostic (cuda/backend.h) */
    struct { uint32_t layer, after, read; } l2f[64];
    double   staging_bytes, host_bytes;   /* < 0: automatic */
    char   **weights;
    uint32_t n_weights;
    dkv_ref_weights *rw;       /* opts.weights loaded (dkv_st_load_weights), handed to the backend */
    bool     outputs;          /* opts.outputs: collect generated tokens per request */
    bool     real_clock;       /* opts.clock = "real" (always with instances.n > 1) */
    double   t0;               /* real clock: the run's start (host clock) */
    double   start_at;         /* opts.start_at: the real clock's zero, Unix time (s); 0: the first reading */
    double   late_s;           /* start_at: how late the run was ready (first reading - start), s */
    bool     cpu;              /* opts.backend = "cpu" (cpu/backend.h) */
    char    *targets;          /* opts.targets: prompts file of each request's target bytes */
    dkv_exec_targets tg;       /* the targets read (exec_score.h) */
    dkv_exec_follow follow;    /* opts.follow: a recorded trajectory replayed (decode/follow.h) */
    bool     bf16_act;         /* opts.bf16_activations (cpu) */
    dkv_cpu_backend_report crep;
    bool     out_failed;
    dkv_exec_outputs out;
    dkv_exec_select sel;       /* opts.outputs: the sparse selections (exec_select.h) */
    dkv_err  out_err;
#ifdef DKV_HAVE_CUDA
    dkv_cuda_l2_flush_at cl2f[64];   /* l2f as the backend's options take it */
    dkv_cuda_backend_report rep;
    /* instances.n > 1: one backend and report per instance (threaded instances) */
    uint32_t k;
    dkv_backend be[DKV_MEM_MAX_INSTANCES];
    dkv_cuda_backend_report irep[DKV_MEM_MAX_INSTANCES];
#endif
} lexec;

static int lexec_gc(lua_State *L)
{
    lexec *x = luaL_checkudata(L, 1, LEXEC_MT);
    for (uint32_t i = 0; i < x->n_weights; i++)
        free(x->weights[i]);
    free(x->weights);
    x->weights = NULL;
    x->n_weights = 0;
    dkv_ref_weights_free(x->rw);
    x->rw = NULL;
    dkv_exec_outputs_free(&x->out);
    dkv_exec_select_free(&x->sel);
    free(x->targets);
    x->targets = NULL;
    dkv_exec_targets_free(&x->tg);
    dkv_exec_follow_free(&x->follow);
    dkv_cpu_backend_report_clear(&x->crep);
#ifdef DKV_HAVE_CUDA
    dkv_cuda_backend_report_clear(&x->rep);
    for (uint32_t i = 0; i < x->k; i++) {
        dkv_backend_free(&x->be[i]);
        dkv_cuda_backend_report_clear(&x->irep[i]);
    }
    x->k = 0;
#endif
    return 0;
}

static char *dup_str(lua_State *L, const char *s)
{
    size_t n = strlen(s) + 1;
    char *d = malloc(n);
    if (!d)
        luaL_error(L, "dkv.execute: out of memory");
    memcpy(d, s, n);
    return d;
}

/* The points of a layer opts.l2_flush names, in cuda/backend.h's dkv_cuda_l2_point order; what an entry reads, in
 * its dkv_cuda_l2_buf order. */
static const char *const l2_points[] = {"norm", "qkv", "rope", "attn", "o", "ffn_norm", "gate_up", "swiglu", "down",
                                        NULL};
static const char *const l2_bufs[] = {"flush", "x", "h", "qkv", "att", "gu", "ff", NULL};
#ifdef DKV_HAVE_CUDA
_Static_assert(sizeof l2_points / sizeof l2_points[0] == DKV_CUDA_L2P_N + 1, "l2_points follows dkv_cuda_l2_point");
_Static_assert(sizeof l2_bufs / sizeof l2_bufs[0] == DKV_CUDA_L2B_N + 1, "l2_bufs follows dkv_cuda_l2_buf");
#endif

/* opts.l2_flush = {{layer = L, after = "attn" [, read = "qkv"]}, ...}: the CUDA backend's L2 flush diagnostic
 * (docs/GPU.md) */
static void parse_l2_flush(lua_State *L, int idx, lexec *x)
{
    const char *p = "opts";
    static const char *const keys[] = {"layer", "after", "read", NULL};
    lua_getfield(L, idx, "l2_flush");
    if (lua_isnil(L, -1)) {
        lua_pop(L, 1);
        return;
    }
    if (x->cpu)
        dkv_lconf_error(L, p, "l2_flush", "is for backend = 'cuda' (the GPU's L2, read under Nsight Compute)");
    size_t n = lua_istable(L, -1) ? lua_rawlen(L, -1) : 0;
    if (n == 0)
        dkv_lconf_error(L, p, "l2_flush", "expected a non-empty array of {layer = L, after = POINT}, got %s",
                        lua_istable(L, -1) ? "an empty table" : luaL_typename(L, -1));
    if (n > sizeof x->l2f / sizeof x->l2f[0])
        dkv_lconf_error(L, p, "l2_flush", "%zu points: at most %zu", n, sizeof x->l2f / sizeof x->l2f[0]);
    for (size_t i = 0; i < n; i++) {
        char path[48];
        snprintf(path, sizeof path, "opts.l2_flush[%zu]", i + 1);
        lua_rawgeti(L, -1, (lua_Integer)i + 1);
        int t = lua_gettop(L);
        dkv_lconf_check_table(L, t, path);
        dkv_lconf_check_keys(L, t, path, keys);
        x->l2f[i].layer = (uint32_t)dkv_lconf_integer(L, t, path, "layer", 0, 0, 4095, DKV_LCONF_REQUIRED);
        x->l2f[i].after = (uint32_t)dkv_lconf_enum(L, t, path, "after", l2_points, 0, DKV_LCONF_REQUIRED);
        x->l2f[i].read = (uint32_t)dkv_lconf_enum(L, t, path, "read", l2_bufs, 0, 0);
        lua_pop(L, 1);
    }
    x->n_l2f = (uint32_t)n;
    lua_pop(L, 1);
}

static bool given(lua_State *L, int idx, const char *k)   /* opts[k] is not nil */
{
    bool g = lua_getfield(L, idx, k) != LUA_TNIL;
    lua_pop(L, 1);
    return g;
}

static void parse_opts(lua_State *L, int idx, lexec *x)
{
    static const char *const keys[] = {"device", "seed", "weights", "layout", "attn_streams", "max_logit_rows",
                                       "class_timing", "staging_bytes", "host_bytes", "outputs", "backend",
                                       "targets", "clock", "start_at", "follow", "bf16_activations", "warm_gemms",
                                       "warm_compressor", "sm_clock", "clock_probe", "l2_flush", NULL};
    static const char *const backends[] = {"cuda", "cpu", NULL};
    static const char *const clocks[] = {"steps", "real", NULL};
    static const char *const layouts[] = {"layer_major", "tmajor", "cfg", NULL};
    const char *p = "opts";
    x->device = 0, x->seed = -1, x->layout = -1, x->attn_streams = 4, x->max_logit_rows = 1024;
    x->class_timing = true, x->warm_gemms = true, x->warm_compressor = true, x->staging_bytes = -1, x->host_bytes = -1;
    if (lua_isnoneornil(L, idx))
        return;
    dkv_lconf_check_table(L, idx, p);
    dkv_lconf_check_keys(L, idx, p, keys);
    x->device = (int)dkv_lconf_integer(L, idx, p, "device", 0, 0, 63, 0);
    x->seed = dkv_lconf_integer(L, idx, p, "seed", -1, -1, INT64_MAX, 0);
    int lay = dkv_lconf_enum(L, idx, p, "layout", layouts, 2, 0);
    x->layout = lay == 2 ? -1 : lay;
    x->attn_streams = (uint32_t)dkv_lconf_integer(L, idx, p, "attn_streams", 4, 1, 8, 0);
    x->max_logit_rows = (uint32_t)dkv_lconf_integer(L, idx, p, "max_logit_rows", 1024, 1, 1 << 20, 0);
    x->class_timing = dkv_lconf_boolean(L, idx, p, "class_timing", true, 0);
    x->staging_bytes = dkv_lconf_number(L, idx, p, "staging_bytes", -1, -1, 0x1p64, DKV_LCONF_HI_OPEN);
    x->host_bytes = dkv_lconf_number(L, idx, p, "host_bytes", -1, -1, 0x1p64, DKV_LCONF_HI_OPEN);
    x->outputs = dkv_lconf_boolean(L, idx, p, "outputs", false, 0);
    x->real_clock = dkv_lconf_enum(L, idx, p, "clock", clocks, 0, 0) == 1;
    x->start_at = dkv_lconf_number(L, idx, p, "start_at", 0, 0, HUGE_VAL, 0);
    if (x->start_at > 0) {   /* the run waits for it: a start far ahead is a mistake (milliseconds?), not a wait */
        struct timespec rt;
        clock_gettime(CLOCK_REALTIME, &rt);
        double ahead = x->start_at - ((double)rt.tv_sec + 1e-9 * (double)rt.tv_nsec);
        if (ahead > 3600)
            dkv_lconf_error(L, p, "start_at", "is %.0f s after now, more than an hour: a Unix time in seconds "
                            "(os.time() + a few) is expected", ahead);
    }
    if (x->start_at > 0 && !x->real_clock)
        dkv_lconf_error(L, p, "start_at", "needs clock = \"real\" (the steps' clock has no start time)");
    x->cpu = dkv_lconf_enum(L, idx, p, "backend", backends, 0, 0) == 1;
    if (x->cpu && (x->real_clock || x->start_at > 0))
        dkv_lconf_error(L, p, x->start_at > 0 ? "start_at" : "clock", "is for backend = 'cuda' (the host clock of executed "
                        "GPU runs and of threaded instances)");
    if (x->cpu) {   /* the CUDA backend's device options: make_cpu reads none of them */
        static const char *const gpu_only[][2] = {
            {"device", "the CUDA device to run on"},
            {"layout", "the device arena's KV layout; the CPU backend has none to choose"},
            {"attn_streams", "the CUDA streams the attention's groups run on"},
            {"max_logit_rows", "the device's LM-head rows per launch"},
            {"class_timing", "CUDA events around every kernel class"},
            {"staging_bytes", "the device's staging buffer of offloaded blocks"},
            {"host_bytes", "the pinned host tier of offloaded blocks"}};
        for (size_t i = 0; i < sizeof gpu_only / sizeof gpu_only[0]; i++)
            if (given(L, idx, gpu_only[i][0]))
                dkv_lconf_error(L, p, gpu_only[i][0], "is for backend = 'cuda' (%s)", gpu_only[i][1]);
    }
    const char *tg = dkv_lconf_string(L, idx, p, "targets", NULL, 0);
    if (tg)
        x->targets = dup_str(L, tg);
    lua_getfield(L, idx, "follow");
    if (!lua_isnil(L, -1)) {
        if (!x->outputs)
            dkv_lconf_error(L, p, "follow", "needs outputs = true (the follower's own argmax and margins are reported "
                            "in its outputs)");
        if (tg)
            dkv_lconf_error(L, p, "follow", "and targets both decide the committed tokens: give one");
        dkv_exec_follow_read(L, -1, "opts.follow", &x->follow);
        dkv_exec_select_read(L, -1, "opts.follow", &x->follow);
    }
    lua_pop(L, 1);
    x->bf16_act = dkv_lconf_boolean(L, idx, p, "bf16_activations", false, 0);
    if (x->bf16_act && !x->cpu)
        dkv_lconf_error(L, p, "bf16_activations", "emulates the CUDA backend's bf16 activations on backend = 'cpu'");
    bool warm_given = given(L, idx, "warm_gemms"), wc_given = given(L, idx, "warm_compressor");
    x->warm_gemms = dkv_lconf_boolean(L, idx, p, "warm_gemms", true, 0);
    if (x->cpu && warm_given)
        dkv_lconf_error(L, p, "warm_gemms", "is for backend = 'cuda' (it loads cuBLASLt's kernels before the first step)");
    x->warm_compressor = dkv_lconf_boolean(L, idx, p, "warm_compressor", true, 0);
    if (x->cpu && wc_given)
        dkv_lconf_error(L, p, "warm_compressor", "is for backend = 'cuda' (it runs the low-rank compressor once at begin)");
    if (wc_given && x->warm_compressor && !x->warm_gemms)
        dkv_lconf_error(L, p, "warm_compressor", "takes effect only with warm_gemms = true (the compressor is warmed with "
                        "the GEMMs)");
    x->sm_clock = dkv_lconf_boolean(L, idx, p, "sm_clock", false, 0);
    if (x->cpu && x->sm_clock)
        dkv_lconf_error(L, p, "sm_clock", "is for backend = 'cuda' (the GPU's SM clock, read through NVML)");
    x->clock_probe = dkv_lconf_boolean(L, idx, p, "clock_probe", false, 0);
    if (x->cpu && x->clock_probe)
        dkv_lconf_error(L, p, "clock_probe", "is for backend = 'cuda' (the GPU's SMs' cycle counters)");
    parse_l2_flush(L, idx, x);
    lua_getfield(L, idx, "weights");
    if (lua_isstring(L, -1)) {
        x->weights = calloc(1, sizeof *x->weights);
        if (!x->weights)
            luaL_error(L, "dkv.execute: out of memory");
        x->weights[0] = dup_str(L, lua_tostring(L, -1));
        x->n_weights = 1;
    } else if (lua_istable(L, -1)) {
        size_t n = lua_rawlen(L, -1);
        if (n == 0)
            dkv_lconf_error(L, p, "weights", "expected a file name or a non-empty array of safetensors shards");
        x->weights = calloc(n, sizeof *x->weights);
        if (!x->weights)
            luaL_error(L, "dkv.execute: out of memory");
        for (size_t i = 0; i < n; i++) {
            lua_rawgeti(L, -1, (lua_Integer)i + 1);
            if (!lua_isstring(L, -1))
                dkv_lconf_error(L, p, "weights", "entry %zu is a %s, expected a file name", i + 1, luaL_typename(L, -1));
            x->weights[i] = dup_str(L, lua_tostring(L, -1));
            x->n_weights++;
            lua_pop(L, 1);
        }
    } else if (!lua_isnil(L, -1)) {
        dkv_lconf_error(L, p, "weights", "expected a file name or an array of them, got %s", luaL_typename(L, -1));
    }
    lua_pop(L, 1);
}

/* What no executing backend (CUDA, CPU) can take: the simulator's records and its models of host time, which an
 * executed run spends for real (a modelled second would be added to the measured ones).  Either backend's maker calls
 * it first. */
static dkv_status exec_refusals(const dkv_lsim *s, dkv_err *err)
{
    const dkv_engine_config *c = &s->ec;
    if (s->so.l2_records)
        return dkv_err_set(err, DKV_EUNSUPPORTED, "cfg.record.l2_kernels: the L2 replay's kernels are the simulator's "
                           "(dkv.simulate); an executed run records its counted bytes per class (record.kernels)");
    if (c->step_host_s > 0)   /* given (< 0: the profile's host model, which an executing backend leaves at 0) */
        return dkv_err_set(err, DKV_EINVAL, "cfg.scheduler.step_host_s = %g models host time; an executed run spends "
                           "real host time (set it to 0, or leave it out)", c->step_host_s);
    if (c->step_release_s > 0)
        return dkv_err_set(err, DKV_EINVAL, "cfg.scheduler.step_release_s = %g models host time; an executed run "
                           "spends real host time (set it to 0, or leave it out)", c->step_release_s);
    if (c->handover_s > 0)
        return dkv_err_set(err, DKV_EINVAL, "cfg.scheduler.handover_s = %g models the hand-over between instances; "
                           "executed instances hand the device over for real (set it to 0, or leave it out)",
                           c->handover_s);
    return DKV_OK;
}

/* opts.targets read once (exec_score.h), for whichever backend's options take them */
static dkv_status read_targets(dkv_lsim *s, lexec *x, dkv_err *err)
{
    if (!x->targets || x->tg.ptr)
        return DKV_OK;
    return dkv_exec_targets_read(&x->tg, x->targets, &s->model, s->w, err);
}

#ifdef DKV_HAVE_CUDA

/* on_item hook for opts.outputs: the first failure is kept and raised after the run. */
static void collect_item(void *user, const dkv_cuda_item_report *r)
{
    lexec *x = user;
    if (x->out_failed || !r->tokens_before || !r->tokens_after || !r->conf)
        return;
    if (dkv_exec_outputs_record(&x->out, r->step_index, r->request, r->prompt, r->canvas, r->block_start,
                                r->block_len, r->tokens_before, r->tokens_after, r->conf, &x->out_err) != DKV_OK ||
        (r->logits && dkv_exec_outputs_logits(&x->out, r->request, r->block_start, r->block_len, r->tokens_before,
                                              r->tokens_after, r->logits, r->vocab, &x->out_err) != DKV_OK))
        x->out_failed = true;
}

/* The backend options of one instance (cfg.instances.n instances: see make_instances). */
static dkv_status cuda_options(dkv_lsim *s, lexec *x, dkv_cuda_backend_options *po, dkv_err *err)
{
    const dkv_engine_config *c = &s->ec;
    DKV_TRY(exec_refusals(s, err));
    if (c->mem.kind != DKV_MEM_BLOCKPOOL)
        return dkv_err_set(err, DKV_EINVAL, "cfg.mem.kind is '%s': the device arena is the block pool, use "
                           "'blockpool'", dkv_mem_kind_name(c->mem.kind));
    if (c->routing.enabled)
        return dkv_err_set(err, DKV_EUNSUPPORTED, "cfg.policies.routing.enabled: the plain path (KV outside the "
                           "block pool) is not executed on the device");
    /* the pool's geometry, the decode configuration and the weights reach the backend through
     * the engine's dkv_backend_setup; only the device options and the overrides are set here */
    dkv_cuda_backend_options o = dkv_cuda_backend_options_default();
    o.device = x->device;
    if (x->staging_bytes >= 0)
        o.staging_bytes = (uint64_t)x->staging_bytes;
    if (x->host_bytes >= 0)
        o.host_bytes = (uint64_t)x->host_bytes;
    if (x->n_weights && !x->rw) {
        dkv_status st = dkv_st_load_weights((const char *const *)x->weights, x->n_weights, &s->model, o.rms_eps,
                                            &x->rw, err);
        if (st != DKV_OK)
            return st;
    }
    s->ec.weights = x->rw;
    o.layout = x->layout >= 0 ? (x->layout == 0 ? DKV_KV_LAYER_MAJOR : DKV_KV_TOKEN_MAJOR)
               : c->layout.layout == DKV_LAYOUT_LAYER_MAJOR ? DKV_KV_LAYER_MAJOR : DKV_KV_TOKEN_MAJOR;
    o.seed = x->seed >= 0 ? (uint64_t)x->seed : s->seed;
    o.max_logit_rows = x->max_logit_rows;
    o.attn_streams = x->attn_streams;
    o.class_timing = x->class_timing;
    o.warm_gemms = x->warm_gemms;
    o.warm_compressor = x->warm_compressor;
    o.sm_clock = x->sm_clock;
    o.clock_probe = x->clock_probe;
    o.kernel_records = s->record_kernels;
    for (uint32_t i = 0; i < x->n_l2f; i++)
        x->cl2f[i] = (dkv_cuda_l2_flush_at){x->l2f[i].layer, (dkv_cuda_l2_point)x->l2f[i].after,
                                            (dkv_cuda_l2_buf)x->l2f[i].read};
    o.l2_flush = x->n_l2f ? x->cl2f : NULL;
    o.n_l2_flush = x->n_l2f;
    o.report = &x->rep;
    if (x->outputs) { /* synchronises after every step: use for agreement runs, not for timing */
        o.on_item = collect_item;
        o.on_item_user = x;
        o.on_select = dkv_exec_select_hook;
        o.on_select_user = &x->sel;
    }
    if (x->follow.n) {
        o.follow = x->follow.req;
        o.n_follow = x->follow.n;
    }
    DKV_TRY(read_targets(s, x, err));   /* teacher-forced scoring (backend_score.c, decode/score.h) */
    o.targets = x->tg.ptr;
    o.n_targets = x->tg.n;
    *po = o;
    return DKV_OK;
}

/* opts.clock = "real" with one instance: the engine's clock is the host clock since the run's
 * start (host planning included, arrivals waited for), as threaded instances' clocks are. */
static void rc_nop(void *u) { (void)u; }

static double rc_clock(void *u)
{
    lexec *x = u;
    double now = dkv_mono_s();
    if (x->t0 == 0) {   /* the first reading, after the backend's begin, is the run's start ... */
        x->t0 = now;
        if (x->start_at > 0) {   /* ... or start_at (Unix time), common to separate processes */
            struct timespec rt;
            clock_gettime(CLOCK_REALTIME, &rt);
            double unix_now = (double)rt.tv_sec + 1e-9 * (double)rt.tv_nsec;
            x->t0 = now + (x->start_at - unix_now);
            x->late_s = unix_now - x->start_at;
        }
    }
    return now - x->t0;
}

static void rc_wait_until(void *u, double t)
{
    double left = t - rc_clock(u);
    if (left > 0) {
        struct timespec ts = {(time_t)left, (long)(fmod(left, 1.0) * 1e9)};
        nanosleep(&ts, NULL);
    }
}

static dkv_status run_real_clock(dkv_lsim *s, void *ud, dkv_engine_result **out, dkv_err *err)
{
    lexec *x = ud;
    dkv_engine_hooks hk = {.user = x, .lock = rc_nop, .unlock = rc_nop, .clock = rc_clock, .wait_until = rc_wait_until};
    s->ec.hooks = &hk;
    x->t0 = 0;
    dkv_status st = dkv_engine_run(&s->ec, out, err);
    s->ec.hooks = NULL;
    return st;
}

/* The engine run of cfg.instances.n > 1 instances (s->run): threaded instances over the backends
 * make_instances made. */
static dkv_status run_instances(dkv_lsim *s, void *ud, dkv_engine_result **out, dkv_err *err)
{
    lexec *x = ud;
    dkv_instances_options io = {.backends = NULL, .gpu_lock = s->ec.gpu_share == DKV_SHARE_TIMESLICE,
                                .real_clock = true};
    dkv_backend *bp[DKV_MEM_MAX_INSTANCES];
    for (uint32_t i = 0; i < x->k; i++)
        bp[i] = &x->be[i];
    io.backends = bp;
    return dkv_engine_run_instances(&s->ec, &io, out, err);
}

/* cfg.instances.n > 1: one CUDA backend per instance (its own context, streams, scratch); instance
 * 0's owns the weights (one copy with shared_weights, else each loads its own) and, with placement
 * shared, the one pool arena every instance addresses (partitioned: each its partition's). */
static dkv_status make_instances(dkv_lsim *s, lexec *x, const dkv_cuda_backend_options *base, dkv_err *err)
{
    const dkv_engine_config *c = &s->ec;
    uint32_t k = c->n_instances;
    if (x->outputs)
        return dkv_err_set(err, DKV_EUNSUPPORTED, "opts.outputs with cfg.instances.n = %u: token outputs are "
                           "collected from one instance (run instances.n = 1 for agreement checks)", k);
    if (x->targets)
        return dkv_err_set(err, DKV_EUNSUPPORTED, "opts.targets with cfg.instances.n = %u: held-out scores are "
                           "collected from one instance (run instances.n = 1 for scoring)", k);
    bool shared = c->placement.mode == DKV_PLACE_SHARED;
    for (uint32_t i = 0; i < k; i++) {   /* the pool's blocks come with each instance's setup */
        dkv_cuda_backend_options o = *base;
        o.report = &x->irep[i];
        o.arena_instances = shared ? k : 1;
        o.arena_instance = shared ? i : 0;
        o.share_from = i ? &x->be[0] : NULL;
        o.share_weights = i && c->shared_weights;
        o.share_pool = i && shared;
        dkv_status st = dkv_cuda_backend_new(&o, &x->be[i], err);
        if (st != DKV_OK) {
            dkv_err_prefix(err, "instance %u", i);
            return st;
        }
        x->k = i + 1;
    }
    s->run = run_instances;
    s->run_ud = x;
    return DKV_OK;
}

static dkv_status make_cuda(dkv_lsim *s, void *ud, dkv_backend *out, dkv_err *err)
{
    lexec *x = ud;
    dkv_cuda_backend_options o;
    dkv_status st = cuda_options(s, x, &o, err);
    if (st != DKV_OK)
        return st;
    if (s->ec.n_instances > 1) {
        memset(out, 0, sizeof *out);   /* the instances' backends live in x */
        return make_instances(s, x, &o, err);
    }
    if (x->real_clock) {
        s->run = run_real_clock;
        s->run_ud = x;
    }
    return dkv_cuda_backend_new(&o, out, err);
}

/* instances.n > 1: instance 0's report (memory series included) with the counters summed over
 * the instances, and dev.instance[i] = each one's own counters. */
static void push_instances(lua_State *L, lexec *x)
{
    dkv_cuda_backend_report *r0 = &x->irep[0];
    uint64_t free_min = r0->mem_free_min_bytes, steps = 0, items = 0;
    double gpu = 0, wall = 0;
    for (uint32_t i = 0; i < x->k; i++) {
        const dkv_cuda_backend_report *r = &x->irep[i];
        steps += r->steps, items += r->items, gpu += r->gpu_time_s, wall += r->wall_time_s;
        free_min = r->mem_free_min_bytes < free_min ? r->mem_free_min_bytes : free_min;
    }
    dkv_exec_push_device(L, r0);
    dkv_exec_set_u(L, "instances", x->k);
    dkv_exec_set_u(L, "steps", steps);
    dkv_exec_set_u(L, "items", items);
    dkv_exec_set_f(L, "gpu_time_s", gpu);
    dkv_exec_set_f(L, "wall_time_s", wall);
    dkv_exec_set_u(L, "mem_free_min_bytes", free_min);
    lua_createtable(L, (int)x->k, 0);
    for (uint32_t i = 0; i < x->k; i++) {
        const dkv_cuda_backend_report *r = &x->irep[i];
        lua_createtable(L, 0, 8);
        dkv_exec_set_u(L, "steps", r->steps);
        dkv_exec_set_u(L, "items", r->items);
        dkv_exec_set_f(L, "gpu_time_s", r->gpu_time_s);
        dkv_exec_set_f(L, "wall_time_s", r->wall_time_s);
        dkv_exec_set_u(L, "weights_bytes", r->weights_bytes);
        dkv_exec_set_u(L, "arena_bytes", r->arena_bytes);
        dkv_exec_set_u(L, "arena_blocks", r->arena_blocks);
        dkv_exec_set_u(L, "scratch_bytes", r->scratch_bytes);
        lua_rawseti(L, -2, (lua_Integer)i + 1);
    }
    lua_setfield(L, -2, "instance");
}
#endif

/* dev.outputs = {id = {...}, tokens = {{...}, ...}, conf = {{...}}, step = {{...}}, prompt = {{...}}}:
 * requests with a report, in id order; a position never unmasked has token -1, conf NaN and
 * step -1; prompt holds the prompt's token ids.  Where the backend reported its logits, also
 * argmax, margin, gap and zmax per position (exec_outputs.h; -1 / NaN where not recorded). */
static void push_outputs(lua_State *L, const dkv_exec_outputs *o)
{
    static const char *const cols[] = {"id", "tokens", "conf", "step", "prompt", "argmax", "margin", "gap", "zmax"};
    bool lg = false;
    for (uint32_t i = 0; i < o->n; i++)
        lg |= o->req[i].argmax != NULL;
    lua_createtable(L, 0, 9);
    for (int c = 0; c < (lg ? 9 : 5); c++) {
        lua_newtable(L);
        lua_Integer k = 0;
        for (uint32_t i = 0; i < o->n; i++) {
            const dkv_exec_output *r = &o->req[i];
            if (!r->tokens)
                continue;
            if (c == 0) {
                lua_pushinteger(L, r->id);
            } else if (c == 4) {
                lua_createtable(L, (int)r->prompt, 0);
                for (uint32_t p = 0; p < r->prompt; p++) {
                    lua_pushinteger(L, r->prompt_tokens[p]);
                    lua_rawseti(L, -2, (lua_Integer)p + 1);
                }
            } else {
                lua_createtable(L, (int)r->gen, 0);
                for (uint32_t g = 0; g < r->gen; g++) {
                    if (c >= 5 && !r->argmax)
                        c == 5 ? lua_pushinteger(L, -1) : lua_pushnumber(L, NAN);
                    else if (c == 5)
                        lua_pushinteger(L, r->argmax[g] == UINT32_MAX ? -1 : (lua_Integer)r->argmax[g]);
                    else if (c >= 6)
                        lua_pushnumber(L, c == 6 ? r->margin[g] : c == 7 ? r->gap[g] : r->zmax[g]);
                    else if (c == 1)
                        lua_pushinteger(L, r->tokens[g] == UINT32_MAX ? -1 : (lua_Integer)r->tokens[g]);
                    else if (c == 2)
                        lua_pushnumber(L, r->conf[g]);
                    else
                        lua_pushinteger(L, r->step[g] == UINT32_MAX ? -1 : (lua_Integer)r->step[g]);
                    lua_rawseti(L, -2, (lua_Integer)g + 1);
                }
            }
            lua_rawseti(L, -2, ++k);
        }
        lua_setfield(L, -2, cols[c]);
    }
}

/* ------------------------------------------------------------------ backend = "cpu" */

static void collect_cpu_item(void *user, const dkv_cpu_item_report *r)
{
    lexec *x = user;
    if (x->out_failed || !r->tokens_before || !r->tokens_after || !r->conf)
        return;
    if (dkv_exec_outputs_record(&x->out, r->step_index, r->request, r->prompt, r->canvas, r->block_start,
                                r->block_len, r->tokens_before, r->tokens_after, r->conf, &x->out_err) != DKV_OK ||
        (r->logits && dkv_exec_outputs_logits(&x->out, r->request, r->block_start, r->block_len, r->tokens_before,
                                              r->tokens_after, r->logits, r->vocab, &x->out_err) != DKV_OK))
        x->out_failed = true;
}

static dkv_status make_cpu(dkv_lsim *s, void *ud, dkv_backend *out, dkv_err *err)
{
    lexec *x = ud;
    const dkv_engine_config *c = &s->ec;
    DKV_TRY(exec_refusals(s, err));
    if (c->mem.kind != DKV_MEM_BLOCKPOOL)
        return dkv_err_set(err, DKV_EINVAL, "cfg.mem.kind is '%s': the CPU backend's KV lives in the block pool, use "
                           "'blockpool'", dkv_mem_kind_name(c->mem.kind));
    if (c->routing.enabled)
        return dkv_err_set(err, DKV_EUNSUPPORTED, "cfg.policies.routing.enabled: the plain path (KV outside the "
                           "block pool) is not executed on the CPU");
    dkv_cpu_backend_options o = dkv_cpu_backend_options_default();
    if (x->n_weights && !x->rw) {
        dkv_status st = dkv_st_load_weights((const char *const *)x->weights, x->n_weights, &s->model, o.rms_eps,
                                            &x->rw, err);
        if (st != DKV_OK)
            return st;
    }
    s->ec.weights = x->rw;
    o.seed = x->seed >= 0 ? (uint64_t)x->seed : s->seed;
    DKV_TRY(read_targets(s, x, err));
    o.targets = x->tg.ptr;
    o.n_targets = x->tg.n;
    o.report = &x->crep;
    o.bf16_activations = x->bf16_act;
    if (x->follow.n) {
        o.follow = x->follow.req;
        o.n_follow = x->follow.n;
    }
    if (x->outputs) {
        o.on_item = collect_cpu_item;
        o.on_item_user = x;
        o.on_select = dkv_exec_select_hook;
        o.on_select_user = &x->sel;
    }
    return dkv_cpu_backend_new(&o, out, err);
}

/* dev for backend = "cpu": what ran, and the held-out scores when targets were given. */
static void push_cpu(lua_State *L, const dkv_cpu_backend_report *r)
{
    lua_createtable(L, 0, 16);
    lua_pushstring(L, "cpu (core/ref forward, OpenBLAS sgemm, 1 thread)");
    lua_setfield(L, -2, "device");
    lua_Integer u[] = {(lua_Integer)r->steps, (lua_Integer)r->items, (lua_Integer)r->pool_bytes,
                       (lua_Integer)r->pool_blocks_touched, (lua_Integer)r->n_compress, (lua_Integer)r->n_fetch,
                       (lua_Integer)r->n_offload, (lua_Integer)r->fetch_unwritten_blocks,
                       (lua_Integer)r->n_lowrank_stored};
    const char *un[] = {"steps", "items", "pool_bytes", "pool_blocks_touched", "n_compress", "n_fetch", "n_offload",
                        "fetch_unwritten_blocks", "n_lowrank_stored"};
    for (int i = 0; i < 9; i++) {
        lua_pushinteger(L, u[i]);
        lua_setfield(L, -2, un[i]);
    }
    lua_pushnumber(L, r->cpu_time_s);
    lua_setfield(L, -2, "cpu_time_s");
    lua_pushnumber(L, r->thread_cpu_s);
    lua_setfield(L, -2, "thread_cpu_s");
    lua_pushnumber(L, r->compress_matrices ? r->compress_rel_err_sum / (double)r->compress_matrices : NAN);
    lua_setfield(L, -2, "compress_rel_err_mean");
    if (r->n_entropy) {   /* dev.entropy = {request = {...}, block = {...}, entropy = {...}, keep = {...}} */
        static const char *const ek[] = {"request", "block", "entropy", "keep"};
        lua_createtable(L, 0, 4);
        for (int c = 0; c < 4; c++) {
            lua_createtable(L, (int)r->n_entropy, 0);
            for (uint32_t i = 0; i < r->n_entropy; i++) {
                const dkv_cpu_entropy *q = &r->entropy[i];
                if (c == 2)
                    lua_pushnumber(L, q->entropy);
                else
                    lua_pushinteger(L, c == 0 ? q->request : c == 1 ? q->block : q->keep);
                lua_rawseti(L, -2, (lua_Integer)i + 1);
            }
            lua_setfield(L, -2, ek[c]);
        }
        lua_setfield(L, -2, "entropy");
    }
    if (r->score) {   /* dev.score (exec_score.h) */
        dkv_exec_push_score(L, r->score, r->n_score);
        lua_setfield(L, -2, "score");
    }
}

static int execute_cpu(lua_State *L, lexec *x)
{
    dkv_lsim_run(L, 1, "dkv.execute", make_cpu, x);   /* the result */
    if (x->out_failed || x->sel.failed)
        return luaL_error(L, "dkv.execute: outputs: %s",
                          x->sel.failed ? "out of memory (selections)" : x->out_err.msg);
    dkv_lsim_result_set_backend(L, -1, "cpu");
    dkv_lsim_result_set_device(L, -1, "cpu", "openblas");
    push_cpu(L, &x->crep);
    if (x->outputs) {
        push_outputs(L, &x->out);
        if (dkv_exec_select_push(L, &x->sel))
            lua_setfield(L, -2, "select");
        lua_setfield(L, -2, "outputs");
        dkv_lua_result_take_outputs(L, -2, &x->out);
    }
    dkv_cpu_backend_report_clear(&x->crep);
    dkv_exec_outputs_free(&x->out);
    dkv_exec_select_free(&x->sel);
    return 2;
}


/* dkv.execute(cfg [, opts]) -> result, device */
static int execute_body(lua_State *L);

static int l_execute(lua_State *L)
{
    dkv_lua_param_gate(L);
    return dkv_lua_timed(L, execute_body);
}

static int execute_body(lua_State *L)
{
    luaL_checktype(L, 1, LUA_TTABLE);
    lua_settop(L, 2);
    lexec *x = lua_newuserdatauv(L, sizeof *x, 0);   /* 3 */
    memset(x, 0, sizeof *x);
    luaL_setmetatable(L, LEXEC_MT);
    parse_opts(L, 2, x);
    /* cfg.sim is the simulator's (launch overheads, efficiencies, cold shapes, kernel_scale): an executed run
     * measures what it models, so no field of it takes effect here (and none is written as if it had) */
    if (lua_getfield(L, 1, "sim") != LUA_TNIL)
        dkv_lconf_error(L, "cfg", "sim", "is the simulator's (dkv.simulate); no field of it takes effect in an "
                        "executed run (drop it)");
    lua_pop(L, 1);
    if (x->cpu)
        return execute_cpu(L, x);
#ifndef DKV_HAVE_CUDA
    return luaL_error(L, "dkv.execute: no CUDA device (this dkv was built without CUDA: build with scons cuda=yes "
                         "where nvcc is installed)");
#else
    char desc[160];
    dkv_err err = {0};
    if (dkv_cuda_probe(desc, sizeof desc, &err) != DKV_OK) {
        if (strncmp(err.msg, "no CUDA device", 14) == 0)
            return luaL_error(L, "dkv.execute: %s", err.msg);
        return luaL_error(L, "dkv.execute: no CUDA device (%s)", err.msg);
    }
    dkv_lsim_run(L, 1, "dkv.execute", make_cuda, x);   /* 4: the result */
    if (x->out_failed || x->sel.failed)
        return luaL_error(L, "dkv.execute: outputs: %s",
                          x->sel.failed ? "out of memory (selections)" : x->out_err.msg);
    char versions[64];
    dkv_cuda_versions(versions, sizeof versions);
    dkv_lsim_result_set_device(L, -1, x->rep.device[0] ? x->rep.device : x->irep[0].device, versions);
    if (x->k > 1)
        push_instances(L, x);
    else
        dkv_exec_push_device(L, &x->rep);
    if (x->rep.score) {   /* opts.targets: dev.score, as backend = "cpu" gives it */
        dkv_exec_push_score(L, x->rep.score, x->rep.n_score);
        lua_setfield(L, -2, "score");
    }
    if (x->real_clock || x->k > 1) {
        lua_pushstring(L, "real");
        lua_setfield(L, -2, "clock");
        if (x->start_at > 0)
            dkv_exec_set_f(L, "start_late_s", x->late_s);
    }
    if (x->outputs) {
        push_outputs(L, &x->out);
        if (dkv_exec_select_push(L, &x->sel))
            lua_setfield(L, -2, "select");
        lua_setfield(L, -2, "outputs");
        dkv_lua_result_take_outputs(L, -2, &x->out);   /* dkv.save writes them into the run */
    }
    dkv_cuda_backend_report_clear(&x->rep);
    dkv_exec_outputs_free(&x->out);
    dkv_exec_select_free(&x->sel);
    return 2;
#endif
}

void dkv_lua_open_execute(lua_State *L)
{
    if (luaL_newmetatable(L, LEXEC_MT)) {
        lua_pushcfunction(L, lexec_gc);
        lua_setfield(L, -2, "__gc");
    }
    lua_pop(L, 1);
    lua_pushcfunction(L, l_execute);
    lua_setfield(L, -2, "execute");
}
