/* l_engine_cfg.c - parsing dkv.simulate's configuration table (see l_engine_cfg.h).
 * Every getter also records the value it used into a parallel "resolved" table, which goes
 * into the run's provenance. */
#include "lua/l_engine_cfg.h"
#include "lua/l_engine_cfg_pt.h"
#include "lua/lua_modules.h"

#include <lauxlib.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "lua/lconf.h"
#include "lua/presets.h"
#include "workload/tokenizer.h"

/* The process's set of warm shapes (sim.first_use = "process"): one per Lua state, in the registry,
 * freed with it. */
#define SIM_WARM_KEY "dkv.sim.warm"           /* the registry slot holding the set */
#define SIM_WARM_META "dkv.sim.warm.meta"     /* its metatable (a key of its own: the slot above is
                                                 overwritten by the userdata) */
static int warm_gc(lua_State *L)
{
    dkv_sim_warm **w = luaL_checkudata(L, 1, SIM_WARM_META);
    dkv_sim_warm_free(*w);
    *w = NULL;
    return 0;
}

static dkv_sim_warm *process_warm(lua_State *L, const char *path)
{
    if (lua_getfield(L, LUA_REGISTRYINDEX, SIM_WARM_KEY) == LUA_TUSERDATA) {
        dkv_sim_warm *w = *(dkv_sim_warm **)lua_touserdata(L, -1);
        lua_pop(L, 1);
        return w;
    }
    lua_pop(L, 1);
    dkv_sim_warm **w = lua_newuserdatauv(L, sizeof *w, 0);
    *w = NULL;
    if (luaL_newmetatable(L, SIM_WARM_META)) {
        lua_pushcfunction(L, warm_gc);
        lua_setfield(L, -2, "__gc");
    }
    lua_setmetatable(L, -2);
    dkv_err err = {0};
    if (dkv_sim_warm_new(w, &err) != DKV_OK)
        dkv_lconf_error(L, path, "first_use", "%s", err.msg);
    lua_setfield(L, LUA_REGISTRYINDEX, SIM_WARM_KEY);
    return *w;
}

/* sim.first_use: true or "run" (default: every run starts cold), "process" (shapes an earlier run of
 * this process used are warm: runs one after another, as hw_lib's points run on the GPU), false or
 * "off" (no first-use cost).  The resolved config records the name. */
static void parse_first_use(pt *q, dkv_sim_options *so)
{
    static const char *const names[] = {"off", "run", "process", NULL};
    int v = 1;
    int t = lua_getfield(q->L, q->in, "first_use");
    if (t == LUA_TBOOLEAN) {
        v = lua_toboolean(q->L, -1) ? 1 : 0;
    } else if (t == LUA_TSTRING) {
        const char *x = lua_tostring(q->L, -1);
        for (v = 0; names[v] && strcmp(names[v], x) != 0; v++)
            ;
        if (!names[v])
            dkv_lconf_error(q->L, q->path, "first_use", "must be true, false, \"off\", \"run\" or \"process\" (got "
                            "\"%s\")", x);
    } else if (t != LUA_TNIL) {
        dkv_lconf_error(q->L, q->path, "first_use", "must be a boolean or \"off\", \"run\" or \"process\" (got a %s)",
                        lua_typename(q->L, t));
    }
    lua_pop(q->L, 1);
    so->first_use = v != 0;
    so->warm = v == 2 ? process_warm(q->L, q->path) : NULL;
    lua_pushstring(q->L, names[v]);
    lua_setfield(q->L, q->out, "first_use");
}


/* ---------------------------------------------------------------- the rest */

static const char *const dec_keys[] = {"cache", "block_len", "steps", "steps_min", "steps_max", "logits",
                                       "materialize_scores", "seed", NULL};

