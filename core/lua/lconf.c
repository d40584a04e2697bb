/* lconf.c - config-table readers that raise errors naming the field. */
#include "lua/lconf.h"

#include <lauxlib.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Every reader pushes a few values; callers deep in nested configs may have used the 20 slots
 * a C function is guaranteed, so make room first. */
#define ROOM(L) luaL_checkstack((L), 8, "config nesting")

char *dkv_lconf_path(char *buf, size_t size, const char *path, const char *key)
{
    if (path && *path && key)
        snprintf(buf, size, "%s.%s", path, key);
    else
        snprintf(buf, size, "%s", key ? key : (path ? path : ""));
    return buf;
}

int dkv_lconf_error(lua_State *L, const char *path, const char *key, const char *fmt, ...)
{
    char where[256], msg[512];
    va_list ap;
    ROOM(L);
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    dkv_lconf_path(where, sizeof where, path, key);
    return luaL_error(L, "%s: %s", where, msg);
}

size_t dkv_lconf_edit_distance(const char *a, const char *b)
{
    size_t n = strlen(a), m = strlen(b);
    size_t *row = malloc((m + 1) * sizeof *row);
    if (!row)
        return (size_t)-1;
    for (size_t j = 0; j <= m; j++)
        row[j] = j;
    for (size_t i = 1; i <= n; i++) {
        size_t diag = row[0];
        row[0] = i;
        for (size_t j = 1; j <= m; j++) {
            size_t up = row[j];
            size_t best = diag + (a[i - 1] != b[j - 1]);
            if (up + 1 < best)
                best = up + 1;
            if (row[j - 1] + 1 < best)
                best = row[j - 1] + 1;
            row[j] = best;
            diag = up;
        }
    }
    size_t d = row[m];
    free(row);
    return d;
}

const char *dkv_lconf_nearest(const char *name, const char *const *candidates)
{
    const char *best = NULL;
    size_t bd = (size_t)-1, limit = strlen(name) / 3;
    if (limit < 2)
        limit = 2;
    for (size_t i = 0; candidates && candidates[i]; i++) {
        size_t d = dkv_lconf_edit_distance(name, candidates[i]);
        if (d < bd) {
            bd = d;
            best = candidates[i];
        }
    }
    if (bd <= limit)
        return best;
    /* "kv_fraction" for "kv_frac": one name starts with the other */
    size_t n = strlen(name);
    for (size_t i = 0; n >= 3 && candidates && candidates[i]; i++) {
        size_t m = strlen(candidates[i]);
        if (m >= 3 && strncmp(name, candidates[i], n < m ? n : m) == 0)
            return candidates[i];
    }
    return NULL;
}

