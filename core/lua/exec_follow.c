/* exec_follow.c - opts.follow of dkv.execute (exec_follow.h). */
#include "lua/exec_follow.h"

#include <lauxlib.h>
#include <stdlib.h>
#include <string.h>

#include "lua/lconf.h"

/* Length of array field `key` of the table at idx (pushed and left on the stack). */
static size_t field_array(lua_State *L, int idx, const char *path, const char *key)
{
    lua_getfield(L, idx, key);
    if (!lua_istable(L, -1))
        dkv_lconf_error(L, path, key, "expected an array (the outputs of dkv.execute{outputs = true}), got %s",
                        luaL_typename(L, -1));
    return lua_rawlen(L, -1);
}

static uint32_t entry_u32(lua_State *L, const char *path, const char *key, size_t i, size_t g)
{
    lua_rawgeti(L, -1, (lua_Integer)g + 1);
    if (!lua_isinteger(L, -1))
        dkv_lconf_error(L, path, key, "request entry %zu, position %zu: expected an integer, got %s", i + 1, g + 1,
                        luaL_typename(L, -1));
    lua_Integer v = lua_tointeger(L, -1);
    lua_pop(L, 1);
    if (v < -1 || v >= (lua_Integer)UINT32_MAX)
        dkv_lconf_error(L, path, key, "request entry %zu, position %zu: %lld is out of range", i + 1, g + 1,
                        (long long)v);
    return v < 0 ? UINT32_MAX : (uint32_t)v;
}

void dkv_exec_follow_read(lua_State *L, int idx, const char *path, dkv_exec_follow *f)
{
    idx = lua_absindex(L, idx);
    memset(f, 0, sizeof *f);
    if (!lua_istable(L, idx))
        dkv_lconf_error(L, path, NULL, "expected the outputs table of dkv.execute{outputs = true}, got %s",
                        luaL_typename(L, idx));
    size_t n = field_array(L, idx, path, "id"), nt = field_array(L, idx, path, "tokens"),
           ns = field_array(L, idx, path, "step");
    int ids = lua_gettop(L) - 2, toks = ids + 1, steps = ids + 2;
    if (n == 0 || nt != n || ns != n)
        dkv_lconf_error(L, path, NULL, "id, tokens and step must be non-empty arrays of one length (%zu, %zu, %zu)", n,
                        nt, ns);
    size_t total = 0;
    for (size_t i = 0; i < n; i++) {
        lua_rawgeti(L, toks, (lua_Integer)i + 1);
        total += lua_istable(L, -1) ? lua_rawlen(L, -1) : 0;
        lua_pop(L, 1);
    }
    f->req = calloc(n, sizeof *f->req);
    f->buf = malloc((2 * total + 1) * sizeof *f->buf);
    if (!f->req || !f->buf) {
        dkv_exec_follow_free(f);
        luaL_error(L, "%s: out of memory", path);
    }
    f->n = (uint32_t)n;
    uint32_t *p = f->buf;
    for (size_t i = 0; i < n; i++) {
        lua_rawgeti(L, ids, (lua_Integer)i + 1);
        lua_Integer id = lua_isinteger(L, -1) ? lua_tointeger(L, -1) : -1;
        lua_pop(L, 1);
        if (id < 0 || (size_t)id >= n || f->req[id].tokens)
            dkv_lconf_error(L, path, "id", "entry %zu: ids must be 0 .. %zu, each once", i + 1, n - 1);
        lua_rawgeti(L, toks, (lua_Integer)i + 1);
        lua_rawgeti(L, steps, (lua_Integer)i + 1);
        if (!lua_istable(L, -2) || !lua_istable(L, -1) || lua_rawlen(L, -2) != lua_rawlen(L, -1))
            dkv_lconf_error(L, path, "tokens", "entry %zu: tokens and step must be arrays of one length", i + 1);
        dkv_follow *q = &f->req[id];
        q->gen = (uint32_t)lua_rawlen(L, -1);
        q->tokens = p, q->steps = p + q->gen;
        for (uint32_t g = 0; g < q->gen; g++)
            p[q->gen + g] = entry_u32(L, path, "step", i, g);
        lua_pop(L, 1);
        for (uint32_t g = 0; g < q->gen; g++)
            p[g] = entry_u32(L, path, "tokens", i, g);
        lua_pop(L, 1);
        p += 2 * (size_t)q->gen;
    }
    lua_pop(L, 3);
}

void dkv_exec_follow_free(dkv_exec_follow *f)
{
    if (!f)
        return;
    free(f->req);
    free(f->buf);
    free(f->sel);
    free(f->sel_pos);
    memset(f, 0, sizeof *f);
}
