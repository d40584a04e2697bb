/* l_literal.c - a Lua value as a Lua literal string (for provenance: config, params).
 * Built in a malloc'd buffer (no luaL_Buffer: the walk pushes values while appending). */
#include <lauxlib.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lua/dkv_lua.h"

typedef struct sbuf {
    char *p;
    size_t n, cap;
    int oom;
} sbuf;

static void put(sbuf *b, const char *s, size_t n)
{
    if (b->oom)
        return;
    if (b->n + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->n + n + 1)
            cap *= 2;
        char *p = realloc(b->p, cap);
        if (!p) {
            b->oom = 1;
            return;
        }
        b->p = p;
        b->cap = cap;
    }
    memcpy(b->p + b->n, s, n);
    b->n += n;
    b->p[b->n] = '\0';
}

static void puts_(sbuf *b, const char *s)
{
    put(b, s, strlen(s));
}

static int is_ident(const char *s, size_t n)
{
    static const char *const reserved[] = {"and", "break", "do", "else", "elseif", "end", "false", "for",
                                           "function", "goto", "if", "in", "local", "nil", "not", "or",
                                           "repeat", "return", "then", "true", "until", "while", NULL};
    if (n == 0 || !((s[0] >= 'a' && s[0] <= 'z') || (s[0] >= 'A' && s[0] <= 'Z') || s[0] == '_'))
        return 0;
    for (size_t i = 1; i < n; i++)
        if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z') || (s[i] >= '0' && s[i] <= '9') ||
              s[i] == '_'))
            return 0;
    for (int i = 0; reserved[i]; i++)
        if (strlen(reserved[i]) == n && memcmp(reserved[i], s, n) == 0)
            return 0;
    return 1;
}

static void put_string(sbuf *b, const char *s, size_t n)
{
    put(b, "\"", 1);
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        char esc[8];
        if (c == '"' || c == '\\') {
            esc[0] = '\\';
            esc[1] = (char)c;
            put(b, esc, 2);
        } else if (c == '\n') {
            puts_(b, "\\n");
        } else if (c < 32 || c == 127) {
            snprintf(esc, sizeof esc, "\\%03u", c);
            puts_(b, esc);
        } else {
            put(b, (const char *)&s[i], 1);
        }
    }
    put(b, "\"", 1);
}

static void put_number(lua_State *L, sbuf *b, int idx)
{
    char num[64];
    if (lua_isinteger(L, idx)) {
        snprintf(num, sizeof num, "%lld", (long long)lua_tointeger(L, idx));
    } else {
        double d = lua_tonumber(L, idx);
        if (d != d)
            snprintf(num, sizeof num, "(0/0)");
        else if (d > 1.7976931348623157e308)
            snprintf(num, sizeof num, "math.huge");
        else if (d < -1.7976931348623157e308)
            snprintf(num, sizeof num, "-math.huge");
        else {
            snprintf(num, sizeof num, "%.17g", d);
            if (!strpbrk(num, ".eEn"))
                strcat(num, ".0");  /* keep it a float */
        }
    }
    puts_(b, num);
}

typedef struct key {
    int is_int;
    long long i;
    const char *s;   /* borrowed from the table (a key stays alive) */
    size_t n;
} key;

static int key_cmp(const void *pa, const void *pb)
{
    const key *a = pa, *b = pb;
    if (a->is_int != b->is_int)
        return a->is_int ? -1 : 1;
    if (a->is_int)
        return a->i < b->i ? -1 : a->i > b->i;
    int c = memcmp(a->s, b->s, a->n < b->n ? a->n : b->n);
    return c ? c : (a->n < b->n ? -1 : a->n > b->n);
}

static void put_value(lua_State *L, sbuf *b, int idx, int depth);

static void put_table(lua_State *L, sbuf *b, int idx, int depth)
{
    if (depth > 32) {
        puts_(b, "\"<too deep>\"");
        return;
    }
    if (!lua_checkstack(L, 4)) {
        puts_(b, "\"<stack full>\"");
        return;
    }
    lua_Integer len = (lua_Integer)lua_rawlen(L, idx);
    int first = 1;
    puts_(b, "{");
    for (lua_Integer i = 1; i <= len; i++) {
        if (!first)
            puts_(b, ", ");
        first = 0;
        lua_rawgeti(L, idx, i);
        put_value(L, b, lua_gettop(L), depth + 1);
        lua_pop(L, 1);
    }
    size_t cap = 16, nk = 0;
    key *keys = malloc(cap * sizeof *keys);
    lua_pushnil(L);
    while (keys && lua_next(L, idx)) {
        lua_pop(L, 1);
        key k = {0};
        if (lua_type(L, -1) == LUA_TSTRING) {
            k.s = lua_tolstring(L, -1, &k.n);
        } else if (lua_isinteger(L, -1)) {
            k.is_int = 1;
            k.i = lua_tointeger(L, -1);
            if (k.i >= 1 && k.i <= len)
                continue;
        } else {
            continue;  /* float, boolean and table keys are left out */
        }
        if (nk == cap) {
            key *nkeys = realloc(keys, (cap *= 2) * sizeof *keys);
            if (!nkeys) {
                lua_pop(L, 1);
                break;
            }
            keys = nkeys;
        }
        keys[nk++] = k;
    }
    if (!keys)
        b->oom = 1;
    if (nk > 1)
        qsort(keys, nk, sizeof *keys, key_cmp);
    for (size_t i = 0; i < nk; i++) {
        if (!first)
            puts_(b, ", ");
        first = 0;
        if (keys[i].is_int) {
            char tmp[40];
            snprintf(tmp, sizeof tmp, "[%lld] = ", keys[i].i);
            puts_(b, tmp);
            lua_rawgeti(L, idx, keys[i].i);
        } else {
            if (is_ident(keys[i].s, keys[i].n))
                put(b, keys[i].s, keys[i].n);
            else {
                puts_(b, "[");
                put_string(b, keys[i].s, keys[i].n);
                puts_(b, "]");
            }
            puts_(b, " = ");
            lua_pushlstring(L, keys[i].s, keys[i].n);
            lua_rawget(L, idx);
        }
        put_value(L, b, lua_gettop(L), depth + 1);
        lua_pop(L, 1);
    }
    free(keys);
    puts_(b, "}");
}

static void put_value(lua_State *L, sbuf *b, int idx, int depth)
{
    char tmp[64];
    size_t n;
    const char *s;
    switch (lua_type(L, idx)) {
    case LUA_TNIL: puts_(b, "nil"); break;
    case LUA_TBOOLEAN: puts_(b, lua_toboolean(L, idx) ? "true" : "false"); break;
    case LUA_TNUMBER: put_number(L, b, idx); break;
    case LUA_TSTRING:
        s = lua_tolstring(L, idx, &n);
        put_string(b, s, n);
        break;
    case LUA_TTABLE: put_table(L, b, idx, depth); break;
    default:
        snprintf(tmp, sizeof tmp, "\"<%s>\"", luaL_typename(L, idx));
        puts_(b, tmp);
    }
}

void dkv_lua_push_literal(lua_State *L, int idx)
{
    idx = lua_absindex(L, idx);
    sbuf b = {0};
    put_value(L, &b, idx, 0);
    if (b.oom) {
        free(b.p);
        luaL_error(L, "out of memory writing a value as a literal");
    }
    lua_pushlstring(L, b.p ? b.p : "", b.n);
    free(b.p);
}