static void parse_decode(pt *root, dkv_lsim *s)
{
    pt p;
    pt_sub(root, "decode", &p, dec_keys);
    dkv_decode_cfg *d = &s->ec.decode;
    /* defaults: the engine's (dkv_engine_config_default, already in *d) */
    d->cache = (dkv_cache_mode)genum(&p, "cache", &dkv_cache_mode_names, d->cache);
    d->block_len = (uint32_t)gint(&p, "block_len", d->block_len, 1, U32MAX);
    d->steps_per_block = (uint32_t)gint(&p, "steps", d->steps_per_block ? d->steps_per_block : d->block_len, 1,
                                        U32MAX);
    d->steps_min = (uint32_t)gint(&p, "steps_min", d->steps_min, 0, U32MAX);
    d->steps_max = (uint32_t)gint(&p, "steps_max", d->steps_max, 0, U32MAX);
    if (d->steps_max && (d->steps_min == 0 || d->steps_min > d->steps_max))
        dkv_lconf_error(p.L, p.path, "steps_min", "must be in [1, steps_max] when steps_max is set");
    d->logits = (dkv_logit_mode)genum(&p, "logits", &dkv_logit_mode_names, d->logits);
    d->materialize_scores = gbool(&p, "materialize_scores", d->materialize_scores);
    d->seed = (uint64_t)gint(&p, "seed", (int64_t)(d->seed ? d->seed : s->seed), 0, INT64_MAX);
}

static const char *const sch_keys[] = {"kind", "max_num_seqs", "max_num_batched_tokens", "first_fit",
                                       "exact_phase", "step_host_s", "step_release_s", "handover_s", NULL};

static void parse_scheduler(pt *root, dkv_lsim *s, pt *keep)
{
    pt_sub(root, "scheduler", keep, sch_keys);
    dkv_engine_config *c = &s->ec;
    c->sched = (dkv_sched_kind)genum(keep, "kind", &dkv_sched_names, c->sched);
    c->max_num_seqs = (uint32_t)gint(keep, "max_num_seqs", c->max_num_seqs, 1, U32MAX);
    c->max_num_batched_tokens = (uint32_t)gint(keep, "max_num_batched_tokens", c->max_num_batched_tokens, 0, U32MAX);
    c->first_fit = gbool(keep, "first_fit", c->first_fit);
    c->exact_phase = gbool(keep, "exact_phase", c->exact_phase);
    /* step_host_s, handover_s not given: the simulator's model when the GPU has a measured profile
     * (its host table; dkv_step_cost.host_s / handover_s), else the default; the config records it */
    static const char *const modelled[] = {"step_host_s", "handover_s"};
    double *dst[] = {&c->step_host_s, &c->handover_s};
    for (int i = 0; i < 2; i++) {
        bool given = lua_getfield(keep->L, keep->in, modelled[i]) != LUA_TNIL;
        lua_pop(keep->L, 1);
        *dst[i] = gsec(keep, modelled[i], *dst[i]);
        if (!given && s->gpu.profile) {
            *dst[i] = -1.0;   /* the profile's host model: the resolved config says so, not 0 */
            lua_pushstring(keep->L, "profile");
            lua_setfield(keep->L, keep->out, modelled[i]);
        }
    }
    c->step_release_s = gsec(keep, "step_release_s", c->step_release_s);
}

static const char *const mem_keys[] = {"kind", "capacity_bytes", "block_tokens", "chunk_blocks", "initial_bytes",
                                       "grow", "shrink", "max_split_size", "margin", "kv_frac",
                                       "device_capacity_bytes", "malloc_s", "free_s", NULL};

