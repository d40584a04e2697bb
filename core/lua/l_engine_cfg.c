/* l_engine_cfg.c - parsing dkv.simulate's configuration table (see l_engine_cfg.h).
 * Every getter also records the value it used into a parallel "resolved" table, which goes
 * into the run's provenance. */
#include "lua/l_engine_cfg.h"

#include <lauxlib.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "lua/lconf.h"
#include "lua/presets.h"

/* A config table being read (in) and its resolved copy (out), both on the Lua stack. */
typedef struct pt {
    lua_State *L;
    int in, out;
    char path[128];
} pt;

static void pt_sub(pt *p, const char *key, pt *c, const char *const *keys)
{
    lua_State *L = p->L;
    luaL_checkstack(L, 16, "dkv.simulate configuration"); /* sections stay on the stack */
    c->L = L;
    dkv_lconf_path(c->path, sizeof c->path, p->path, key);
    if (!dkv_lconf_subtable(L, p->in, p->path, key, 0))
        lua_newtable(L);
    c->in = lua_gettop(L);
    dkv_lconf_check_keys(L, c->in, c->path, keys);
    lua_newtable(L);
    c->out = lua_gettop(L);
    lua_pushvalue(L, c->out);
    lua_setfield(L, p->out, key);
}

static double gnum(pt *p, const char *k, double def, double lo, double hi, unsigned fl)
{
    double v = dkv_lconf_number(p->L, p->in, p->path, k, def, lo, hi, fl);
    lua_pushnumber(p->L, v);
    lua_setfield(p->L, p->out, k);
    return v;
}

static int64_t gint(pt *p, const char *k, int64_t def, int64_t lo, int64_t hi)
{
    int64_t v = dkv_lconf_integer(p->L, p->in, p->path, k, def, lo, hi, 0);
    lua_pushinteger(p->L, v);
    lua_setfield(p->L, p->out, k);
    return v;
}

static bool gbool(pt *p, const char *k, bool def)
{
    bool v = dkv_lconf_boolean(p->L, p->in, p->path, k, def, 0);
    lua_pushboolean(p->L, v);
    lua_setfield(p->L, p->out, k);
    return v;
}

static int genum(pt *p, const char *k, const char *const *names, int def)
{
    int v = dkv_lconf_enum(p->L, p->in, p->path, k, names, def, 0);
    lua_pushstring(p->L, names[v]);
    lua_setfield(p->L, p->out, k);
    return v;
}

static bool has(pt *p, const char *k)
{
    bool h = lua_getfield(p->L, p->in, k) != LUA_TNIL;
    lua_pop(p->L, 1);
    return h;
}

static void set_resolved_num(pt *p, const char *k, double v)
{
    lua_pushnumber(p->L, v);
    lua_setfield(p->L, p->out, k);
}

static void set_resolved_int(pt *p, const char *k, int64_t v)
{
    lua_pushinteger(p->L, v);
    lua_setfield(p->L, p->out, k);
}

#define U32MAX 4294967295LL

/* ---------------------------------------------------------------- workload */

static const char *const len_keys[] = {"kind", "value", "lo", "hi", "mu", "sigma", "mean", "median", "file",
                                       "min", "max", NULL};
static const char *const len_kinds[] = {"fixed", "uniform", "lognormal", "empirical", NULL};

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
    int kind = genum(&c, "kind", len_kinds, 0);
    *fixed = kind == DKV_LEN_FIXED;
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
    "gen_min", "gen_max", "gen_multiple_of", "steps_min", "steps_max", "seed", NULL};
static const char *const wl_kinds[] = {"poisson", "gamma", "fixed", "closed", "trace", NULL};
static const char *const fmt_names[] = {"auto", "azure", "mooncake", "vidur", "burstgpt", NULL};

