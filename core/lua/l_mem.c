/* l_mem.c - dkv.mem: the memory managers for Lua scripts (docs/LUA_API.md, "dkv.mem").
 *
 *   local m <close> = dkv.mem.new{kind = "blockpool", capacity = 80 * 2^30, block_tokens = 256}
 *   local id = assert(m:acquire(3 * 2^20, {tag = "kv", request = 7}))
 *   m:retain(id); m:release(id); m:release(id)
 *   m:tick(0.5)                      -- the manager's clock (deferred releases)
 *   local s = m:stats()              -- s.external_frag, s.peak_reserved, s.tags.kv.allocated, ...
 *   m:write("blockpool")             -- a run in the output file (io/mem_h5.h layout)
 *
 * Failures of the manager (does not fit, double release, unknown id, zero size) return
 * nil, message, status name ("ENOMEM", ...), as Lua's io library does; wrong argument types
 * and unknown option keys raise errors naming them.  dkv.mem.requests (l_mem_aux.c) reads
 * a request stream for memory studies. */
#include <lauxlib.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "lua/dkv_lua.h"
#include "lua/l_mem.h"
#include "lua/lconf.h"
#include "lua/lua_modules.h"
#include "io/mem_h5.h"

#define MEM_MT "dkv.mem"

typedef struct lmem {
    dkv_mem *m;
} lmem;

static dkv_mem *check_mem(lua_State *L)
{
    lmem *u = luaL_checkudata(L, 1, MEM_MT);
    if (!u->m)
        luaL_error(L, "dkv.mem: the manager is closed");
    return u->m;
}

/* nil, message, status name */
static int push_fail(lua_State *L, const dkv_err *e)
{
    lua_pushnil(L);
    lua_pushstring(L, e->msg);
    lua_pushstring(L, dkv_status_name(e->code));
    return 3;
}


static bool has_key(lua_State *L, int t, const char *k)   /* t[k] is not nil */
{
    bool h = lua_getfield(L, t, k) != LUA_TNIL;
    lua_pop(L, 1);
    return h;
}