static void parse_mem(pt *root, dkv_lsim *s, pt *keep)
{
    pt_sub(root, "mem", keep, mem_keys);
    pt *p = keep;
    dkv_engine_config *c = &s->ec;
    dkv_mem_options *m = &c->mem;
    m->kind = (dkv_mem_kind)genum(p, "kind", &dkv_mem_kind_names, m->kind);
    m->capacity_bytes = gbytes(p, "capacity_bytes", m->capacity_bytes);
    c->sizing.block_tokens = (uint32_t)gint(p, "block_tokens", c->sizing.block_tokens, 1, U32MAX);
    m->chunk_blocks = (uint32_t)gint(p, "chunk_blocks", m->chunk_blocks, 1, U32MAX);
    m->initial_bytes = gbytes(p, "initial_bytes", m->initial_bytes);
    m->grow = gbool(p, "grow", m->grow);
    m->shrink = gbool(p, "shrink", m->shrink);
    double mss = (double)gbytes(p, "max_split_size", m->max_split_size == UINT64_MAX ? 0 : m->max_split_size);
    m->max_split_size = mss > 0 ? (uint64_t)mss : UINT64_MAX;
    c->sizing.margin = gnum(p, "margin", c->sizing.margin, 0, 1, DKV_LCONF_HI_OPEN);
    c->sizing.kv_frac = gnum(p, "kv_frac", c->sizing.kv_frac, 0, 1, DKV_LCONF_LO_OPEN);
    c->device_capacity_bytes = gbytes(p, "device_capacity_bytes", c->device_capacity_bytes);
    m->device_malloc_s = gsec(p, "malloc_s", m->device_malloc_s);   /* < 0: resolved */
    m->device_free_s = gsec(p, "free_s", m->device_free_s);
    /* settings of another kind of manager, and sizing rules the run does not apply, cannot take effect
     * (core/mem: only the caching allocator splits blocks, only the block pool grows by chunks;
     * engine_mem.c's eng_capacities) */
    const char *kn = dkv_mem_kind_name(m->kind);
    if (m->kind != DKV_MEM_CACHING && has(p, "max_split_size"))
        dkv_lconf_error(p->L, p->path, "max_split_size", "is for kind = 'caching' (kind is '%s')", kn);
    for (const char *const *k = (const char *const[]){"chunk_blocks", "initial_bytes", "grow", "shrink", NULL}; *k; k++)
        if (m->kind != DKV_MEM_BLOCKPOOL && has(p, *k))
            dkv_lconf_error(p->L, p->path, *k, "is for kind = 'blockpool' (kind is '%s')", kn);
    if (m->kind == DKV_MEM_CACHING)
        unused_when(p, (const char *const[]){"kv_frac", "device_capacity_bytes", NULL},
                    "kind is '%s' (one allocator of capacity_bytes, else HBM - margin, holds the weights, KV and "
                    "activations)", kn);
    else if (m->capacity_bytes > 0)
        unused_when(p, (const char *const[]){"kv_frac", NULL},
                    "capacity_bytes is %s (kv_frac sizes the KV pool only when capacity_bytes is 0)", "given");
}

/* Retention settings that cannot take effect: all of them without the sparse cache, and those
 * of the other modes (the style of the unused-key errors). */
static void retention_unused(pt *ret_keep, const dkv_engine_config *c, const char *const *rk)
{
    const dkv_retention_config *r = &c->retention;
    if (c->decode.cache != DKV_CACHE_SPARSE)
        unused_when(ret_keep, rk, "decode.cache is '%s' (retention applies to cache = 'sparse')",
                    dkv_cache_mode_name(c->decode.cache));
    if (r->mode == DKV_RHO_FIXED)
        unused_when(ret_keep, (const char *const[]){"rho_min", "rho_max", "ent_a", "ent_b", "entropies", "clamp",
                                                    "measured", NULL}, "retention.mode is '%s'", "fixed");
    else if (r->mode == DKV_RHO_ENTROPY)
        unused_when(ret_keep, (const char *const[]){"callback", "clamp", NULL}, "retention.mode is '%s'", "entropy");
    else
        unused_when(ret_keep, (const char *const[]){"ent_a", "ent_b", "entropies", "measured", NULL},
                    "retention.mode is '%s'", "callback");
    if (r->mode == DKV_RHO_ENTROPY && r->measured)   /* the entropy is measured, not drawn */
        unused_when(ret_keep, (const char *const[]){"ent_a", "ent_b", "entropies", "seed", NULL},
                    "retention.measured is %s", "true");
}

