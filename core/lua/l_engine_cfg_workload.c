/* l_engine_cfg_workload.c - the workload section of dkv.simulate's configuration table
 * (cfg.workload: a synthetic kind, a trace file or a prompts file; l_engine_cfg.h). */
#include "lua/l_engine_cfg_pt.h"
#include "lua/lua_modules.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "lua/dkv_lua.h"
#include "lua/presets.h"
#include "workload/tokenizer.h"

/* ---------------------------------------------------------------- workload */

static const char *const len_keys[] = {"kind", "value", "lo", "hi", "mu", "sigma", "mean", "median", "file",
                                       "min", "max", NULL};
static const char *const len_kinds[] = {"fixed", "uniform", "lognormal", "empirical"};
static const dkv_names len_kind_names = DKV_NAMES("length kind", len_kinds);   /* the Lua table's own */

/* Keys given that the chosen kind does not read are errors: "cfg.workload.n: is not used by kind 'trace'". */
static void unused_by_kind(pt *p, const char *const *keys, const char *kind)
{
    for (; *keys; keys++)
        if (has(p, *keys))
            dkv_lconf_error(p->L, p->path, *keys, "is not used by kind '%s'", kind);
}

/* A length: a number (fixed) or {kind = ..., ...}.  *fixed tells whether it is a fixed value. */
static dkv_len_dist glen(pt *p, const char *key, uint32_t def, dkv_lsim *s, int slot, bool *fixed)
{
    lua_State *L = p->L;
    dkv_err err = {0};
    int ty = lua_getfield(L, p->in, key);
    lua_pop(L, 1);
    *fixed = true;
    if (ty == LUA_TNIL || ty == LUA_TNUMBER) {
        int64_t v = gint(p, key, def, 1, U32MAX);
        return dkv_len_fixed((uint32_t)v);
    }
    pt c;
    pt_sub(p, key, &c, len_keys);
    dkv_len_dist d;
    int kind = genum(&c, "kind", &len_kind_names, 0);
    *fixed = kind == DKV_LEN_FIXED;
    /* the keys of the other kinds (min and max clamp every kind's draws) */
    static const char *const not_fixed[] = {"lo", "hi", "mu", "sigma", "mean", "median", "file", NULL};
    static const char *const not_uniform[] = {"value", "mu", "sigma", "mean", "median", "file", NULL};
    static const char *const not_lognormal[] = {"value", "lo", "hi", "file", NULL};
    static const char *const not_empirical[] = {"value", "lo", "hi", "mu", "sigma", "mean", "median", NULL};
    const char *const *other = kind == DKV_LEN_FIXED ? not_fixed : kind == DKV_LEN_UNIFORM ? not_uniform
                               : kind == DKV_LEN_LOGNORMAL ? not_lognormal : not_empirical;
    unused_by_kind(&c, other, dkv_names_at(&len_kind_names, kind));
    switch (kind) {
    case DKV_LEN_FIXED:
        d = dkv_len_fixed((uint32_t)gint(&c, "value", def, 1, U32MAX));
        break;
    case DKV_LEN_UNIFORM: {
        int64_t lo = gint(&c, "lo", 1, 1, U32MAX), hi = gint(&c, "hi", def, 1, U32MAX);
        if (hi < lo)
            dkv_lconf_error(L, c.path, "hi", "must be >= lo (%lld < %lld)", (long long)hi, (long long)lo);
        d = dkv_len_uniform((uint32_t)lo, (uint32_t)hi);
        break;
    }
    case DKV_LEN_LOGNORMAL:
        if (has(&c, "mean") || has(&c, "median")) {
            for (const char *const *k = (const char *const[]){"mu", "sigma", NULL}; *k; k++)
                if (has(&c, *k))
                    dkv_lconf_error(L, c.path, *k, "is not used with mean and median (the lognormal is given by "
                                    "mu and sigma, or by mean and median)");
            double mean = gnum(&c, "mean", def, 0, HUGE_VAL, DKV_LCONF_LO_OPEN);
            double med = gnum(&c, "median", def, 0, HUGE_VAL, DKV_LCONF_LO_OPEN);
            if (dkv_len_lognormal_mean_median(mean, med, &d, &err) != DKV_OK)
                dkv_lconf_error(L, c.path, NULL, "%s", err.msg);
        } else {
            double mu = gnum(&c, "mu", log((double)def), -HUGE_VAL, HUGE_VAL, 0);
            double sg = gnum(&c, "sigma", 0.5, 0, HUGE_VAL, 0);
            d = dkv_len_lognormal(mu, sg);
        }
        break;
    default: {
        const char *file = dkv_lconf_string(L, c.in, c.path, "file", NULL, DKV_LCONF_REQUIRED);
        lua_pushstring(L, file);
        lua_setfield(L, c.out, "file");
        if (dkv_lengths_load(file, &s->len_tab[slot], &err) != DKV_OK)
            dkv_lconf_error(L, c.path, "file", "%s", err.msg);
        d = dkv_len_empirical(s->len_tab[slot]);
        break;
    }
    }
    d.min = (uint32_t)gint(&c, "min", 0, 0, U32MAX);
    d.max = (uint32_t)gint(&c, "max", 0, 0, U32MAX);
    if (dkv_len_dist_validate(&d, c.path, &err) != DKV_OK)
        dkv_lconf_error(L, c.path, NULL, "%s", err.msg);
    return d;
}

