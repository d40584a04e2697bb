/* l_param.c - declared parameters: dkv.param(name, default, help), the dkv.params table that
 * records what a script reads, the check that every -D name is one the script knows (exit 2
 * with "did you mean"), and the listing behind `dkv run SCRIPT --help`. */
#include "lua/dkv_lua.h"
#include "lua/lua_modules.h"

#include <lauxlib.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char REG_KEY = 'P';   /* registry[&REG_KEY] = {values, declared, known, given, passed} */

size_t dkv_lua__params(lua_State *L, const char *const **out);

/* Pushes the parameter state table. */
static void push_state(lua_State *L)
{
    lua_rawgetp(L, LUA_REGISTRYINDEX, &REG_KEY);
}

/* A -D value as a Lua value: numbers, true/false, else the string (as dkv.params always did). */
static void push_converted(lua_State *L, const char *v)
{
    if (strcmp(v, "true") == 0)
        lua_pushboolean(L, 1);
    else if (strcmp(v, "false") == 0)
        lua_pushboolean(L, 0);
    else if (*v == '\0' || lua_stringtonumber(L, v) == 0)
        lua_pushstring(L, v);
}

static void mark_known(lua_State *L, int state, int name_idx)
{
    lua_getfield(L, state, "known");
    lua_pushvalue(L, name_idx);
    lua_pushboolean(L, 1);
    lua_rawset(L, -3);
    lua_pop(L, 1);
}

/* Raises a usage error (exit 2): a plain message, no position, not catchable by pcall. */
static int usage_error(lua_State *L, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    lua_pushvfstring(L, fmt, ap);
    va_end(ap);
    dkv_lua__stop_usage(L);
    return lua_error(L);
}

static size_t edit_distance(const char *a, const char *b)
{
    size_t n = strlen(a), m = strlen(b);
    if (n > 64 || m > 64)
        return 99;
    size_t row[65];
    for (size_t j = 0; j <= m; j++)
        row[j] = j;
    for (size_t i = 1; i <= n; i++) {
        size_t diag = row[0];
        row[0] = i;
        for (size_t j = 1; j <= m; j++) {
            size_t up = row[j];
            size_t best = diag + (a[i - 1] != b[j - 1]);
            if (row[j] + 1 < best)
                best = row[j] + 1;
            if (row[j - 1] + 1 < best)
                best = row[j - 1] + 1;
            row[j] = best;
            diag = up;
        }
    }
    return row[m];
}

/* A growing C string (the Lua stack is busy while these messages are built). */
typedef struct sbuf {
    char *p;
    size_t n, cap;
} sbuf;