/* policies.retention.entropies: an array of numbers in [0, 1] (left on the stack for the caller). */
static void read_entropies(lua_State *L, dkv_lsim *s, pt *ret_keep)
{
    dkv_retention_config *r = &s->ec.retention;
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
}

/* policies.retention (sparse cache): rho, the set, dynamic rho and its callback. */
static void parse_retention(pt *p_pol, dkv_lsim *s, pt *ret_keep)
{
    lua_State *L = p_pol->L;
    dkv_engine_config *c = &s->ec;
    static const char *const rk[] = {"rho", "set", "mode", "rho_min", "rho_max", "ent_a", "ent_b", "entropies",
                                     "callback", "seed", "clamp", "measured", NULL};
    pt_sub(p_pol, "retention", ret_keep, rk);
    dkv_retention_config *r = &c->retention;
    lua_getfield(L, ret_keep->in, "rho");
    bool rho_given = !lua_isnil(L, -1);   /* -1 given is an error, not "the preset's" */
    lua_pop(L, 1);
    r->rho = gnum(ret_keep, "rho", r->rho, -1, 1, 0); /* -1: the GPU preset's, resolved later */
    if (r->rho == 0 || (r->rho < 0 && (rho_given || r->rho != -1)))
        dkv_lconf_error(L, ret_keep->path, "rho", "must be in (0, 1] (got %g)", r->rho);
    r->set = (dkv_retain_set)genum(ret_keep, "set", &dkv_retain_set_names, r->set);
    bool has_cb = has(ret_keep, "callback");
    r->mode = (dkv_rho_mode)genum(ret_keep, "mode", &dkv_rho_mode_names, has_cb ? DKV_RHO_CALLBACK : r->mode);
    r->rho_min = gnum(ret_keep, "rho_min", r->rho_min, 0, 1, DKV_LCONF_LO_OPEN);
    r->rho_max = gnum(ret_keep, "rho_max", r->rho_max, 0, 1, DKV_LCONF_LO_OPEN);
    if (r->rho_max < r->rho_min)
        dkv_lconf_error(L, ret_keep->path, "rho_max", "must be >= rho_min");
    r->ent_a = gnum(ret_keep, "ent_a", r->ent_a, 0, HUGE_VAL, DKV_LCONF_LO_OPEN);
    r->ent_b = gnum(ret_keep, "ent_b", r->ent_b, 0, HUGE_VAL, DKV_LCONF_LO_OPEN);
    r->seed = (uint64_t)gint(ret_keep, "seed", (int64_t)(r->seed ? r->seed : s->seed), 0, INT64_MAX);
    r->clamp = gbool(ret_keep, "clamp", r->clamp);
    r->measured = gbool(ret_keep, "measured", r->measured);
    retention_unused(ret_keep, c, rk);
    read_entropies(L, s, ret_keep);
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
}

static void parse_logit(pt *p, dkv_engine_config *c, pt *logit_keep)
{
    static const char *const lk[] = {"max_num_logits", "upcast_bytes", "upcast_tensors", NULL};
    pt_sub(p, "logit", logit_keep, lk);
    c->logit.max_num_logits = (uint32_t)gint(logit_keep, "max_num_logits", c->logit.max_num_logits, 0, U32MAX);
    c->logit.upcast_bytes = (uint32_t)gint(logit_keep, "upcast_bytes", c->logit.upcast_bytes, 0, 8);
    c->logit.upcast_tensors = (uint32_t)gint(logit_keep, "upcast_tensors", c->logit.upcast_tensors, 0, 4);
}