/* dkv.mem.new{kind=..., capacity=..., ...} */
static int l_new(lua_State *L)
{
    dkv_lua_param_gate(L);
    static const char *const keys[] = {
        "kind", "capacity", "release_delay", "sample_stride", "device_malloc_s", "device_free_s",
        "device_bytes_per_s", "max_split_size", "block_tokens", "token_bytes", "block_bytes",
        "chunk_blocks", "initial", "grow", "shrink", "instances", "share", "quotas", NULL};
    const char *P = "dkv.mem.new";
    dkv_lconf_check_table(L, 1, P);
    dkv_lconf_check_keys(L, 1, P, keys);
    int kind = dkv_lconf_enum_names(L, 1, P, "kind", &dkv_mem_kind_names, 0, DKV_LCONF_REQUIRED);
    dkv_mem_options o = dkv_mem_options_default((dkv_mem_kind)kind);
    o.capacity_bytes = (uint64_t)dkv_lconf_integer(L, 1, P, "capacity", (int64_t)o.capacity_bytes, 1, INT64_MAX, 0);
    o.release_delay_s = dkv_lconf_number(L, 1, P, "release_delay", 0, 0, HUGE_VAL, 0);
    o.sample_stride = (uint32_t)dkv_lconf_integer(L, 1, P, "sample_stride", 1, 0, UINT32_MAX, 0);
    o.device_malloc_s = dkv_lconf_number(L, 1, P, "device_malloc_s", 0, 0, DKV_LCONF_EVENT_S_MAX, 0);
    o.device_free_s = dkv_lconf_number(L, 1, P, "device_free_s", 0, 0, DKV_LCONF_EVENT_S_MAX, 0);
    o.device_bytes_per_s = dkv_lconf_number(L, 1, P, "device_bytes_per_s", 0, 0, HUGE_VAL, 0);
    int64_t ms = dkv_lconf_integer(L, 1, P, "max_split_size", 0, 0, INT64_MAX, 0);
    o.max_split_size = ms ? (uint64_t)ms : UINT64_MAX;
    o.block_tokens = (uint32_t)dkv_lconf_integer(L, 1, P, "block_tokens", o.block_tokens, 1, UINT32_MAX, 0);
    o.token_bytes = (uint64_t)dkv_lconf_integer(L, 1, P, "token_bytes", (int64_t)o.token_bytes, 1, INT64_MAX, 0);
    o.block_bytes = (uint64_t)dkv_lconf_integer(L, 1, P, "block_bytes", 0, 0, INT64_MAX, 0);
    o.chunk_blocks = (uint32_t)dkv_lconf_integer(L, 1, P, "chunk_blocks", o.chunk_blocks, 1, 1 << 20, 0);
    o.initial_bytes = (uint64_t)dkv_lconf_integer(L, 1, P, "initial", 0, 0, INT64_MAX, 0);
    o.grow = dkv_lconf_boolean(L, 1, P, "grow", true, 0);
    o.shrink = dkv_lconf_boolean(L, 1, P, "shrink", false, 0);
    o.share = (dkv_mem_share)dkv_lconf_enum_names(L, 1, P, "share", &dkv_mem_share_names, 0, 0);
    o.n_instances = (uint32_t)dkv_lconf_integer(L, 1, P, "instances", 1, 1, DKV_MEM_MAX_INSTANCES, 0);
    if (dkv_lconf_subtable(L, 1, P, "quotas", 0)) {
        int q = lua_gettop(L);
        lua_Integer n = (lua_Integer)lua_rawlen(L, q);
        if (n < 1 || n > DKV_MEM_MAX_INSTANCES)
            dkv_lconf_error(L, P, "quotas", "expected a list of 1..%d byte counts, one per instance", DKV_MEM_MAX_INSTANCES);
        lua_getfield(L, 1, "instances");
        bool explicit_n = !lua_isnil(L, -1);
        lua_pop(L, 1);
        if (explicit_n && (lua_Integer)o.n_instances != n)
            dkv_lconf_error(L, P, "quotas", "has %d entries but instances = %u", (int)n, o.n_instances);
        o.n_instances = (uint32_t)n;
        for (lua_Integer i = 1; i <= n; i++) {
            lua_rawgeti(L, q, i);
            int isnum;
            lua_Integer v = lua_tointegerx(L, -1, &isnum);
            if (!isnum || v < 0)
                dkv_lconf_error(L, P, "quotas", "entry %d must be a non-negative integer (bytes)", (int)i);
            o.quota_bytes[i - 1] = (uint64_t)v;
            lua_pop(L, 1);
        }
        lua_pop(L, 1);
    }
    /* options of another kind of manager cannot take effect (core/mem: only the caching allocator
     * splits blocks; blocks, chunks, resizing and instance quotas are the block pool's) */
    const char *kn = dkv_mem_kind_name(o.kind);
    if (o.kind != DKV_MEM_CACHING && has_key(L, 1, "max_split_size"))
        dkv_lconf_error(L, P, "max_split_size", "is for kind = 'caching' (kind is '%s')", kn);
    for (const char *const *k = (const char *const[]){"block_tokens", "token_bytes", "block_bytes", "chunk_blocks",
                                                      "initial", "grow", "shrink", "share", "quotas", NULL}; *k; k++)
        if (o.kind != DKV_MEM_BLOCKPOOL && has_key(L, 1, *k))
            dkv_lconf_error(L, P, *k, "is for kind = 'blockpool' (kind is '%s')", kn);
    if (o.n_instances == 1 && has_key(L, 1, "share"))
        dkv_lconf_error(L, P, "share", "is not used with one instance (instances = 1)");
    if (o.block_bytes && (has_key(L, 1, "block_tokens") || has_key(L, 1, "token_bytes")))
        dkv_lconf_error(L, P, has_key(L, 1, "block_tokens") ? "block_tokens" : "token_bytes",
                        "is not used when block_bytes is given (block_bytes overrides block_tokens x token_bytes)");
    lmem *u = lua_newuserdatauv(L, sizeof *u, 0);
    u->m = NULL;
    luaL_setmetatable(L, MEM_MT);
    dkv_err e = {0};
    if (dkv_mem_new(&o, &u->m, &e) != DKV_OK)
        return dkv_lconf_error(L, P, NULL, "%s", e.msg);
    return 1;
}

