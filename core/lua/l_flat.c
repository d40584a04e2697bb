/* l_flat.c - a run's configuration as flat, typed HDF5 attributes (group "config"), and the
 * record of what ran it (backend, device, driver, presets).  docs/HDF5_SCHEMA.md ("config")
 * documents the rules below; scripts/dkvresults.py reads them into pandas columns. */
#include <lauxlib.h>
#include <stdlib.h>
#include <string.h>

#include "lua/dkv_lua.h"

#define FLAT_KEY_MAX 256
#define FLAT_DEPTH_MAX 16

/* 1: the table at idx is a non-empty sequence 1..n with no other keys. */
static int is_sequence(lua_State *L, int idx)
{
    lua_Integer n = (lua_Integer)lua_rawlen(L, idx), count = 0;
    if (n == 0)
        return 0;
    lua_pushnil(L);
    while (lua_next(L, idx)) {
        lua_pop(L, 1);
        count++;
    }
    return count == n;
}

/* 1: every value of the sequence at idx is a number. */
static int all_numbers(lua_State *L, int idx)
{
    lua_Integer n = (lua_Integer)lua_rawlen(L, idx);
    for (lua_Integer i = 1; i <= n; i++) {
        int t = lua_rawgeti(L, idx, i);
        lua_pop(L, 1);
        if (t != LUA_TNUMBER)
            return 0;
    }
    return 1;
}

/* 1: the table at idx has only string keys (nested sections). */
static int only_string_keys(lua_State *L, int idx)
{
    lua_pushnil(L);
    while (lua_next(L, idx)) {
        lua_pop(L, 1);
        if (lua_type(L, -1) != LUA_TSTRING) {
            lua_pop(L, 1);
            return 0;
        }
    }
    return 1;
}

typedef struct flat {
    lua_State *L;
    dkv_h5_run *run;
    const char *obj;
    const char *name;   /* run name, for messages */
} flat;

static void check(flat *f, dkv_status st, const dkv_err *err)
{
    if (st != DKV_OK)
        luaL_error(f->L, "writing run '%s': %s", f->name, err->msg);
}

static void put_leaf(flat *f, const char *key, int idx)
{
    lua_State *L = f->L;
    dkv_err err = {0};
    switch (lua_type(L, idx)) {
    case LUA_TBOOLEAN:
        check(f, dkv_h5_attr_i64(f->run, f->obj, key, lua_toboolean(L, idx), &err), &err);
        return;
    case LUA_TNUMBER:
        if (lua_isinteger(L, idx))
            check(f, dkv_h5_attr_i64(f->run, f->obj, key, (int64_t)lua_tointeger(L, idx), &err), &err);
        else
            check(f, dkv_h5_attr_f64(f->run, f->obj, key, lua_tonumber(L, idx), &err), &err);
        return;
    case LUA_TSTRING:
        check(f, dkv_h5_attr_str(f->run, f->obj, key, lua_tostring(L, idx), &err), &err);
        return;
    case LUA_TTABLE:
        if (is_sequence(L, idx) && all_numbers(L, idx)) {
            size_t n = lua_rawlen(L, idx);
            double *v = malloc(n * sizeof *v);
            if (!v)
                luaL_error(L, "writing run '%s': out of memory", f->name);
            for (size_t i = 0; i < n; i++) {
                lua_rawgeti(L, idx, (lua_Integer)i + 1);
                v[i] = lua_tonumber(L, -1);
                lua_pop(L, 1);
            }
            dkv_status st = dkv_h5_attr_f64v(f->run, f->obj, key, v, n, &err);
            free(v);
            check(f, st, &err);
            return;
        }
        break;   /* any other table: its Lua literal */
    default:
        break;
    }
    dkv_lua_push_literal(L, idx);
    check(f, dkv_h5_attr_str(f->run, f->obj, key, lua_tostring(L, -1), &err), &err);
    lua_pop(L, 1);
}

static void walk(flat *f, int idx, const char *prefix, int depth)
{
    lua_State *L = f->L;
    luaL_checkstack(L, 4, "configuration too deep");
    lua_pushnil(L);
    while (lua_next(L, idx)) {
        int v = lua_gettop(L);
        char key[FLAT_KEY_MAX];
        const char *k = lua_tostring(L, v - 1);   /* only string keys reach here */
        if ((size_t)snprintf(key, sizeof key, "%s%s%s", prefix, *prefix ? "." : "", k) >= sizeof key)
            luaL_error(L, "writing run '%s': configuration key '%s.%s' is too long", f->name, prefix, k);
        if (lua_istable(L, v) && depth < FLAT_DEPTH_MAX && !is_sequence(L, v) && only_string_keys(L, v))
            walk(f, v, key, depth + 1);
        else
            put_leaf(f, key, v);
        lua_pop(L, 1);
    }
}

void dkv_lua_write_flat(lua_State *L, dkv_h5_run *run, const char *obj, int idx)
{
    idx = lua_absindex(L, idx);
    if (!run || !lua_istable(L, idx))
        return;
    flat f = {L, run, obj, dkv_h5_run_name(run)};
    if (!only_string_keys(L, idx)) {   /* not a configuration: keep it whole */
        put_leaf(&f, "value", idx);
        return;
    }
    walk(&f, idx, "", 0);
}

void dkv_lua_run_origin(lua_State *L, dkv_h5_run *run, const dkv_run_origin *o)
{
    if (!run)
        return;
    flat f = {L, run, NULL, dkv_h5_run_name(run)};
    dkv_err err = {0};
    const char *kv[][2] = {{"backend", o->backend},         {"device", o->device},
                           {"driver", o->driver},           {"gpu_preset", o->gpu_preset},
                           {"model_preset", o->model_preset}, {"cost_profile", o->cost_profile},
                           {"gpu_expected_error", o->gpu_expected_error}};
    for (size_t i = 0; i < sizeof kv / sizeof kv[0]; i++)
        check(&f, dkv_h5_attr_str(run, NULL, kv[i][0], kv[i][1] ? kv[i][1] : "", &err), &err);
}