static void parse_offload(pt *p, dkv_engine_config *c)
{
    pt q;
    static const char *const ok[] = {"mode", "t1", "t2", "lowrank_ratio", "pinned", NULL};
    pt_sub(p, "offload", &q, ok);
    c->offload.mode = (dkv_offload_mode)genum(&q, "mode", &dkv_offload_mode_names, c->offload.mode);
    c->offload.t1 = gnum(&q, "t1", c->offload.t1, 0, 1, 0);
    c->offload.t2 = gnum(&q, "t2", c->offload.t2, 0, 1, 0);
    if (c->offload.t2 < c->offload.t1)
        dkv_lconf_error(p->L, q.path, "t2", "must be >= t1 (%g < %g)", c->offload.t2, c->offload.t1);
    c->offload.lowrank_ratio = gnum(&q, "lowrank_ratio", c->offload.lowrank_ratio, 0, 1, DKV_LCONF_LO_OPEN);
    c->offload.pinned = gbool(&q, "pinned", c->offload.pinned);
    if (c->offload.mode != DKV_OFFLOAD_NONE && c->decode.cache == DKV_CACHE_NONE)   /* decode is read before */
        dkv_lconf_error(p->L, q.path, "mode", "is '%s', but decode.cache is 'none': there is no KV cache to offload "
                        "(the run would be the same without it)", dkv_names_at(&dkv_offload_mode_names, c->offload.mode));
    if (c->offload.mode == DKV_OFFLOAD_NONE)
        unused_when(&q, (const char *const[]){"t1", "t2", "lowrank_ratio", "pinned", NULL},
                    "offload.mode is '%s'", "none");
    else if (c->offload.mode == DKV_OFFLOAD_PLAIN)
        unused_when(&q, (const char *const[]){"t1", "t2", "lowrank_ratio", NULL}, "offload.mode is '%s'", "plain");
}

static void parse_routing(pt *p, dkv_engine_config *c, pt *rt_keep)
{
    static const char *const tk[] = {"enabled", "threshold_tokens", "setup_s", "block_s", "pool_step_s",
                                     "plain_step_s", NULL};
    pt_sub(p, "routing", rt_keep, tk);
    c->routing.enabled = gbool(rt_keep, "enabled", c->routing.enabled);
    c->routing.threshold_tokens = (uint32_t)gint(rt_keep, "threshold_tokens", c->routing.threshold_tokens, 0, U32MAX);
    dkv_routing_costs *k = &c->routing_costs;   /* < 0: from the preset, resolved later */
    k->setup_s = gsec(rt_keep, "setup_s", k->setup_s);
    k->block_s = gsec(rt_keep, "block_s", k->block_s);
    k->pool_step_s = gsec(rt_keep, "pool_step_s", k->pool_step_s);
    k->plain_step_s = gsec(rt_keep, "plain_step_s", k->plain_step_s);
    if (!c->routing.enabled)
        unused_when(rt_keep, (const char *const[]){"threshold_tokens", "setup_s", "block_s", "pool_step_s",
                                                   "plain_step_s", NULL},
                    "routing.enabled is %s", "false");
}

/* policies.<name> of a policy that lists its keys (policy/policy_desc.h): each key read by its
 * type into the policy's config at cfg, then the keys that cannot take effect under the chosen
 * enum value are errors, as unknown keys are. */