static const char *const wl_keys[] = {
    "kind", "n", "rate", "cv", "interval_s", "users", "think_s", "think_exponential", "stagger_first", "prompt",
    "gen", "file", "format", "lenient", "first_n", "time_scale", "rate_scale", "prompt_min", "prompt_max",
    "gen_min", "gen_max", "gen_multiple_of", "steps_min", "steps_max", "seed", "prompts", NULL};
/* workload.kind: the synthetic arrival kinds (workload.h's names, in dkv_arrival_kind order),
 * then "trace" and "prompts" */
#define WL_TRACE (dkv_arrival_names.n)
#define WL_PROMPTS (dkv_arrival_names.n + 1)
static const dkv_names *wl_kind_names(void)
{
    static const char *kinds[16];
    static dkv_names t;
    if (t.n == 0) {
        int n = dkv_arrival_names.n < 14 ? dkv_arrival_names.n : 14;
        for (int i = 0; i < n; i++)
            kinds[i] = dkv_names_at(&dkv_arrival_names, i);
        kinds[n] = "trace";
        kinds[n + 1] = "prompts";
        t = (dkv_names){"workload.kind", kinds, sizeof kinds[0], n + 2, false};
    }
    return &t;
}

/* workload.prompts = {file = PATH, gen = G, interval_s = X}: a prompts file (docs/WORKLOADS.md). */
static dkv_status read_prompts(pt *p, dkv_lsim *s, dkv_workload_opts *o, dkv_err *err)
{
    static const char *const keys[] = {"file", "gen", "interval_s", NULL};
    static const char *const unused[] = {"n", "rate", "cv", "interval_s", "users", "think_s", "think_exponential",
                                         "stagger_first", "prompt", "gen", "file", "format", "lenient",
                                         "prompt_min", NULL};
    lua_State *L = p->L;
    for (const char *const *k = unused; *k; k++)
        if (has(p, *k))
            dkv_lconf_error(L, p->path, *k, "is not used with prompts (set it inside workload.prompts, or drop it)");
    pt q;
    pt_sub(p, "prompts", &q, keys);
    const char *file = dkv_lconf_string(L, q.in, q.path, "file", NULL, DKV_LCONF_REQUIRED);
    lua_pushstring(L, file);
    lua_setfield(L, q.out, "file");
    dkv_prompts_cfg c = {0};
    c.gen = (uint32_t)gint(&q, "gen", 256, 1, U32MAX);
    c.interval_s = gnum(&q, "interval_s", 0, 0, HUGE_VAL, 0);
    c.vocab = s->model.vocab;
    dkv_tokenizer tok;
    dkv_tokenizer_kind k = DKV_TOKENIZER_NONE;
    if (s->model.tokenizer[0] && dkv_tokenizer_parse(s->model.tokenizer, &k, err) != DKV_OK)
        return DKV_EINVAL;
    if (dkv_tokenizer_init(&tok, k, s->model.vocab, s->model.mask_id, err) != DKV_OK)
        return DKV_EINVAL;
    c.tok = &tok;
    lua_pushstring(L, dkv_tokenizer_name(k));
    lua_setfield(L, q.out, "tokenizer");
    /* generations are rounded up to whole blocks unless told otherwise */
    o->gen_multiple_of = (uint32_t)gint(p, "gen_multiple_of", s->ec.decode.block_len, 0, U32MAX);
    char path[4096];
    return dkv_workload_prompts(dkv_lua_data_path(L, file, path, sizeof path), &c, o, &s->w, err);
}