static void parse_workload(pt *root, dkv_lsim *s)
{
    lua_State *L = root->L;
    pt p;
    pt_sub(root, "workload", &p, wl_keys);
    dkv_err err = {0};
    int kind = genum(&p, "kind", wl_kinds, has(&p, "file") ? 4 : 0);
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
    if (kind == 4) {
        const char *file = dkv_lconf_string(L, p.in, p.path, "file", NULL, DKV_LCONF_REQUIRED);
        lua_pushstring(L, file);
        lua_setfield(L, p.out, "file");
        dkv_trace_format f = (dkv_trace_format)genum(&p, "format", fmt_names, 0);
        o.lenient = gbool(&p, "lenient", false);
        /* trace generations are rounded up to whole blocks unless told otherwise */
        o.gen_multiple_of = (uint32_t)gint(&p, "gen_multiple_of", B, 0, U32MAX);
        st = dkv_workload_read(file, f, &o, &s->w, &err);
    } else {
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
                dkv_lconf_error(L, p.path, *k, "is not used by kind '%s'", wl_kinds[kind]);
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
    s->ec.workload = s->w;
}

/* ---------------------------------------------------------------- the rest */

static const char *const dec_keys[] = {"cache", "block_len", "steps", "steps_min", "steps_max", "logits",
                                       "materialize_scores", "seed", NULL};
static const char *const cache_names[] = {"none", "prefix", "dual", "sparse", NULL};
static const char *const logit_names[] = {"block", "all", NULL};

static void parse_decode(pt *root, dkv_lsim *s)
{
    pt p;
    pt_sub(root, "decode", &p, dec_keys);
    dkv_decode_cfg *d = &s->ec.decode;
    d->cache = (dkv_cache_mode)genum(&p, "cache", cache_names, DKV_CACHE_DUAL);
    d->block_len = (uint32_t)gint(&p, "block_len", 32, 1, U32MAX);
    d->steps_per_block = (uint32_t)gint(&p, "steps", d->block_len, 1, U32MAX);
    d->steps_min = (uint32_t)gint(&p, "steps_min", 0, 0, U32MAX);
    d->steps_max = (uint32_t)gint(&p, "steps_max", 0, 0, U32MAX);
    if (d->steps_max && (d->steps_min == 0 || d->steps_min > d->steps_max))
        dkv_lconf_error(p.L, p.path, "steps_min", "must be in [1, steps_max] when steps_max is set");
    d->logits = (dkv_logit_mode)genum(&p, "logits", logit_names, DKV_LOGITS_BLOCK);
    d->materialize_scores = gbool(&p, "materialize_scores", false);
    d->seed = (uint64_t)gint(&p, "seed", (int64_t)s->seed, 0, INT64_MAX);
}

static const char *const sch_keys[] = {"kind", "max_num_seqs", "max_num_batched_tokens", "first_fit",
                                       "exact_phase", "step_host_s", NULL};
static const char *const sch_names[] = {"static", "fcfs", "phase", NULL};

static void parse_scheduler(pt *root, dkv_lsim *s, pt *keep)
{
    pt_sub(root, "scheduler", keep, sch_keys);
    s->ec.sched = (dkv_sched_kind)genum(keep, "kind", sch_names, DKV_SCHED_PHASE);
    s->ec.max_num_seqs = (uint32_t)gint(keep, "max_num_seqs", 256, 1, U32MAX);
    s->ec.max_num_batched_tokens = (uint32_t)gint(keep, "max_num_batched_tokens", 0, 0, U32MAX);
    s->ec.first_fit = gbool(keep, "first_fit", false);
    s->ec.exact_phase = gbool(keep, "exact_phase", false);
    /* not given: the simulator's modelled host time per step when the GPU has a measured profile
     * (its host table; dkv_step_cost.host_s), else 0; the config records 0 (none) or the value */
    lua_getfield(keep->L, keep->in, "step_host_s");
    bool host_given = !lua_isnil(keep->L, -1);
    lua_pop(keep->L, 1);
    s->ec.step_host_s = gnum(keep, "step_host_s", 0, 0, HUGE_VAL, 0);
    if (!host_given && s->gpu.profile)
        s->ec.step_host_s = -1.0;
}

static const char *const mem_keys[] = {"kind", "capacity_bytes", "block_tokens", "chunk_blocks", "initial_bytes",
                                       "grow", "shrink", "max_split_size", "margin", "kv_frac",
                                       "device_capacity_bytes", "malloc_s", "free_s", NULL};
static const char *const mem_names[] = {"static", "caching", "blockpool", NULL};

static void parse_mem(pt *root, dkv_lsim *s)
{
    pt p;
    pt_sub(root, "mem", &p, mem_keys);
    dkv_engine_config *c = &s->ec;
    dkv_mem_kind kind = (dkv_mem_kind)genum(&p, "kind", mem_names, DKV_MEM_BLOCKPOOL);
    c->mem = dkv_mem_options_default(kind);
    c->mem.capacity_bytes = (uint64_t)gnum(&p, "capacity_bytes", 0, 0, HUGE_VAL, 0);
    c->mem.block_bytes = 0;
    c->sizing.block_tokens = (uint32_t)gint(&p, "block_tokens", 32, 1, U32MAX);
    c->layout.block_tokens = c->sizing.block_tokens;
    c->mem.chunk_blocks = (uint32_t)gint(&p, "chunk_blocks", 64, 1, U32MAX);
    c->mem.initial_bytes = (uint64_t)gnum(&p, "initial_bytes", 0, 0, HUGE_VAL, 0);
    c->mem.grow = gbool(&p, "grow", true);
    c->mem.shrink = gbool(&p, "shrink", false);
    double mss = gnum(&p, "max_split_size", 0, 0, HUGE_VAL, 0);
    c->mem.max_split_size = mss > 0 ? (uint64_t)mss : UINT64_MAX;
    c->sizing.margin = gnum(&p, "margin", 0.10, 0, 1, DKV_LCONF_HI_OPEN);
    c->sizing.kv_frac = gnum(&p, "kv_frac", 0.7, 0, 1, DKV_LCONF_LO_OPEN);
    c->device_capacity_bytes = (uint64_t)gnum(&p, "device_capacity_bytes", 0, 0, HUGE_VAL, 0);
    c->mem.device_malloc_s = gnum(&p, "malloc_s", s->gpu.malloc_s, 0, HUGE_VAL, 0);
    c->mem.device_free_s = gnum(&p, "free_s", s->gpu.free_s, 0, HUGE_VAL, 0);
}

static const char *const pol_keys[] = {"logit", "layout", "offload", "lifecycle", "retention", "routing", NULL};

static void parse_policies(pt *root, dkv_lsim *s, pt *logit_keep, pt *ret_keep)
{
    lua_State *L = root->L;
    dkv_engine_config *c = &s->ec;
    pt p, q;
    pt_sub(root, "policies", &p, pol_keys);

    static const char *const lk[] = {"max_num_logits", "upcast_bytes", "upcast_tensors", NULL};
    pt_sub(&p, "logit", logit_keep, lk);
    c->logit.max_num_logits = (uint32_t)gint(logit_keep, "max_num_logits", 0, 0, U32MAX);
    c->logit.upcast_bytes = (uint32_t)gint(logit_keep, "upcast_bytes", 4, 0, 8);
    c->logit.upcast_tensors = (uint32_t)gint(logit_keep, "upcast_tensors", 2, 0, 4);

    static const char *const yk[] = {"layout", "reorder", NULL};
    static const char *const layouts[] = {"tmajor", "layer_major", NULL};
    static const char *const reorders[] = {"per_step", "per_block", NULL};
    pt_sub(&p, "layout", &q, yk);
    c->layout.layout = (dkv_layout)genum(&q, "layout", layouts, DKV_LAYOUT_TMAJOR);
    c->layout.reorder = (dkv_reorder)genum(&q, "reorder", reorders, DKV_REORDER_PER_STEP);

    static const char *const ok[] = {"mode", "t1", "t2", "lowrank_ratio", "pinned", NULL};
    static const char *const omodes[] = {"none", "progressive", "plain", NULL};
    pt_sub(&p, "offload", &q, ok);
    c->offload.mode = (dkv_offload_mode)genum(&q, "mode", omodes, DKV_OFFLOAD_NONE);
    c->offload.t1 = gnum(&q, "t1", 1.0 / 3.0, 0, 1, 0);
    c->offload.t2 = gnum(&q, "t2", 2.0 / 3.0, 0, 1, 0);
    if (c->offload.t2 < c->offload.t1)
        dkv_lconf_error(L, q.path, "t2", "must be >= t1 (%g < %g)", c->offload.t2, c->offload.t1);
    c->offload.lowrank_ratio = gnum(&q, "lowrank_ratio", 0.3, 0, 1, DKV_LCONF_LO_OPEN);
    c->offload.pinned = gbool(&q, "pinned", true);

    static const char *const fk[] = {"rule", "delay_steps", "delay_s", NULL};
    static const char *const rules[] = {"immediate", "deferred", NULL};
    pt_sub(&p, "lifecycle", &q, fk);
    c->lifecycle.rule = (dkv_release_rule)genum(&q, "rule", rules, DKV_RELEASE_IMMEDIATE);
    c->lifecycle.delay_steps = (uint32_t)gint(&q, "delay_steps", 4, 0, U32MAX);
    c->lifecycle.delay_s = gnum(&q, "delay_s", 0, 0, HUGE_VAL, 0);

    static const char *const rk[] = {"rho", "set", "mode", "rho_min", "rho_max", "ent_a", "ent_b", "entropies",
                                     "callback", "seed", NULL};
    static const char *const sets[] = {"per_head", "shared", NULL};
    static const char *const rmodes[] = {"fixed", "entropy", "callback", NULL};
    pt_sub(&p, "retention", ret_keep, rk);
    dkv_retention_config *r = &c->retention;
    r->rho = gnum(ret_keep, "rho", -1, -1, 1, 0); /* -1: the GPU preset's, resolved later */
    if (r->rho == 0 || (r->rho < 0 && r->rho != -1))
        dkv_lconf_error(L, ret_keep->path, "rho", "must be in (0, 1] (got %g)", r->rho);
    r->set = (dkv_retain_set)genum(ret_keep, "set", sets, DKV_RETAIN_PER_HEAD);
    bool has_cb = has(ret_keep, "callback");
    r->mode = (dkv_rho_mode)genum(ret_keep, "mode", rmodes, has_cb ? DKV_RHO_CALLBACK : DKV_RHO_FIXED);
    r->rho_min = gnum(ret_keep, "rho_min", 0.1, 0, 1, DKV_LCONF_LO_OPEN);
    r->rho_max = gnum(ret_keep, "rho_max", 0.9, 0, 1, DKV_LCONF_LO_OPEN);
    if (r->rho_max < r->rho_min)
        dkv_lconf_error(L, ret_keep->path, "rho_max", "must be >= rho_min");
    r->ent_a = gnum(ret_keep, "ent_a", 2, 0, HUGE_VAL, DKV_LCONF_LO_OPEN);
    r->ent_b = gnum(ret_keep, "ent_b", 2, 0, HUGE_VAL, DKV_LCONF_LO_OPEN);
    r->seed = (uint64_t)gint(ret_keep, "seed", (int64_t)s->seed, 0, INT64_MAX);
    if (lua_getfield(L, ret_keep->in, "entropies") != LUA_TNIL) {
        if (!lua_istable(L, -1))
            dkv_lconf_error(L, ret_keep->path, "entropies", "expected an array of numbers in [0, 1]");
        size_t n = lua_rawlen(L, -1);
        if (n == 0)
            dkv_lconf_error(L, ret_keep->path, "entropies", "must not be empty");
        s->entropies = malloc(n * sizeof *s->entropies);
        if (!s->entropies)
            luaL_error(L, "out of memory");
        for (size_t i = 0; i < n; i++) {
            lua_rawgeti(L, -1, (lua_Integer)i + 1);
            int isnum;
            double v = lua_tonumberx(L, -1, &isnum);
            if (!isnum || !(v >= 0 && v <= 1))
                dkv_lconf_error(L, ret_keep->path, "entropies", "value %zu must be a number in [0, 1]", i + 1);
            s->entropies[i] = v;
            lua_pop(L, 1);
        }
        r->ent_samples = s->entropies;
        r->n_ent_samples = n;
        lua_pushvalue(L, -1);
        lua_setfield(L, ret_keep->out, "entropies");
    }
    lua_pop(L, 1);
    if (has_cb) {
        lua_getfield(L, ret_keep->in, "callback");
        if (!lua_isfunction(L, -1))
            dkv_lconf_error(L, ret_keep->path, "callback", "expected a function(request, block, rho) -> rho, got %s",
                            luaL_typename(L, -1));
        s->cb_ref = luaL_ref(L, LUA_REGISTRYINDEX);
        lua_pushstring(L, "<function>");
        lua_setfield(L, ret_keep->out, "callback");
    } else if (r->mode == DKV_RHO_CALLBACK) {
        dkv_lconf_error(L, ret_keep->path, "callback", "mode 'callback' needs a callback function");
    }

    static const char *const tk[] = {"enabled", "threshold_tokens", "setup_s", "block_s", "pool_step_s",
                                     "plain_step_s", NULL};
    pt_sub(&p, "routing", &q, tk);
    c->routing.enabled = gbool(&q, "enabled", false);
    c->routing.threshold_tokens = (uint32_t)gint(&q, "threshold_tokens", 0, 0, U32MAX);
    c->routing_costs.setup_s = gnum(&q, "setup_s", s->gpu.malloc_s, 0, HUGE_VAL, 0);
    c->routing_costs.block_s = gnum(&q, "block_s", 1.5e-6, 0, HUGE_VAL, 0);
    c->routing_costs.pool_step_s = gnum(&q, "pool_step_s", 0, 0, HUGE_VAL, 0);
    c->routing_costs.plain_step_s = gnum(&q, "plain_step_s", s->gpu.malloc_s + s->gpu.free_s, 0, HUGE_VAL, 0);
}

static const char *const ins_keys[] = {"n", "placement", "guaranteed_frac", "burst_frac", "weights", "gpu_share",
                                       "route", "shared_weights", NULL};

static void parse_instances(pt *root, dkv_lsim *s)
{
    lua_State *L = root->L;
    dkv_engine_config *c = &s->ec;
    pt p;
    pt_sub(root, "instances", &p, ins_keys);
    static const char *const places[] = {"shared", "partitioned", NULL};
    static const char *const shares[] = {"timeslice", "spatial", NULL};
    static const char *const routes[] = {"round_robin", "least_loaded", NULL};
    c->n_instances = (uint32_t)gint(&p, "n", 1, 1, DKV_PLACEMENT_MAX_INSTANCES);
    c->placement.mode = (dkv_placement)genum(&p, "placement", places, DKV_PLACE_SHARED);
    c->placement.n_instances = c->n_instances;
    c->placement.guaranteed_frac = gnum(&p, "guaranteed_frac", 0.5, 0, 1, 0);
    c->placement.burst_frac = gnum(&p, "burst_frac", 1, 0, 1, DKV_LCONF_LO_OPEN);
    c->gpu_share = (dkv_gpu_share)genum(&p, "gpu_share", shares, DKV_SHARE_TIMESLICE);
    c->instance_route = (dkv_instance_route)genum(&p, "route", routes, DKV_IROUTE_ROUND_ROBIN);
    c->shared_weights = gbool(&p, "shared_weights", false);
    if (lua_getfield(L, p.in, "weights") != LUA_TNIL) {
        if (!lua_istable(L, -1) || lua_rawlen(L, -1) != c->n_instances)
            dkv_lconf_error(L, p.path, "weights", "expected an array of %u positive numbers (one per instance)",
                            c->n_instances);
        s->weights = malloc(c->n_instances * sizeof *s->weights);
        if (!s->weights)
            luaL_error(L, "out of memory");
        for (uint32_t i = 0; i < c->n_instances; i++) {
            lua_rawgeti(L, -1, (lua_Integer)i + 1);
            int isnum;
            double v = lua_tonumberx(L, -1, &isnum);
            if (!isnum || !(v > 0))
                dkv_lconf_error(L, p.path, "weights", "value %u must be a number > 0", i + 1);
            s->weights[i] = v;
            lua_pop(L, 1);
        }
        c->placement.weights = s->weights;
        lua_pushvalue(L, -1);
        lua_setfield(L, p.out, "weights");
    }
    lua_pop(L, 1);
}

static const char *const top_keys[] = {"model", "gpu", "workload", "decode", "scheduler", "mem", "policies",
                                       "instances", "sim", "record", "cost_per_hour", "seed", NULL};

void dkv_lsim_parse(lua_State *L, int idx, dkv_lsim *s)
{
    idx = lua_absindex(L, idx);
    luaL_checkstack(L, 64, "dkv.simulate: configuration"); /* the sub-tables stay on the stack while parsing */
    s->cb_ref = LUA_NOREF;
    s->L = L;
    dkv_lconf_check_table(L, idx, "cfg");
    dkv_lconf_check_keys(L, idx, "cfg", top_keys);
    lua_newtable(L);
    pt root = {.L = L, .in = idx, .out = lua_gettop(L), .path = "cfg"};
    int resolved = root.out;

    dkv_engine_config *c = &s->ec;
    dkv_engine_config_default(c);
    c->model = &s->model;
    c->gpu = &s->gpu;
    lua_getfield(L, idx, "model");
    if (lua_isnil(L, -1))
        dkv_lconf_error(L, "cfg", "model", "is required (a preset name such as \"llada-8b\", or a table)");
    dkv_lua_check_model_at(L, -1, "cfg.model", &s->model);
    lua_pop(L, 1);
    dkv_lua_push_model(L, &s->model);
    lua_setfield(L, resolved, "model");
    lua_getfield(L, idx, "gpu");
    if (lua_isnil(L, -1))
        dkv_lconf_error(L, "cfg", "gpu", "is required (a preset name such as \"h200\", or a table)");
    dkv_lua_check_gpu_at(L, -1, "cfg.gpu", &s->gpu);
    lua_pop(L, 1);
    dkv_lua_push_gpu(L, &s->gpu);
    lua_setfield(L, resolved, "gpu");
    s->seed = (uint64_t)gint(&root, "seed", 1, 0, INT64_MAX);
    c->seed = s->seed;
    c->cost_per_hour = gnum(&root, "cost_per_hour", s->gpu.cost_per_hour, 0, HUGE_VAL, 0);

    pt sched, logit, ret;
    parse_decode(&root, s);
    parse_scheduler(&root, s, &sched);
    parse_mem(&root, s);
    parse_policies(&root, s, &logit, &ret);
    parse_instances(&root, s);

    static const char *const sk[] = {"launch_overhead_s", "gemm_eff", "attn_eff", "copy_model", "first_use", NULL};
    static const char *const copy_models[] = {"overlap", "stream", NULL};
    dkv_err err = {0};
    pt q;
    pt_sub(&root, "sim", &q, sk);
    s->so = dkv_sim_options_default();
    /* not given: the preset's, per kernel class where it is calibrated (sim/sim.c); the resolved
     * config records the preset's plain value */
    lua_getfield(q.L, q.in, "launch_overhead_s");
    bool lo_given = !lua_isnil(q.L, -1);
    lua_pop(q.L, 1);
    double lo = gnum(&q, "launch_overhead_s", s->gpu.launch_overhead_s, 0, HUGE_VAL, 0);
    s->so.launch_overhead_s = lo_given ? lo : -1.0;
    s->so.gemm_eff = gnum(&q, "gemm_eff", 1, 0, 1, DKV_LCONF_LO_OPEN);
    s->so.attn_eff = gnum(&q, "attn_eff", 1, 0, 1, DKV_LCONF_LO_OPEN);
    s->so.copy_model = (dkv_sim_copy_model)genum(&q, "copy_model", copy_models, DKV_SIM_COPY_OVERLAP);
    s->so.first_use = gbool(&q, "first_use", true);

    static const char *const ck[] = {"steps", "memory_every", "kernels", "trace", NULL};
    pt_sub(&root, "record", &q, ck);
    c->record_steps = gbool(&q, "steps", true);
    c->mem_sample_every = (uint32_t)gint(&q, "memory_every", 1, 0, U32MAX);
    s->record_kernels = gbool(&q, "kernels", false);
    s->so.kernel_records = s->record_kernels;
    const char *tpath = dkv_lconf_string(L, q.in, q.path, "trace", NULL, 0);
    if (tpath) {
        lua_pushstring(L, tpath);
        lua_setfield(L, q.out, "trace");
        if (dkv_lsim_trace_open(tpath, &s->trace, &err) != DKV_OK)
            dkv_lconf_error(L, q.path, "trace", "%s", err.msg);
        s->ec.trace = dkv_lsim_trace_sink(s->trace);
    }

    /* values that come from the GPU preset through dLLM-Serve's sizing rules */
    dkv_sizing sz;
    if (dkv_sizing_default(&c->sizing, &s->model, &s->gpu, &sz, &err) != DKV_OK)
        dkv_lconf_error(L, "cfg", NULL, "%s", err.msg);
    if (c->max_num_batched_tokens == 0)
        set_resolved_int(&sched, "max_num_batched_tokens", sz.max_num_batched_tokens);
    if (c->logit.max_num_logits == 0) {
        c->logit.max_num_logits = sz.max_num_logits;
        set_resolved_int(&logit, "max_num_logits", sz.max_num_logits);
    }
    if (c->retention.rho < 0) {
        c->retention.rho = sz.retention;
        set_resolved_num(&ret, "rho", sz.retention);
    }
    if (c->retention.mode == DKV_RHO_CALLBACK)
        c->retention.callback_ud = s; /* callback set by l_engine.c */

    parse_workload(&root, s);
    lua_settop(L, resolved);
}

void dkv_lsim_free(dkv_lsim *s)
{
    dkv_lsim_trace_close(s->trace, NULL);
    s->trace = NULL;
    s->ec.trace = NULL;
    dkv_workload_free(s->w);
    s->w = NULL;
    for (int i = 0; i < 2; i++) {
        dkv_lengths_free(s->len_tab[i]);
        s->len_tab[i] = NULL;
    }
    free(s->entropies);
    s->entropies = NULL;
    free(s->weights);
    s->weights = NULL;
    if (s->L && s->cb_ref != LUA_NOREF && s->cb_ref != LUA_REFNIL) {
        luaL_unref(s->L, LUA_REGISTRYINDEX, s->cb_ref);
        s->cb_ref = LUA_NOREF;
    }
}