static void parse_policy_keys(pt *p, const dkv_policy *pol, void *cfg)
{
    const char *names[DKV_POLICY_MAX_KEYS + 1];
    size_t n = 0;
    for (const dkv_policy_key *k = pol->keys; k->name && n < DKV_POLICY_MAX_KEYS; k++)
        names[n++] = k->name;
    names[n] = NULL;
    pt q;
    pt_sub(p, pol->name, &q, names);
    for (const dkv_policy_key *k = pol->keys; k->name; k++) {
        char *f = (char *)cfg + k->offset;
        unsigned fl = (k->flags & DKV_POLICY_KEY_LO_OPEN ? DKV_LCONF_LO_OPEN : 0) |
                      (k->flags & DKV_POLICY_KEY_HI_OPEN ? DKV_LCONF_HI_OPEN : 0);
        switch (k->type) {
        case DKV_POLICY_KEY_BOOL: *(bool *)f = gbool(&q, k->name, *(bool *)f); break;
        case DKV_POLICY_KEY_UINT:
            *(uint32_t *)f = (uint32_t)gint(&q, k->name, *(uint32_t *)f, (int64_t)k->lo, (int64_t)k->hi);
            break;
        case DKV_POLICY_KEY_NUM: *(double *)f = gnum(&q, k->name, *(double *)f, k->lo, k->hi, fl); break;
        case DKV_POLICY_KEY_ENUM: *(int *)f = genum(&q, k->name, k->names, *(int *)f); break;
        }
    }
    for (const dkv_policy_key *k = pol->keys; k->name; k++) {
        const dkv_policy_key *e = pol->keys;
        while (k->used_if && e->name && strcmp(e->name, k->used_if) != 0)
            e++;
        if (!k->used_if || !e->name || e->type != DKV_POLICY_KEY_ENUM)
            continue;
        int v = *(const int *)((const char *)cfg + e->offset);
        if (!(k->used_mask & (1u << v)) && has(&q, k->name))
            dkv_lconf_error(p->L, q.path, k->name, "is not used when %s.%s is '%s'", pol->name, e->name,
                            dkv_names_at(e->names, v));
    }
}

/* policies: every policy of the engine's table (engine_policy.c), in its order; the first ones
 * have their own readers here (keys from the GPU preset, or that depend on each other), later
 * ones are read from their descriptor's keys. */
static void parse_policies(pt *root, dkv_lsim *s, pt *logit_keep, pt *ret_keep, pt *rt_keep)
{
    dkv_engine_config *c = &s->ec;
    const char *names[32];
    size_t n = 0;
    for (; n < dkv_engine_n_policies && n < 31; n++)
        names[n] = dkv_engine_policies[n].policy->name;
    names[n] = NULL;
    pt p;
    pt_sub(root, "policies", &p, names);
    for (size_t i = 0; i < dkv_engine_n_policies; i++) {
        const dkv_policy *pol = dkv_engine_policies[i].policy;
        if (pol->keys)
            parse_policy_keys(&p, pol, dkv_engine_policy_config(c, i));
        else if (pol == &dkv_logit_policy)
            parse_logit(&p, c, logit_keep);
        else if (pol == &dkv_offload_policy)
            parse_offload(&p, c);
        else if (pol == &dkv_retention_policy)
            parse_retention(&p, s, ret_keep);
        else if (pol == &dkv_routing_policy)
            parse_routing(&p, c, rt_keep);
        else
            luaL_error(root->L, "dkv.simulate: policy '%s' lists no keys (policy_desc.h)", pol->name);
    }
}

static const char *const ins_keys[] = {"n", "placement", "guaranteed_frac", "burst_frac", "weights", "gpu_share",
                                       "route", "shared_weights", NULL};