/* owner from argument idx: nil, a tag name, or {tag=, request=, instance=, layer=, step=} */
static dkv_mem_owner check_owner(lua_State *L, int idx)
{
    dkv_mem_owner w = {.tag = DKV_MEM_TAG_KV};
    if (lua_isnoneornil(L, idx))
        return w;
    if (lua_type(L, idx) == LUA_TSTRING) {
        const char *name = lua_tostring(L, idx);
        int t = dkv_names_find(&dkv_mem_tag_names, name);
        if (t < 0) {
            char list[128];
            dkv_names_join(&dkv_mem_tag_names, list, sizeof list);
            luaL_argerror(L, idx, lua_pushfstring(L, "invalid option '%s' (expected %s)", name, list));
        }
        w.tag = (uint8_t)t;
        return w;
    }
    static const char *const keys[] = {"tag", "request", "instance", "layer", "step", NULL};
    const char *P = "owner";
    dkv_lconf_check_table(L, idx, P);
    dkv_lconf_check_keys(L, idx, P, keys);
    w.tag = (uint8_t)dkv_lconf_enum_names(L, idx, P, "tag", &dkv_mem_tag_names, DKV_MEM_TAG_KV, 0);
    w.request = (uint32_t)dkv_lconf_integer(L, idx, P, "request", 0, 0, UINT32_MAX, 0);
    w.instance = (uint16_t)dkv_lconf_integer(L, idx, P, "instance", 0, 0, UINT16_MAX, 0);
    w.layer = (uint32_t)dkv_lconf_integer(L, idx, P, "layer", 0, 0, UINT32_MAX, 0);
    w.step = (uint32_t)dkv_lconf_integer(L, idx, P, "step", 0, 0, UINT32_MAX, 0);
    return w;
}

static dkv_mem_id check_id(lua_State *L, int idx)
{
    return (dkv_mem_id)luaL_checkinteger(L, idx);
}

/* A byte count argument: a negative one is an argument error naming the value. */
static uint64_t check_bytes(lua_State *L, int idx)
{
    lua_Integer b = luaL_checkinteger(L, idx);
    if (b < 0)
        luaL_argerror(L, idx, lua_pushfstring(L, "a byte count must be >= 0 (got %I)", b));
    return (uint64_t)b;
}

static int l_acquire(lua_State *L)
{
    dkv_mem *m = check_mem(L);
    lua_Integer b = luaL_checkinteger(L, 2);
    uint64_t bytes = b < 0 ? 0 : (uint64_t)b;   /* a negative size reaches the manager as 0: counted as a bad size */
    dkv_mem_owner w = check_owner(L, 3);
    dkv_mem_id id;
    dkv_err e = {0};
    if (dkv_mem_acquire(m, bytes, &w, &id, &e) != DKV_OK) {
        if (b < 0)   /* the message gives the size passed, not the 0 the manager saw */
            snprintf(e.msg, sizeof e.msg, "mem acquire: size %lld bytes is not valid (must be > 0)", (long long)b);
        return push_fail(L, &e);
    }
    lua_pushinteger(L, (lua_Integer)id);
    return 1;
}

#define ID_CALL(fname, call)                                       \
    static int fname(lua_State *L)                                 \
    {                                                              \
        dkv_mem *m = check_mem(L);                                 \
        dkv_mem_id id = check_id(L, 2);                            \
        dkv_err e = {0};                                           \
        if (call(m, id, &e) != DKV_OK)                             \
            return push_fail(L, &e);                               \
        lua_pushboolean(L, 1);                                     \
        return 1;                                                  \
    }
ID_CALL(l_release, dkv_mem_release)
ID_CALL(l_retain, dkv_mem_retain)

static int l_tick(lua_State *L)
{
    dkv_mem *m = check_mem(L);
    double t = luaL_checknumber(L, 2);
    luaL_argcheck(L, isfinite(t), 2, "the time must be a finite number of seconds");
    dkv_err e = {0};
    if (dkv_mem_tick(m, t, &e) != DKV_OK)
        return push_fail(L, &e);
    lua_pushboolean(L, 1);
    return 1;
}

static int l_flush(lua_State *L)
{
    dkv_mem_flush_deferred(check_mem(L));
    return 0;
}

static int l_reserve(lua_State *L)
{
    dkv_mem *m = check_mem(L);
    lua_Integer rq = luaL_checkinteger(L, 2);
    luaL_argcheck(L, rq >= 0 && rq <= UINT32_MAX, 2, "request id out of range");
    uint64_t bytes = check_bytes(L, 3);
    dkv_err e = {0};
    if (dkv_mem_reserve(m, (uint32_t)rq, bytes, &e) != DKV_OK)
        return push_fail(L, &e);
    lua_pushboolean(L, 1);
    return 1;
}

static int l_unreserve(lua_State *L)
{
    dkv_mem *m = check_mem(L);
    lua_Integer rq = luaL_checkinteger(L, 2);
    luaL_argcheck(L, rq >= 0 && rq <= UINT32_MAX, 2, "request id out of range");
    dkv_err e = {0};
    if (dkv_mem_unreserve(m, (uint32_t)rq, &e) != DKV_OK)
        return push_fail(L, &e);
    lua_pushboolean(L, 1);
    return 1;
}