void dkv_lcfg_parse_workload(pt *root, dkv_lsim *s)
{
    lua_State *L = root->L;
    pt p;
    pt_sub(root, "workload", &p, wl_keys);
    dkv_err err = {0};
    int kind = genum(&p, "kind", wl_kind_names(), has(&p, "prompts") ? WL_PROMPTS : has(&p, "file") ? WL_TRACE : 0);
    if (kind == WL_PROMPTS && !has(&p, "prompts"))
        dkv_lconf_error(L, p.path, "prompts", "kind 'prompts' needs workload.prompts = {file = ...}");
    if (kind != WL_PROMPTS && has(&p, "prompts"))
        dkv_lconf_error(L, p.path, "kind", "is '%s', but workload.prompts is set", dkv_names_at(wl_kind_names(), kind));
    dkv_workload_opts o;
    dkv_workload_opts_default(&o);
    o.first_n = (uint32_t)gint(&p, "first_n", 0, 0, U32MAX);
    o.time_scale = gnum(&p, "time_scale", 1, 0, HUGE_VAL, DKV_LCONF_LO_OPEN);
    o.rate_scale = gnum(&p, "rate_scale", 1, 0, HUGE_VAL, DKV_LCONF_LO_OPEN);
    o.prompt_min = (uint32_t)gint(&p, "prompt_min", 0, 0, U32MAX);
    o.prompt_max = (uint32_t)gint(&p, "prompt_max", 0, 0, U32MAX);
    o.gen_min = (uint32_t)gint(&p, "gen_min", 0, 0, U32MAX);
    o.gen_max = (uint32_t)gint(&p, "gen_max", 0, 0, U32MAX);
    o.steps_min = (uint32_t)gint(&p, "steps_min", 0, 0, U32MAX);
    o.steps_max = (uint32_t)gint(&p, "steps_max", 0, 0, U32MAX);
    if (o.steps_max && o.steps_min > o.steps_max)
        dkv_lconf_error(L, p.path, "steps_min", "must be <= steps_max");
    o.seed = (uint64_t)gint(&p, "seed", (int64_t)s->seed, 0, INT64_MAX);
    uint32_t B = s->ec.decode.block_len;
    dkv_status st;
    if (kind == WL_PROMPTS) {
        st = read_prompts(&p, s, &o, &err);
    } else if (kind == WL_TRACE) {
        static const char *const synth_only[] = {"n", "rate", "cv", "interval_s", "users", "think_s",
                                                 "think_exponential", "stagger_first", "prompt", "gen", NULL};
        unused_by_kind(&p, synth_only, "trace");   /* the trace gives the arrivals and lengths */
        if (has(&p, "seed") && !(o.steps_max > o.steps_min))   /* it draws steps per block, nothing else here */
            dkv_lconf_error(L, p.path, "seed", "is not used by kind 'trace' unless steps_max > steps_min (the trace "
                            "gives the arrivals and lengths; the seed only draws the steps per block)");
        const char *file = dkv_lconf_string(L, p.in, p.path, "file", NULL, DKV_LCONF_REQUIRED);
        lua_pushstring(L, file);
        lua_setfield(L, p.out, "file");
        dkv_trace_format f = (dkv_trace_format)genum(&p, "format", &dkv_trace_format_names, 0);
        o.lenient = gbool(&p, "lenient", false);
        /* trace generations are rounded up to whole blocks unless told otherwise */
        o.gen_multiple_of = (uint32_t)gint(&p, "gen_multiple_of", B, 0, U32MAX);
        char path[4096];
        st = dkv_workload_read(dkv_lua_data_path(L, file, path, sizeof path), f, &o, &s->w, &err);
    } else {
        static const char *const trace_only[] = {"file", "format", "lenient", NULL};
        unused_by_kind(&p, trace_only, dkv_names_at(wl_kind_names(), kind));
        dkv_synth_cfg c;
        dkv_synth_cfg_default(&c);
        c.arrival = (dkv_arrival_kind)kind;
        c.seed = o.seed;
        c.n_requests = (uint32_t)gint(&p, "n", 100, 1, U32MAX);
        if (kind == DKV_ARRIVAL_POISSON || kind == DKV_ARRIVAL_GAMMA)
            c.rate = gnum(&p, "rate", 1.0, 0, HUGE_VAL, DKV_LCONF_LO_OPEN);
        if (kind == DKV_ARRIVAL_GAMMA)
            c.cv = gnum(&p, "cv", 2.0, 0, HUGE_VAL, DKV_LCONF_LO_OPEN);
        if (kind == DKV_ARRIVAL_FIXED)
            c.interval_s = gnum(&p, "interval_s", 0, 0, HUGE_VAL, 0);
        if (kind == DKV_ARRIVAL_CLOSED) {
            c.n_users = (uint32_t)gint(&p, "users", 8, 1, U32MAX);
            c.think_s = gnum(&p, "think_s", 0, 0, HUGE_VAL, 0);
            c.think_exponential = gbool(&p, "think_exponential", false);
            c.stagger_first = gbool(&p, "stagger_first", false);
        }
        for (const char *const *k = (const char *const[]){"rate", "cv", "interval_s", "users", "think_s",
                                                          "think_exponential", "stagger_first", NULL}; *k; k++) {
            lua_getfield(L, p.out, *k);
            bool used = !lua_isnil(L, -1);
            lua_pop(L, 1);
            if (!used && has(&p, *k))
                dkv_lconf_error(L, p.path, *k, "is not used by kind '%s'", dkv_names_at(wl_kind_names(), kind));
        }
        bool pf, gf;
        c.prompt = glen(&p, "prompt", 512, s, 0, &pf);
        c.gen = glen(&p, "gen", 256, s, 1, &gf);
        /* a fixed generation must divide into blocks (an error before the run otherwise);
         * drawn lengths are rounded up to whole blocks by default */
        o.gen_multiple_of = (uint32_t)gint(&p, "gen_multiple_of", gf ? 0 : B, 0, U32MAX);
        st = dkv_workload_synth(&c, &o, &s->w, &err);
    }
    if (st != DKV_OK)
        dkv_lconf_error(L, p.path, NULL, "%s", err.msg);
    lua_pushstring(L, dkv_workload_source(s->w));
    lua_setfield(L, p.out, "source");
    set_resolved_int(&p, "count", (int64_t)dkv_workload_count(s->w));
    set_resolved_int(&p, "skipped", (int64_t)dkv_workload_skipped(s->w));
    uint64_t lines[DKV_WORKLOAD_SKIPPED_LINES];
    size_t nl = dkv_workload_skipped_lines(s->w, lines, DKV_WORKLOAD_SKIPPED_LINES);
    if (nl > 0) {   /* lenient reading: say how many lines were skipped, and which (provenance too) */
        char list[128] = "";
        lua_createtable(L, (int)nl, 0);
        for (size_t i = 0; i < nl; i++) {
            lua_pushinteger(L, (lua_Integer)lines[i]);
            lua_rawseti(L, -2, (lua_Integer)i + 1);
            size_t k = strlen(list);
            snprintf(list + k, sizeof list - k, "%s%llu", i ? ", " : "", (unsigned long long)lines[i]);
        }
        lua_setfield(L, p.out, "skipped_lines");
        uint64_t n = dkv_workload_skipped(s->w);
        dkv_lua_notice(L, "%s: lenient reading of %s skipped %llu malformed line%s (line%s %s%s)", p.path,
                       dkv_workload_source(s->w), (unsigned long long)n, n == 1 ? "" : "s", nl == 1 ? "" : "s", list,
                       n > nl ? ", ..." : "");
    }
    s->ec.workload = s->w;
}