static void parse_instances(pt *root, dkv_lsim *s)
{
    lua_State *L = root->L;
    dkv_engine_config *c = &s->ec;
    pt p;
    pt_sub(root, "instances", &p, ins_keys);
    c->n_instances = (uint32_t)gint(&p, "n", c->n_instances, 1, DKV_PLACEMENT_MAX_INSTANCES);
    c->placement.mode = (dkv_placement)genum(&p, "placement", &dkv_placement_names, c->placement.mode);
    c->placement.n_instances = c->n_instances;
    c->placement.guaranteed_frac = gnum(&p, "guaranteed_frac", c->placement.guaranteed_frac, 0, 1, 0);
    c->placement.burst_frac = gnum(&p, "burst_frac", c->placement.burst_frac, 0, 1, DKV_LCONF_LO_OPEN);
    c->gpu_share = (dkv_gpu_share)genum(&p, "gpu_share", &dkv_gpu_share_names, c->gpu_share);
    c->instance_route = (dkv_instance_route)genum(&p, "route", &dkv_instance_route_names, c->instance_route);
    c->shared_weights = gbool(&p, "shared_weights", c->shared_weights);
    /* settings of several instances cannot take effect with one (engine_mem.c, engine_multi.c) */
    if (c->n_instances == 1)
        unused_when(&p, (const char *const[]){"placement", "guaranteed_frac", "burst_frac", "weights", "gpu_share",
                                              "route", "shared_weights", NULL},
                    "instances.n is %s (it is a setting of several instances)", "1");
    else if (c->placement.mode == DKV_PLACE_PARTITIONED)   /* each partition is its whole share */
        unused_when(&p, (const char *const[]){"guaranteed_frac", "burst_frac", NULL}, "instances.placement is '%s'",
                    "partitioned");
    else if (c->mem.kind != DKV_MEM_BLOCKPOOL)   /* the quotas of a shared pool are the block pool's */
        unused_when(&p, (const char *const[]){"guaranteed_frac", "weights", NULL},
                    "mem.kind is '%s' (a shared pool's quotas are the block pool's)", dkv_mem_kind_name(c->mem.kind));
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

/* dkv_engine_config_resolve on the parsed configuration; every field left to the preset (0 or < 0
 * in the table, or absent) shows its resolved value in the provenance. */
static void resolve_from_preset(lua_State *L, dkv_lsim *s, pt *root, pt *sched, pt *mem, pt *logit, pt *ret, pt *rt)
{
    dkv_engine_config *c = &s->ec;
    dkv_engine_config before = *c;
    dkv_err err = {0};
    if (dkv_engine_config_resolve(c, &err) != DKV_OK)
        dkv_lconf_error(L, "cfg", NULL, "%s", err.msg);
    if (before.max_num_batched_tokens == 0)
        set_resolved_int(sched, "max_num_batched_tokens", c->max_num_batched_tokens);
    if (before.logit.max_num_logits == 0)
        set_resolved_int(logit, "max_num_logits", c->logit.max_num_logits);
    if (before.retention.rho < 0)
        set_resolved_num(ret, "rho", c->retention.rho);
    if (before.mem.device_malloc_s < 0)
        set_resolved_num(mem, "malloc_s", c->mem.device_malloc_s);
    if (before.mem.device_free_s < 0)
        set_resolved_num(mem, "free_s", c->mem.device_free_s);
    if (before.cost_per_hour < 0)
        set_resolved_num(root, "cost_per_hour", c->cost_per_hour);
    const dkv_routing_costs *was = &before.routing_costs, *now = &c->routing_costs;
    if (was->setup_s < 0)
        set_resolved_num(rt, "setup_s", now->setup_s);
    if (was->block_s < 0)
        set_resolved_num(rt, "block_s", now->block_s);
    if (was->pool_step_s < 0)
        set_resolved_num(rt, "pool_step_s", now->pool_step_s);
    if (was->plain_step_s < 0)
        set_resolved_num(rt, "plain_step_s", now->plain_step_s);
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
    s->seed = (uint64_t)gint(&root, "seed", (int64_t)c->seed, 0, INT64_MAX);
    c->seed = s->seed;
    c->cost_per_hour = gnum(&root, "cost_per_hour", c->cost_per_hour, 0, HUGE_VAL, 0);   /* < 0: resolved */

    pt sched, mem, logit, ret, rt;
    parse_decode(&root, s);
    parse_scheduler(&root, s, &sched);
    parse_mem(&root, s, &mem);
    parse_policies(&root, s, &logit, &ret, &rt);
    parse_instances(&root, s);

    static const char *const sk[] = {"launch_overhead_s", "gemm_eff", "attn_eff", "copy_model", "first_use",
                                     "warm_gemms", "warm_compressor", "kernel_scale", NULL};
    dkv_err err = {0};
    pt q;
    pt_sub(&root, "sim", &q, sk);
    s->so = dkv_sim_options_default();
    /* not given: the preset's, per kernel class where it is calibrated (sim/sim.c); the resolved
     * config records the preset's plain value */
    lua_getfield(q.L, q.in, "launch_overhead_s");
    bool lo_given = !lua_isnil(q.L, -1);
    lua_pop(q.L, 1);
    double lo = gsec(&q, "launch_overhead_s", s->gpu.launch_overhead_s);
    s->so.launch_overhead_s = lo_given ? lo : -1.0;
    s->so.gemm_eff = gnum(&q, "gemm_eff", 1, 0, 1, DKV_LCONF_LO_OPEN);
    s->so.attn_eff = gnum(&q, "attn_eff", 1, 0, 1, DKV_LCONF_LO_OPEN);
    /* default: as the CUDA backend runs copies when the GPU is a measured one (profile), else the
     * ideal overlap of the roofline presets (docs/COST_MODEL.md, "Copies") */
    s->so.copy_model = (dkv_sim_copy_model)genum(&q, "copy_model", &dkv_sim_copy_model_names,
                                                 s->gpu.profile ? DKV_SIM_COPY_STREAM : DKV_SIM_COPY_OVERLAP);
    parse_first_use(&q, &s->so);
    s->so.warm_gemms = gbool(&q, "warm_gemms", true);
    lua_getfield(q.L, q.in, "warm_compressor");
    bool wc_given = !lua_isnil(q.L, -1);
    lua_pop(q.L, 1);
    s->so.warm_compressor = gbool(&q, "warm_compressor", true);
    if (wc_given && s->so.warm_compressor && !s->so.warm_gemms)
        dkv_lconf_error(q.L, q.path, "warm_compressor", "takes effect only with warm_gemms = true (the CUDA backend warms "
                        "its compressor with its GEMMs)");
    s->so.kernel_scale = gnum(&q, "kernel_scale", 1, 0, 10, DKV_LCONF_LO_OPEN);   /* machine calibration */

    static const char *const ck[] = {"steps", "memory_every", "kernels", "l2_kernels", "trace", NULL};
    pt_sub(&root, "record", &q, ck);
    c->record_steps = gbool(&q, "steps", c->record_steps);
    c->mem_sample_every = (uint32_t)gint(&q, "memory_every", c->mem_sample_every, 0, U32MAX);
    s->record_kernels = gbool(&q, "kernels", false);
    s->so.kernel_records = s->record_kernels;
    s->so.l2_records = gbool(&q, "l2_kernels", false);   /* dkv.simulate only: l_execute.c refuses it */
    if (s->so.l2_records && !(s->gpu.l2_bytes > 0))
        dkv_lconf_error(L, q.path, "l2_kernels", "the GPU preset '%s' has no L2 (l2_bytes): there is no replay to record",
                        s->gpu.name);
    const char *tpath = dkv_lconf_string(L, q.in, q.path, "trace", NULL, 0);
    if (tpath) {
        lua_pushstring(L, tpath);
        lua_setfield(L, q.out, "trace");
        if (dkv_lsim_trace_open(tpath, &s->trace, &err) != DKV_OK)
            dkv_lconf_error(L, q.path, "trace", "%s", err.msg);
        s->ec.trace = dkv_lsim_trace_sink(s->trace);
    }

    /* values that come from the GPU preset (dLLM-Serve's sizing rules): resolved once, by the
     * engine's own rule; the resolved table shows what the run uses */
    resolve_from_preset(L, s, &root, &sched, &mem, &logit, &ret, &rt);
    if (c->retention.mode == DKV_RHO_CALLBACK)
        c->retention.callback_ud = s; /* callback set by l_engine.c */

    dkv_lcfg_parse_workload(&root, s);
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