static void sb_add(sbuf *b, const char *s)
{
    size_t k = strlen(s);
    if (b->n + k + 1 > b->cap) {
        size_t cap = (b->n + k + 1) * 2;
        char *q = realloc(b->p, cap);
        if (!q)
            return;
        b->p = q;
        b->cap = cap;
    }
    memcpy(b->p + b->n, s, k + 1);
    b->n += k;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* The known names into list ("a, b, c": declared ones in order, then the others sorted); the
 * closest to near (within 1-2 edits) into best. */
static void known_names(lua_State *L, int state, const char *near, sbuf *list, char *best, size_t best_n)
{
    size_t best_d = 99, nnames = 0, cap = 0;
    const char **names = NULL;
    best[0] = '\0';
    int top = lua_gettop(L);
    lua_getfield(L, state, "declared");
    int declared = lua_gettop(L);
    lua_newtable(L);
    int seen = lua_gettop(L);
    lua_Integer nd = luaL_len(L, declared);
    for (lua_Integer i = 1; i <= nd + 1; i++) {
        if (i <= nd) {
            lua_rawgeti(L, declared, i);
            lua_getfield(L, -1, "name");
            lua_remove(L, -2);
        } else {   /* the names only read, sorted */
            lua_getfield(L, state, "known");
            lua_pushnil(L);
            while (lua_next(L, -2)) {
                lua_pop(L, 1);
                lua_pushvalue(L, -1);
                lua_rawget(L, seen);
                int dup = lua_toboolean(L, -1);
                lua_pop(L, 1);
                if (dup || lua_type(L, -1) != LUA_TSTRING)
                    continue;
                if (nnames == cap) {
                    cap = cap ? 2 * cap : 16;
                    const char **q = realloc(names, cap * sizeof *q);
                    if (!q)
                        break;
                    names = q;
                }
                names[nnames++] = lua_tostring(L, -1);   /* anchored in the known table */
            }
            if (names)
                qsort(names, nnames, sizeof *names, cmp_str);
            lua_pushnil(L);
        }
        for (size_t k = 0; k < (i <= nd ? 1 : nnames); k++) {
            const char *nm = i <= nd ? lua_tostring(L, -1) : names[k];
            if (!nm)
                continue;
            if (i <= nd) {
                lua_pushvalue(L, -1);
                lua_pushboolean(L, 1);
                lua_rawset(L, seen);
            }
            size_t d = edit_distance(near, nm);
            if (d < best_d && d <= (strlen(nm) <= 3 ? 1u : 2u)) {
                best_d = d;
                snprintf(best, best_n, "%s", nm);
            }
            if (list->n)
                sb_add(list, ", ");
            sb_add(list, nm);
        }
        lua_pop(L, 1);
    }
    free(names);
    if (!list->n)
        sb_add(list, "(none)");
    lua_settop(L, top);
}

/* Every -D name must be known (declared with dkv.param or read from dkv.params). */
static int check_given(lua_State *L)
{
    push_state(L);
    int state = lua_gettop(L);
    lua_getfield(L, state, "passed");
    int passed = lua_toboolean(L, -1);
    lua_settop(L, state);
    if (passed) {
        lua_pop(L, 1);
        return 0;
    }
    const char *const *p;
    size_t n = dkv_lua__params(L, &p);
    sbuf msg = {0};
    lua_getfield(L, state, "known");
    int known = lua_gettop(L);
    for (size_t i = 0; i < n; i++) {
        const char *eq = strchr(p[i], '=');
        if (!eq)
            continue;
        lua_pushlstring(L, p[i], (size_t)(eq - p[i]));
        lua_rawget(L, known);
        int ok = lua_toboolean(L, -1);
        lua_pop(L, 1);
        if (ok)
            continue;
        char name[128], best[128], line[640];
        snprintf(name, sizeof name, "%.*s", (int)(eq - p[i]) < 127 ? (int)(eq - p[i]) : 127, p[i]);
        sbuf list = {0};
        known_names(L, state, name, &list, best, sizeof best);
        snprintf(line, sizeof line, "%s-D %s: %s has no parameter '%s'%s%s%s; its parameters: %s", msg.n ? "\n" : "",
                 p[i], dkv_lua__script_name(L), name, *best ? " (did you mean '" : "", best, *best ? "'?)" : "",
                 list.p ? list.p : "");
        free(list.p);
        sb_add(&msg, line);
    }
    if (msg.n) {
        sb_add(&msg, "\n(dkv run SCRIPT --help lists them; a script declares them with dkv.param)");
        lua_pushstring(L, msg.p ? msg.p : "unknown -D parameter");
        free(msg.p);
        dkv_lua__stop_usage(L);
        return lua_error(L);
    }
    lua_pushboolean(L, 1);
    lua_setfield(L, state, "passed");
    lua_settop(L, state - 1);
    return 0;
}

void dkv_lua_param_gate(lua_State *L)
{
    if (dkv_lua__listing(L)) {
        lua_pushliteral(L, "(parameters listed)");
        dkv_lua__stop_listed(L);
        lua_error(L);
    }
    check_given(L);
}

int dkv_lua_param_check_end(lua_State *L)
{
    return check_given(L);
}

/* dkv.param's fourth argument: only the keys integer, min, max; min and max numbers. */
static void check_keys(lua_State *L, int ck)
{
    lua_pushnil(L);
    while (lua_next(L, ck)) {
        const char *k = lua_type(L, -2) == LUA_TSTRING ? lua_tostring(L, -2) : "";
        if (strcmp(k, "integer") && strcmp(k, "min") && strcmp(k, "max"))
            luaL_error(L, "dkv.param: unknown check key '%s' (integer, min, max)", k);
        if (strcmp(k, "integer") && lua_type(L, -1) != LUA_TNUMBER)
            luaL_error(L, "dkv.param: check.%s must be a number", k);
        lua_pop(L, 1);
    }
}

static bool check_integer(lua_State *L, int ck)
{
    lua_getfield(L, ck, "integer");
    bool r = lua_toboolean(L, -1);
    lua_pop(L, 1);
    return r;
}

/* Whether the number at index i passes the check at ck (a whole number when integer; within min and max). */
static bool check_number(lua_State *L, int ck, int i)
{
    if (lua_type(L, i) != LUA_TNUMBER)
        return false;
    double x = lua_tonumber(L, i);
    if (check_integer(L, ck) && !(x == floor(x) && fabs(x) < 9.0e15))
        return false;
    bool ok = x == x;
    lua_getfield(L, ck, "min");
    ok = ok && (lua_isnil(L, -1) || x >= lua_tonumber(L, -1));
    lua_getfield(L, ck, "max");
    ok = ok && (lua_isnil(L, -1) || x <= lua_tonumber(L, -1));
    lua_pop(L, 2);
    return ok;
}

/* "a whole number >= 1", "a number in [0, 1]", ... */
static void check_text(lua_State *L, int ck, char *out, size_t n)
{
    lua_getfield(L, ck, "min");
    lua_getfield(L, ck, "max");
    bool lo = !lua_isnil(L, -2), hi = !lua_isnil(L, -1);
    double a = lo ? lua_tonumber(L, -2) : 0, b = hi ? lua_tonumber(L, -1) : 0;
    lua_pop(L, 2);
    const char *what = check_integer(L, ck) ? "a whole number" : "a number";
    if (lo && hi)
        snprintf(out, n, "%s in [%.15g, %.15g]", what, a, b);
    else if (lo)
        snprintf(out, n, "%s >= %.15g", what, a);
    else if (hi)
        snprintf(out, n, "%s <= %.15g", what, b);
    else
        snprintf(out, n, "%s", what);
}

/* dkv.param(name, default, help [, check]) -> the -D value (checked against the default's type and the check) or
 * default */
static int l_param(lua_State *L)
{
    const char *name = luaL_checkstring(L, 1);
    int dt = lua_type(L, 2);
    luaL_checkstring(L, 3);   /* the help text is required */
    luaL_argcheck(L, dt == LUA_TNIL || dt == LUA_TBOOLEAN || dt == LUA_TNUMBER || dt == LUA_TSTRING, 2,
                  "the default must be nil, a boolean, a number or a string");
    size_t len = strlen(name);
    int ok = len > 0 && len <= 64 && !(name[0] >= '0' && name[0] <= '9');
    for (size_t i = 0; ok && i < len; i++) {
        char c = name[i];
        ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
    }
    luaL_argcheck(L, ok, 1, "a parameter name is 1-64 of A-Z a-z 0-9 _, not starting with a digit");
    lua_settop(L, 4);
    int ck = lua_type(L, 4) == LUA_TNIL ? 0 : 4;   /* {integer = true, min = x, max = y}: a number's bounds */
    luaL_argcheck(L, !ck || lua_type(L, 4) == LUA_TTABLE, 4, "the check is a table {integer =, min =, max =}");
    luaL_argcheck(L, !ck || dt == LUA_TNUMBER || dt == LUA_TNIL, 4, "a check needs a number (or nil) default");
    if (ck)
        check_keys(L, ck);
    if (ck && dt == LUA_TNUMBER && !check_number(L, ck, 2))
        return luaL_argerror(L, 2, "the default does not pass the parameter's own check");
    push_state(L);
    int state = 5;
    /* declared before?  the same default is fine (a library required twice), another is an error */
    lua_getfield(L, state, "declared");
    int declared = lua_gettop(L);
    lua_Integer nd = luaL_len(L, declared);
    int again = 0;
    for (lua_Integer i = 1; i <= nd; i++) {
        lua_rawgeti(L, declared, i);
        lua_getfield(L, -1, "name");
        if (strcmp(lua_tostring(L, -1), name) == 0) {
            lua_getfield(L, -2, "default");
            int old = lua_gettop(L);
            if (!lua_rawequal(L, old, 2)) {
                const char *a = luaL_tolstring(L, old, NULL);
                const char *b = luaL_tolstring(L, 2, NULL);
                return luaL_error(L, "dkv.param: '%s' is declared twice with different defaults (%s and %s)", name,
                                  a, b);
            }
            again = 1;
        }
        lua_settop(L, declared);
    }
    if (!again) {
        lua_createtable(L, 0, 3);
        lua_pushvalue(L, 1);
        lua_setfield(L, -2, "name");
        lua_pushvalue(L, 2);
        lua_setfield(L, -2, "default");
        lua_pushvalue(L, 3);
        lua_setfield(L, -2, "help");
        lua_rawseti(L, declared, nd + 1);
    }
    mark_known(L, state, 1);
    lua_getfield(L, state, "values");
    lua_getfield(L, -1, name);
    int vt = lua_type(L, -1);
    if (vt == LUA_TNIL) {
        lua_pushvalue(L, 2);
        return 1;
    }
    int v = lua_gettop(L);
    if (ck && (vt != LUA_TNUMBER || !check_number(L, ck, v))) {   /* a count that is 2.5, a size below 0, ... */
        const char *given = luaL_tolstring(L, v, NULL);
        char want[160];
        check_text(L, ck, want, sizeof want);
        const char *dflt = luaL_tolstring(L, 2, NULL);
        return usage_error(L, "-D %s=%s: parameter '%s' expects %s (default %s)", name, given, name, want, dflt);
    }
    if (ck && lua_isnumber(L, v) && !lua_isinteger(L, v) && check_integer(L, ck)) {   /* 3.0 given: the integer 3 */
        lua_pushinteger(L, (lua_Integer)lua_tonumber(L, v));
        return 1;
    }
    if ((dt == LUA_TNUMBER && vt != LUA_TNUMBER) || (dt == LUA_TBOOLEAN && vt != LUA_TBOOLEAN)) {
        const char *given = luaL_tolstring(L, v, NULL);   /* a copy: the value itself stays as it is */
        const char *dflt = luaL_tolstring(L, 2, NULL);
        return usage_error(L, "-D %s=%s: parameter '%s' expects %s (default %s)", name, given, name,
                           dt == LUA_TNUMBER ? "a number" : "true or false", dflt);
    }
    lua_settop(L, v);   /* a string default takes the value as dkv.params gives it */
    return 1;
}

/* dkv.params: reading a name makes it known (scripts that do not declare still get checked) */
static int params_index(lua_State *L)
{
    push_state(L);
    int state = lua_gettop(L);
    if (lua_type(L, 2) == LUA_TSTRING)
        mark_known(L, state, 2);
    lua_getfield(L, state, "values");
    lua_pushvalue(L, 2);
    lua_rawget(L, -2);
    return 1;
}

static int params_newindex(lua_State *L)
{
    push_state(L);
    lua_getfield(L, -1, "values");
    lua_pushvalue(L, 2);
    lua_pushvalue(L, 3);
    lua_rawset(L, -3);
    return 0;
}

static int params_pairs(lua_State *L)
{
    push_state(L);
    int state = lua_gettop(L);
    lua_getfield(L, state, "values");
    int values = lua_gettop(L);
    lua_pushnil(L);
    while (lua_next(L, values)) {   /* iterating all of them reads all of them */
        lua_pop(L, 1);
        mark_known(L, state, lua_gettop(L));
    }
    lua_getglobal(L, "next");
    lua_pushvalue(L, values);
    lua_pushnil(L);
    return 3;
}

void dkv_lua_open_param(lua_State *L)
{
    lua_createtable(L, 0, 4);
    lua_newtable(L);
    const char *const *p;
    size_t n = dkv_lua__params(L, &p);
    for (size_t i = 0; i < n; i++) {
        const char *eq = strchr(p[i], '=');
        if (!eq)
            continue;
        lua_pushlstring(L, p[i], (size_t)(eq - p[i]));
        push_converted(L, eq + 1);
        lua_settable(L, -3);
    }
    lua_setfield(L, -2, "values");
    lua_newtable(L);
    lua_setfield(L, -2, "declared");
    lua_newtable(L);
    lua_setfield(L, -2, "known");
    lua_rawsetp(L, LUA_REGISTRYINDEX, &REG_KEY);

    lua_newtable(L);   /* dkv.params: an empty proxy */
    lua_createtable(L, 0, 3);
    lua_pushcfunction(L, params_index);
    lua_setfield(L, -2, "__index");
    lua_pushcfunction(L, params_newindex);
    lua_setfield(L, -2, "__newindex");
    lua_pushcfunction(L, params_pairs);
    lua_setfield(L, -2, "__pairs");
    lua_setmetatable(L, -2);
    lua_setfield(L, -2, "params");
    lua_pushcfunction(L, l_param);
    lua_setfield(L, -2, "param");
}

char *dkv_lua_param_listing(lua_State *L)
{
    push_state(L);
    int state = lua_gettop(L);
    sbuf b = {0};
    char line[1024];
    lua_getfield(L, state, "declared");
    int declared = lua_gettop(L);
    lua_Integer nd = luaL_len(L, declared);
    lua_newtable(L);
    int listed = lua_gettop(L);
    for (lua_Integer i = 1; i <= nd; i++) {
        lua_rawgeti(L, declared, i);
        int d = lua_gettop(L);
        lua_getfield(L, d, "name");
        lua_pushvalue(L, -1);
        lua_pushboolean(L, 1);
        lua_rawset(L, listed);
        lua_getfield(L, d, "default");
        if (lua_type(L, -1) == LUA_TSTRING)
            lua_pushfstring(L, "\"%s\"", lua_tostring(L, -1));
        else
            luaL_tolstring(L, -1, NULL);
        lua_getfield(L, d, "help");
        snprintf(line, sizeof line, "  %-14s %-18s %s\n", lua_tostring(L, d + 1), lua_tostring(L, -2),
                 lua_tostring(L, -1));
        sb_add(&b, line);
        lua_settop(L, listed);
    }
    lua_getfield(L, state, "known");
    lua_pushnil(L);
    while (lua_next(L, -2)) {   /* read from dkv.params without a declaration */
        lua_pop(L, 1);
        lua_pushvalue(L, -1);
        lua_rawget(L, listed);
        int seen = lua_toboolean(L, -1);
        lua_pop(L, 1);
        if (!seen && lua_type(L, -1) == LUA_TSTRING) {
            snprintf(line, sizeof line, "  %-14s %-18s %s\n", lua_tostring(L, -1), "?",
                     "(read from dkv.params, not declared)");
            sb_add(&b, line);
        }
    }
    lua_settop(L, state - 1);
    if (!b.p)
        return strdup("");
    return b.p;
}