void dkv_lconf_check_table(lua_State *L, int t, const char *path)
{
    if (!lua_istable(L, t))
        dkv_lconf_error(L, path, NULL, "expected a table, got %s", luaL_typename(L, t));
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

void dkv_lconf_check_keys_array(lua_State *L, int t, const char *path, const char *const *allowed,
                                bool allow_array)
{
    ROOM(L);
    t = lua_absindex(L, t);
    dkv_lconf_check_table(L, t, path);
    /* Collect unknown keys first so the error is deterministic (first in sorted order). */
    const char *bad[64];
    size_t nbad = 0;
    lua_pushnil(L);
    while (lua_next(L, t)) {
        lua_pop(L, 1);
        if (lua_type(L, -1) == LUA_TNUMBER && allow_array && lua_isinteger(L, -1))
            continue;
        if (lua_type(L, -1) != LUA_TSTRING)
            dkv_lconf_error(L, path, NULL, "field keys must be strings (found a %s key)", luaL_typename(L, -1));
        const char *k = lua_tostring(L, -1);
        bool ok = false;
        for (size_t i = 0; allowed && allowed[i] && !ok; i++)
            ok = strcmp(k, allowed[i]) == 0;
        if (!ok && nbad < sizeof bad / sizeof bad[0])
            bad[nbad++] = k;  /* the key stays alive: it is a key of table t */
    }
    if (nbad == 0)
        return;
    qsort(bad, nbad, sizeof bad[0], cmp_str);
    const char *near = dkv_lconf_nearest(bad[0], allowed);
    if (near)
        dkv_lconf_error(L, path, NULL, "unknown field '%s' (did you mean '%s'?)", bad[0], near);
    luaL_Buffer b;
    luaL_buffinit(L, &b);
    for (size_t i = 0; allowed && allowed[i]; i++) {
        if (i)
            luaL_addstring(&b, ", ");
        luaL_addstring(&b, allowed[i]);
    }
    luaL_pushresult(&b);
    dkv_lconf_error(L, path, NULL, "unknown field '%s' (known fields: %s)", bad[0], lua_tostring(L, -1));
}

void dkv_lconf_check_keys(lua_State *L, int t, const char *path, const char *const *allowed)
{
    dkv_lconf_check_keys_array(L, t, path, allowed, false);
}

/* Pushes t[key]; returns false (popping it) when nil and not required. */
static bool get(lua_State *L, int t, const char *path, const char *key, unsigned flags)
{
    ROOM(L);
    t = lua_absindex(L, t);
    dkv_lconf_check_table(L, t, path);
    lua_getfield(L, t, key);
    if (lua_isnil(L, -1)) {
        lua_pop(L, 1);
        if (flags & DKV_LCONF_REQUIRED)
            dkv_lconf_error(L, path, key, "required field is missing");
        return false;
    }
    return true;
}

static void check_range(lua_State *L, const char *path, const char *key, double v, double lo, double hi,
                        unsigned flags, const char *shown)
{
    bool lo_open = flags & DKV_LCONF_LO_OPEN, hi_open = flags & DKV_LCONF_HI_OPEN;
    bool lo_bad = lo_open ? !(v > lo) : !(v >= lo);
    bool hi_bad = hi_open ? !(v < hi) : !(v <= hi);
    if (!lo_bad && !hi_bad)
        return;
    bool has_lo = lo != -HUGE_VAL, has_hi = hi != HUGE_VAL;
    if (has_lo && has_hi)
        dkv_lconf_error(L, path, key, "must be in %s%.17g, %.17g%s (got %s)", lo_open ? "(" : "[", lo, hi,
                        hi_open ? ")" : "]", shown);
    if (has_lo || lo_bad)
        dkv_lconf_error(L, path, key, "must be %s %.17g (got %s)", lo_open ? ">" : ">=", lo, shown);
    dkv_lconf_error(L, path, key, "must be %s %.17g (got %s)", hi_open ? "<" : "<=", hi, shown);
}

double dkv_lconf_number(lua_State *L, int t, const char *path, const char *key, double def, double lo,
                        double hi, unsigned flags)
{
    if (!get(L, t, path, key, flags))
        return def;
    if (lua_type(L, -1) != LUA_TNUMBER)
        dkv_lconf_error(L, path, key, "expected a number, got %s", luaL_typename(L, -1));
    double v = lua_tonumber(L, -1);
    lua_pop(L, 1);
    char shown[64];
    snprintf(shown, sizeof shown, "%.17g", v);
    if (isnan(v))
        dkv_lconf_error(L, path, key, "must be a number, got nan");
    /* no setting is infinite: HUGE_VAL as a bound means "none", and math.huge as a duration, a rate or a
     * size would reach the model as inf (a hang, NaN results) */
    if (isinf(v))
        dkv_lconf_error(L, path, key, "must be finite (got %s)", shown);
    check_range(L, path, key, v, lo, hi, flags, shown);
    return v;
}

int64_t dkv_lconf_integer(lua_State *L, int t, const char *path, const char *key, int64_t def, int64_t lo,
                          int64_t hi, unsigned flags)
{
    if (!get(L, t, path, key, flags))
        return def;
    if (lua_type(L, -1) != LUA_TNUMBER)
        dkv_lconf_error(L, path, key, "expected an integer, got %s", luaL_typename(L, -1));
    lua_Integer v;
    if (lua_isinteger(L, -1))
        v = lua_tointeger(L, -1);
    else {
        double d = lua_tonumber(L, -1);
        if (!(d == floor(d)) || !(d >= -9.2233720368547758e18 && d < 9.2233720368547758e18))
            dkv_lconf_error(L, path, key, "expected an integer, got %.17g", d);
        v = (lua_Integer)d;
    }
    lua_pop(L, 1);
    bool lo_bad = (flags & DKV_LCONF_LO_OPEN) ? !(v > lo) : !(v >= lo);
    bool hi_bad = (flags & DKV_LCONF_HI_OPEN) ? !(v < hi) : !(v <= hi);
    if (lo_bad || hi_bad) {
        if (lo != INT64_MIN && hi != INT64_MAX)
            dkv_lconf_error(L, path, key, "must be in %s%lld, %lld%s (got %lld)",
                            (flags & DKV_LCONF_LO_OPEN) ? "(" : "[", (long long)lo, (long long)hi,
                            (flags & DKV_LCONF_HI_OPEN) ? ")" : "]", (long long)v);
        if (lo_bad)
            dkv_lconf_error(L, path, key, "must be %s %lld (got %lld)", (flags & DKV_LCONF_LO_OPEN) ? ">" : ">=",
                            (long long)lo, (long long)v);
        dkv_lconf_error(L, path, key, "must be %s %lld (got %lld)", (flags & DKV_LCONF_HI_OPEN) ? "<" : "<=",
                        (long long)hi, (long long)v);
    }
    return v;
}

const char *dkv_lconf_string(lua_State *L, int t, const char *path, const char *key, const char *def,
                             unsigned flags)
{
    t = lua_absindex(L, t);
    if (!get(L, t, path, key, flags))
        return def;
    if (lua_type(L, -1) != LUA_TSTRING)
        dkv_lconf_error(L, path, key, "expected a string, got %s", luaL_typename(L, -1));
    const char *s = lua_tostring(L, -1);
    lua_pop(L, 1);  /* still referenced by the table */
    return s;
}

bool dkv_lconf_boolean(lua_State *L, int t, const char *path, const char *key, bool def, unsigned flags)
{
    if (!get(L, t, path, key, flags))
        return def;
    if (!lua_isboolean(L, -1))
        dkv_lconf_error(L, path, key, "expected a boolean, got %s", luaL_typename(L, -1));
    bool v = lua_toboolean(L, -1);
    lua_pop(L, 1);
    return v;
}

int dkv_lconf_enum(lua_State *L, int t, const char *path, const char *key, const char *const *names, int def,
                   unsigned flags)
{
    const char *s = dkv_lconf_string(L, t, path, key, NULL, flags);
    if (!s)
        return def;
    for (int i = 0; names[i]; i++)
        if (strcmp(s, names[i]) == 0)
            return i;
    luaL_Buffer b;
    luaL_buffinit(L, &b);
    for (int i = 0; names[i]; i++) {
        if (i)
            luaL_addstring(&b, ", ");
        luaL_addstring(&b, names[i]);
    }
    luaL_pushresult(&b);
    const char *near = dkv_lconf_nearest(s, names);
    if (near)
        dkv_lconf_error(L, path, key, "unknown value '%s' (expected one of: %s; did you mean '%s'?)", s,
                        lua_tostring(L, -1), near);
    return dkv_lconf_error(L, path, key, "unknown value '%s' (expected one of: %s)", s, lua_tostring(L, -1));
}

int dkv_lconf_enum_names(lua_State *L, int t, const char *path, const char *key, const dkv_names *names, int def,
                         unsigned flags)
{
    const char *list[65];
    int n = names->n < 64 ? names->n : 64;
    for (int i = 0; i < n; i++)
        list[i] = dkv_names_at(names, i);
    list[n] = NULL;
    return dkv_lconf_enum(L, t, path, key, list, def, flags);
}

bool dkv_lconf_subtable(lua_State *L, int t, const char *path, const char *key, unsigned flags)
{
    if (!get(L, t, path, key, flags))
        return false;
    if (!lua_istable(L, -1))
        dkv_lconf_error(L, path, key, "expected a table, got %s", luaL_typename(L, -1));
    return true;
}