static int l_info(lua_State *L)
{
    dkv_mem *m = check_mem(L);
    dkv_mem_info in;
    dkv_err e = {0};
    if (dkv_mem_info_get(m, check_id(L, 2), &in, &e) != DKV_OK)
        return push_fail(L, &e);
    lua_createtable(L, 0, 8);
    lua_pushinteger(L, (lua_Integer)in.requested_bytes);
    lua_setfield(L, -2, "requested");
    lua_pushinteger(L, (lua_Integer)in.allocated_bytes);
    lua_setfield(L, -2, "allocated");
    lua_pushinteger(L, (lua_Integer)in.offset);
    lua_setfield(L, -2, "offset");
    lua_pushinteger(L, in.refcount);
    lua_setfield(L, -2, "refcount");
    lua_pushboolean(L, in.pending);
    lua_setfield(L, -2, "pending");
    lua_pushinteger(L, in.n_blocks);
    lua_setfield(L, -2, "n_blocks");
    lua_pushstring(L, dkv_mem_tag_name((dkv_mem_tag)in.owner.tag));
    lua_setfield(L, -2, "tag");
    lua_pushinteger(L, in.owner.request);
    lua_setfield(L, -2, "request");
    return 1;
}

static int l_blocks(lua_State *L)
{
    dkv_mem *m = check_mem(L);
    dkv_mem_id id = check_id(L, 2);
    dkv_err e = {0};
    uint32_t n;
    if (dkv_mem_blocks(m, id, NULL, 0, &n, &e) != DKV_OK)
        return push_fail(L, &e);
    uint32_t *ids = lua_newuserdatauv(L, (size_t)n * sizeof *ids + 1, 0);   /* GC-owned scratch */
    dkv_mem_blocks(m, id, ids, n, &n, &e);
    lua_createtable(L, (int)n, 0);
    for (uint32_t i = 0; i < n; i++) {
        lua_pushinteger(L, ids[i]);
        lua_rawseti(L, -2, (lua_Integer)i + 1);
    }
    return 1;
}

static int l_block_bytes(lua_State *L)
{
    lua_pushinteger(L, (lua_Integer)dkv_mem_block_bytes(check_mem(L)));
    return 1;
}

static int l_grow(lua_State *L)
{
    dkv_mem *m = check_mem(L);
    dkv_err e = {0};
    if (dkv_mem_grow(m, check_bytes(L, 2), &e) != DKV_OK)
        return push_fail(L, &e);
    lua_pushboolean(L, 1);
    return 1;
}

static int l_shrink(lua_State *L)
{
    dkv_mem *m = check_mem(L);
    dkv_err e = {0};
    uint64_t released;
    if (dkv_mem_shrink(m, check_bytes(L, 2), &released, &e) != DKV_OK)
        return push_fail(L, &e);
    lua_pushinteger(L, (lua_Integer)released);
    return 1;
}

static int l_check(lua_State *L)
{
    dkv_err e = {0};
    if (dkv_mem_check(check_mem(L), &e) != DKV_OK)
        return push_fail(L, &e);
    lua_pushboolean(L, 1);
    return 1;
}

static int l_stats(lua_State *L)
{
    dkv_mem *m = check_mem(L);
    dkv_mem_stats s;
    dkv_mem_stats_get(m, &s);
    dkv_lua_push_mem_stats(L, m, &s);
    return 1;
}

static int l_series(lua_State *L)
{
    size_t n;
    const dkv_mem_sample *s = dkv_mem_series(check_mem(L), &n);
    static const char *const cols[] = {"time_s", "event", "requested", "allocated", "reserved"};
    lua_createtable(L, 0, 6);
    for (int c = 0; c < 5; c++) {
        lua_createtable(L, (int)n, 0);
        for (size_t i = 0; i < n; i++) {
            if (c == 0)
                lua_pushnumber(L, s[i].time_s);
            else
                lua_pushinteger(L, (lua_Integer)(c == 1 ? s[i].event : c == 2 ? s[i].requested
                                                 : c == 3 ? s[i].allocated : s[i].reserved));
            lua_rawseti(L, -2, (lua_Integer)i + 1);
        }
        lua_setfield(L, -2, cols[c]);
    }
    lua_pushinteger(L, (lua_Integer)n);
    lua_setfield(L, -2, "n");
    return 1;
}

