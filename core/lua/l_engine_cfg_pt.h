/* l_engine_cfg_pt.h - private to core/lua/l_engine_cfg*.c: the reader of one configuration
 * section (its input table and its resolved copy on the Lua stack) and its typed getters.  Every
 * getter records the value it used into the resolved table (the run's provenance). */
#ifndef DKV_L_ENGINE_CFG_PT_H
#define DKV_L_ENGINE_CFG_PT_H

#include "lua/l_engine_cfg.h"

#include <lauxlib.h>
#include <stdio.h>

#include "lua/lconf.h"

/* A config table being read (in) and its resolved copy (out), both on the Lua stack. */
typedef struct pt {
    lua_State *L;
    int in, out;
    char path[128];
} pt;

static inline void pt_sub(pt *p, const char *key, pt *c, const char *const *keys)
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

static inline double gnum(pt *p, const char *k, double def, double lo, double hi, unsigned fl)
{
    double v = dkv_lconf_number(p->L, p->in, p->path, k, def, lo, hi, fl);
    lua_pushnumber(p->L, v);
    lua_setfield(p->L, p->out, k);
    return v;
}

/* A time per event (a step's host work, a cudaMalloc, a routing set-up): s in [0, DKV_LCONF_EVENT_S_MAX]. */
static inline double gsec(pt *p, const char *k, double def)
{
    return gnum(p, k, def, 0, DKV_LCONF_EVENT_S_MAX, 0);
}

static inline int64_t gint(pt *p, const char *k, int64_t def, int64_t lo, int64_t hi)
{
    int64_t v = dkv_lconf_integer(p->L, p->in, p->path, k, def, lo, hi, 0);
    lua_pushinteger(p->L, v);
    lua_setfield(p->L, p->out, k);
    return v;
}

/* A byte count stored as uint64: a number in [0, 2^64), so inf and 1e20 are errors, not a cast. */
static inline uint64_t gbytes(pt *p, const char *k, uint64_t def)
{
    return (uint64_t)gnum(p, k, (double)def, 0, 0x1p64, DKV_LCONF_HI_OPEN);
}

static inline bool gbool(pt *p, const char *k, bool def)
{
    bool v = dkv_lconf_boolean(p->L, p->in, p->path, k, def, 0);
    lua_pushboolean(p->L, v);
    lua_setfield(p->L, p->out, k);
    return v;
}

/* An enum: the names are the C layer's one table of them (util/names.h). */
static inline int genum(pt *p, const char *k, const dkv_names *names, int def)
{
    int v = dkv_lconf_enum_names(p->L, p->in, p->path, k, names, def, 0);
    lua_pushstring(p->L, dkv_names_at(names, v));
    lua_setfield(p->L, p->out, k);
    return v;
}

static inline bool has(pt *p, const char *k)
{
    bool h = lua_getfield(p->L, p->in, k) != LUA_TNIL;
    lua_pop(p->L, 1);
    return h;
}

/* A setting that cannot take effect in the chosen configuration is an error, like an unknown key:
 * "cfg.policies.offload.t1: is not used when offload.mode is 'none'". */
static inline void unused_when(pt *p, const char *const *keys, const char *fmt, const char *what)
{
    char when[160];
    snprintf(when, sizeof when, fmt, what);
    for (; *keys; keys++)
        if (has(p, *keys))
            dkv_lconf_error(p->L, p->path, *keys, "is not used when %s", when);
}

static inline void set_resolved_num(pt *p, const char *k, double v)
{
    lua_pushnumber(p->L, v);
    lua_setfield(p->L, p->out, k);
}

static inline void set_resolved_int(pt *p, const char *k, int64_t v)
{
    lua_pushinteger(p->L, v);
    lua_setfield(p->L, p->out, k);
}

#define U32MAX 4294967295LL

/* l_engine_cfg_workload.c: cfg.workload into s->w and s->ec.workload. */
void dkv_lcfg_parse_workload(pt *root, dkv_lsim *s);

#endif