/* Writes the scalars of table idx as attributes of obj ("params" / "summary"). */
static void write_scalars(lua_State *L, dkv_h5_run *run, int idx, const char *obj, const char *path)
{
    dkv_err e = {0};
    lua_pushnil(L);
    while (lua_next(L, idx)) {
        if (lua_type(L, -2) != LUA_TSTRING)
            dkv_lconf_error(L, path, NULL, "keys must be strings");
        const char *k = lua_tostring(L, -2);
        dkv_status st;
        if (lua_isinteger(L, -1))
            st = dkv_h5_attr_i64(run, obj, k, (int64_t)lua_tointeger(L, -1), &e);
        else if (lua_type(L, -1) == LUA_TNUMBER)
            st = dkv_h5_attr_f64(run, obj, k, lua_tonumber(L, -1), &e);
        else if (lua_type(L, -1) == LUA_TBOOLEAN)
            st = dkv_h5_attr_i64(run, obj, k, lua_toboolean(L, -1), &e);
        else if (lua_type(L, -1) == LUA_TSTRING)
            st = dkv_h5_attr_str(run, obj, k, lua_tostring(L, -1), &e);
        else
            return (void)dkv_lconf_error(L, path, k, "expected a number, boolean or string, got %s", luaL_typename(L, -1));
        if (st)
            dkv_lconf_error(L, path, k, "%s", e.msg);
        lua_pop(L, 1);
    }
}

/* m:write(name [, {params = {...}, summary = {...}}]) -> true, or false without an output file */
static int l_write(lua_State *L)
{
    dkv_mem *m = check_mem(L);
    const char *name = luaL_checkstring(L, 2);
    int extra = 0;
    if (!lua_isnoneornil(L, 3)) {
        static const char *const keys[] = {"params", "summary", NULL};
        dkv_lconf_check_table(L, 3, "write");
        dkv_lconf_check_keys(L, 3, "write", keys);
        extra = 3;
    }
    int cfg = 0;
    if (extra) {
        lua_getfield(L, extra, "params");
        cfg = lua_isnil(L, -1) ? 0 : lua_gettop(L);
    }
    dkv_h5_run *run = dkv_lua_run_begin(L, name, cfg, 0);
    if (!run) {
        lua_pushboolean(L, 0);
        return 1;
    }
    dkv_err e = {0};
    if (dkv_mem_h5_write(run, m, &e) != DKV_OK)
        return dkv_lconf_error(L, "write", NULL, "%s", e.msg);
    if (cfg)
        write_scalars(L, run, cfg, "params", "write.params");
    if (extra && dkv_lconf_subtable(L, extra, "write", "summary", 0)) {
        write_scalars(L, run, lua_gettop(L), "summary", "write.summary");
        lua_pop(L, 1);
    }
    dkv_lua_run_end(L, run);
    lua_pushboolean(L, 1);
    return 1;
}

static int l_close(lua_State *L)
{
    lmem *u = luaL_checkudata(L, 1, MEM_MT);
    dkv_mem_free(u->m);
    u->m = NULL;
    return 0;
}

static int l_tostring(lua_State *L)
{
    lmem *u = luaL_checkudata(L, 1, MEM_MT);
    if (!u->m) {
        lua_pushstring(L, "dkv.mem (closed)");
        return 1;
    }
    dkv_mem_stats s;
    dkv_mem_stats_get(u->m, &s);
    lua_pushfstring(L, "dkv.mem %s: %I allocated, %I reserved", dkv_mem_kind_name(dkv_mem_get_options(u->m)->kind),
                    (lua_Integer)s.allocated, (lua_Integer)s.reserved);
    return 1;
}

void dkv_lua_open_mem(lua_State *L)
{
    static const luaL_Reg methods[] = {
        {"acquire", l_acquire},   {"release", l_release}, {"retain", l_retain},
        {"tick", l_tick},         {"flush", l_flush},     {"reserve", l_reserve},
        {"unreserve", l_unreserve}, {"info", l_info},     {"blocks", l_blocks},
        {"block_bytes", l_block_bytes}, {"grow", l_grow}, {"shrink", l_shrink},
        {"check", l_check},       {"stats", l_stats},     {"series", l_series},
        {"write", l_write},       {"close", l_close},     {NULL, NULL}};
    static const luaL_Reg meta[] = {{"__gc", l_close}, {"__close", l_close}, {"__tostring", l_tostring},
                                    {NULL, NULL}};
    if (luaL_newmetatable(L, MEM_MT)) {
        luaL_setfuncs(L, meta, 0);
        luaL_newlib(L, methods);
        lua_setfield(L, -2, "__index");
    }
    lua_pop(L, 1);
    static const luaL_Reg fns[] = {{"new", l_new}, {"requests", dkv_lua_mem_requests}, {NULL, NULL}};
    luaL_newlib(L, fns);
    lua_setfield(L, -2, "mem");
}
