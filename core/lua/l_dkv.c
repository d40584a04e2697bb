/* l_dkv.c - the `dkv` Lua module: version, params, shard, presets, budget, write_run, progress. */
#include <lauxlib.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "dkv_commit.h"
#include "lua/dkv_lua.h"
#include "lua/lconf.h"
#include "lua/lua_modules.h"
#include "lua/presets.h"
#include "model/model.h"

void dkv_lua__shard(lua_State *L, uint32_t *index, uint32_t *count);
void dkv_lua__charge(lua_State *L, uint64_t ops);

/* ------------------------------------------------------------------ presets and arithmetic */

static int l_preset_gpu(lua_State *L)
{
    luaL_checkany(L, 1);
    dkv_gpu g;
    dkv_lua_check_gpu(L, 1, &g);   /* checks every field */
    dkv_lua_push_preset(L, "gpu", 1);
    return 1;
}

static int l_preset_model(lua_State *L)
{
    luaL_checkany(L, 1);
    dkv_model m;
    dkv_lua_check_model(L, 1, &m);
    dkv_lua_push_preset(L, "model", 1);
    return 1;
}

static int l_preset_list(lua_State *L)
{
    static const char *const kinds[] = {"gpu", "model", NULL};
    int k = luaL_checkoption(L, 1, NULL, kinds);
    dkv_lua_push_preset_names(L, kinds[k]);
    return 1;
}

static void set_num(lua_State *L, const char *k, double v)
{
    lua_pushnumber(L, v);
    lua_setfield(L, -2, k);
}

static void set_int(lua_State *L, const char *k, lua_Integer v)
{
    lua_pushinteger(L, v);
    lua_setfield(L, -2, k);
}

/* A count computed as a double (floor(bytes / size)) as an integer field: one past lua_Integer is an error, not a
 * cast's wrap to -9223372036854775808. */
static void set_count(lua_State *L, const char *what, const char *k, double v)
{
    if (!(v >= 0 && v < 0x1p63))
        luaL_error(L, "%s: %s = %.17g does not fit an integer", what, k, v);
    set_int(L, k, (lua_Integer)v);
}

static int l_model_info(lua_State *L)
{
    dkv_model m;
    dkv_lua_check_model(L, 1, &m);
    lua_newtable(L);
    lua_pushstring(L, m.name);
    lua_setfield(L, -2, "name");
    set_int(L, "params", (lua_Integer)dkv_model_params(&m));
    set_int(L, "weight_bytes", (lua_Integer)dkv_model_weight_bytes(&m));
    set_int(L, "kv_bytes_per_token", (lua_Integer)dkv_model_kv_bytes_per_token(&m));
    set_int(L, "kv_bytes_per_token_layer", (lua_Integer)dkv_model_kv_bytes_per_token_layer(&m));
    set_int(L, "logit_row_bytes", (lua_Integer)dkv_model_logit_row_bytes(&m));
    lua_pushstring(L, m.tokenizer);
    lua_setfield(L, -2, "tokenizer");
    return 1;
}

/* dkv.budget(model, gpu [, {margin = 0.10, kv_frac = 0.7}]) */
static int l_budget(lua_State *L)
{
    dkv_model m;
    dkv_gpu g;
    dkv_lua_check_model(L, 1, &m);
    dkv_lua_check_gpu(L, 2, &g);
    double margin = 0.10, kv_frac = 0.7;
    if (!lua_isnoneornil(L, 3)) {
        static const char *const keys[] = {"margin", "kv_frac", NULL};
        dkv_lconf_check_keys(L, 3, "budget options", keys);
        margin = dkv_lconf_number(L, 3, "budget options", "margin", 0.10, 0, 1, DKV_LCONF_HI_OPEN);
        kv_frac = dkv_lconf_number(L, 3, "budget options", "kv_frac", 0.7, 0, 1, DKV_LCONF_LO_OPEN);
    }
    dkv_budget b;
    dkv_err err = {0};
    if (dkv_budget_compute(&m, &g, margin, kv_frac, &b, &err) != DKV_OK)
        return luaL_error(L, "budget: %s", err.msg);
    double kvt = (double)dkv_model_kv_bytes_per_token(&m);
    lua_newtable(L);
    set_num(L, "hbm_bytes", g.hbm_bytes);
    set_num(L, "weight_bytes", b.weight_bytes);
    set_num(L, "margin_bytes", b.margin_bytes);
    set_num(L, "usable_bytes", b.usable_bytes);
    set_num(L, "kv_bytes", b.kv_bytes);
    set_num(L, "act_bytes", b.act_bytes);
    set_int(L, "kv_bytes_per_token", (lua_Integer)kvt);
    set_count(L, "budget", "kv_tokens", floor(b.kv_bytes / kvt));
    set_int(L, "logit_row_bytes", (lua_Integer)dkv_model_logit_row_bytes(&m));
    set_count(L, "budget", "logit_rows", floor(b.act_bytes / (double)dkv_model_logit_row_bytes(&m)));
    return 1;
}

/* ------------------------------------------------------------------ shard, progress, literal */

static int l_shard_mine(lua_State *L)
{
    uint32_t idx, cnt;
    dkv_lua__shard(L, &idx, &cnt);
    lua_Integer j = luaL_checkinteger(L, 1);
    luaL_argcheck(L, j >= 1, 1, "item numbers start at 1");
    lua_pushboolean(L, (uint64_t)(j - 1) % cnt == idx);
    return 1;
}

/* Items idx+1, idx+1+cnt, ... of the table: a stride, so the loop is as long as the result.  The
 * length may come from a __len metamethod (2^62, say), so the loop is charged to the instruction
 * limit and stops on SIGINT like Lua code does (dkv_lua__charge). */
static int l_shard_select(lua_State *L)
{
    uint32_t idx, cnt;
    dkv_lua__shard(L, &idx, &cnt);
    luaL_checktype(L, 1, LUA_TTABLE);
    lua_Integer n = (lua_Integer)luaL_len(L, 1), k = 0;
    lua_newtable(L);
    for (lua_Integer j = (lua_Integer)idx + 1; j <= n; j += cnt) {
        if ((k & 1023) == 1023)
            dkv_lua__charge(L, 4 * 1024);   /* ~4 VM instructions per item in Lua */
        lua_geti(L, 1, j);
        lua_rawseti(L, -2, ++k);
        if (n - j < (lua_Integer)cnt)
            break;   /* j + cnt would pass n (or overflow) */
    }
    return 1;
}

static int l_progress(lua_State *L)
{
    const char *label = luaL_checkstring(L, 1);
    double done = luaL_checknumber(L, 2), total = luaL_optnumber(L, 3, 0);
    dkv_lua_progress(L, label, done, total);
    return 0;
}

static int l_literal(lua_State *L)
{
    luaL_checkany(L, 1);
    dkv_lua_push_literal(L, 1);
    return 1;
}

/* ------------------------------------------------------------------ write_run */

/* Writes scalar (or number-array) values of the table at t as attributes of obj. */
static void write_attrs(lua_State *L, dkv_h5_run *run, int t, const char *obj, const char *path)
{   /* run == NULL: check only */
    dkv_err err = {0};
    t = lua_absindex(L, t);
    dkv_lconf_check_table(L, t, path);
    lua_pushnil(L);
    while (lua_next(L, t)) {
        if (lua_type(L, -2) != LUA_TSTRING)
            dkv_lconf_error(L, path, NULL, "keys must be strings");
        const char *k = lua_tostring(L, -2);
        dkv_status st;
        int v = lua_gettop(L);
        if (lua_isinteger(L, v))
            st = run ? dkv_h5_attr_i64(run, obj, k, lua_tointeger(L, v), &err) : DKV_OK;
        else if (lua_type(L, v) == LUA_TNUMBER)
            st = run ? dkv_h5_attr_f64(run, obj, k, lua_tonumber(L, v), &err) : DKV_OK;
        else if (lua_type(L, v) == LUA_TBOOLEAN)
            st = run ? dkv_h5_attr_i64(run, obj, k, lua_toboolean(L, v), &err) : DKV_OK;
        else if (lua_type(L, v) == LUA_TSTRING)
            st = run ? dkv_h5_attr_str(run, obj, k, lua_tostring(L, v), &err) : DKV_OK;
        else if (lua_type(L, v) == LUA_TTABLE) {
            size_t n = lua_rawlen(L, v);
            int numeric = n > 0;
            for (size_t i = 1; i <= n && numeric; i++) {
                numeric = lua_rawgeti(L, v, (lua_Integer)i) == LUA_TNUMBER;
                lua_pop(L, 1);
            }
            if (numeric) {
                double *a = lua_newuserdatauv(L, n * sizeof *a, 0);
                for (size_t i = 1; i <= n; i++) {
                    lua_rawgeti(L, v, (lua_Integer)i);
                    a[i - 1] = lua_tonumber(L, -1);
                    lua_pop(L, 1);
                }
                st = run ? dkv_h5_attr_f64v(run, obj, k, a, n, &err) : DKV_OK;
                lua_pop(L, 1);
            } else {
                dkv_lua_push_literal(L, v);
                st = run ? dkv_h5_attr_str(run, obj, k, lua_tostring(L, -1), &err) : DKV_OK;
                lua_pop(L, 1);
            }
        } else {
            return (void)dkv_lconf_error(L, path, k, "cannot store a %s", luaL_typename(L, v));
        }
        if (st != DKV_OK)
            dkv_lconf_error(L, path, k, "%s", err.msg);
        lua_pop(L, 1);
    }
}

typedef struct col {
    const char *name;
    dkv_h5_type type;
    size_t off;
    int values;       /* stack index of the values array */
    const char *unit, *doc;
} col;

static int cmp_col(const void *a, const void *b)
{
    return strcmp(((const col *)a)->name, ((const col *)b)->name);
}

static int cmp_name(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* The string keys of the table at t as a NULL-terminated array, sorted, in a userdata pushed on the stack (the
 * strings are kept alive by the table).  Other keys are skipped. */
static const char **push_names(lua_State *L, int t)
{
    t = lua_absindex(L, t);
    size_t k = 0;
    lua_pushnil(L);
    while (lua_next(L, t)) {
        k += lua_type(L, -2) == LUA_TSTRING;
        lua_pop(L, 1);
    }
    const char **a = lua_newuserdatauv(L, (k + 1) * sizeof *a, 0);
    size_t i = 0;
    lua_pushnil(L);
    while (lua_next(L, t)) {
        if (lua_type(L, -2) == LUA_TSTRING && i < k)
            a[i++] = lua_tostring(L, -2);
        lua_pop(L, 1);
    }
    a[i] = NULL;
    qsort(a, i, sizeof *a, cmp_name);   /* sorted: the first unknown name is the same on every run */
    return a;
}

/* Raises "path: <what> 'k' ... (did you mean 'x'?)" for the first key (in sorted order) of the table at t that is
 * not in names (NULL-terminated), and for a value that is not a string: a unit or doc for a column or summary value
 * that does not exist would otherwise be dropped, or written beside nothing. */
static void check_named(lua_State *L, int t, const char *path, const char *const *names, const char *what)
{
    int top = lua_gettop(L);
    t = lua_absindex(L, t);
    dkv_lconf_check_table(L, t, path);
    lua_pushnil(L);
    while (lua_next(L, t)) {
        if (lua_type(L, -2) != LUA_TSTRING)
            dkv_lconf_error(L, path, NULL, "keys must be strings (%s names)", what);
        if (lua_type(L, -1) != LUA_TSTRING)
            dkv_lconf_error(L, path, lua_tostring(L, -2), "expected a string, got %s", luaL_typename(L, -1));
        lua_pop(L, 1);
    }
    const char **keys = push_names(L, t);
    for (size_t i = 0; keys[i]; i++) {
        size_t j = 0;
        while (names[j] && strcmp(names[j], keys[i]) != 0)
            j++;
        if (names[j])
            continue;
        const char *near = dkv_lconf_nearest(keys[i], names);
        if (near)
            dkv_lconf_error(L, path, NULL, "'%s' names no %s (did you mean '%s'?)", keys[i], what, near);
        if (!names[0])
            dkv_lconf_error(L, path, NULL, "'%s' names no %s (there are none)", keys[i], what);
        luaL_Buffer b;
        luaL_buffinit(L, &b);
        for (j = 0; names[j]; j++) {
            if (j)
                luaL_addstring(&b, ", ");
            luaL_addstring(&b, names[j]);
        }
        luaL_pushresult(&b);
        dkv_lconf_error(L, path, NULL, "'%s' names no %s (known: %s)", keys[i], what, lua_tostring(L, -1));
    }
    lua_settop(L, top);
}

/* Raises unless the table at t is an array: keys 1..len only.  A table with other keys is a mistake, most
 * often a misspelt `columns` ({colums = {x = ...}} would be one empty column named colums). */
static void check_array(lua_State *L, int t, lua_Integer len, const char *path, const char *cname)
{
    t = lua_absindex(L, t);
    lua_pushnil(L);
    while (lua_next(L, t)) {
        lua_pop(L, 1);
        if (lua_isinteger(L, -1) && lua_tointeger(L, -1) >= 1 && lua_tointeger(L, -1) <= len)
            continue;
        static const char *const spec_keys[] = {"columns", "units", "docs", NULL};
        const char *near = dkv_lconf_nearest(cname, spec_keys);
        const char *k = luaL_tolstring(L, -1, NULL);   /* the key as text (pushed: the key itself stays) */
        if (near && strcmp(near, cname) == 0 && strcmp(cname, "columns") != 0)
            dkv_lconf_error(L, path, cname, "expected an array of values, got a table with key '%s' (%s needs the "
                            "form {columns = {...}, units = {...}, docs = {...}})", k, cname);
        if (near && strcmp(near, cname) != 0)
            dkv_lconf_error(L, path, cname, "expected an array of values, got a table with key '%s' (did you mean "
                            "'%s'?)", k, near);
        dkv_lconf_error(L, path, cname, "expected an array of values, got a table with key '%s'", k);
    }
}

/* The checked columns c[0..nc) of n rows (rec bytes each) as table tname of run, in batches. */
static void write_rows(lua_State *L, dkv_h5_run *run, const char *tname, const col *c, size_t nc, lua_Integer n,
                       size_t rec, const char *path)
{
    size_t i;
    dkv_h5_field *fd = lua_newuserdatauv(L, nc * sizeof *fd, 0);
    for (i = 0; i < nc; i++)
        fd[i] = (dkv_h5_field){c[i].name, c[i].type, c[i].off, c[i].unit, c[i].doc};
    dkv_err err = {0};
    dkv_h5_table *h;
    if (dkv_h5_table_create(run, tname, rec, fd, nc, &h, &err) != DKV_OK)
        dkv_lconf_error(L, path, NULL, "%s", err.msg);
    enum { BATCH = 4096 };
    unsigned char *buf = lua_newuserdatauv(L, BATCH * rec, 0);
    for (lua_Integer j0 = 1; j0 <= n; j0 += BATCH) {
        lua_Integer cnt = n - j0 + 1 < BATCH ? n - j0 + 1 : BATCH;
        memset(buf, 0, (size_t)cnt * rec);
        for (lua_Integer j = 0; j < cnt; j++) {
            unsigned char *r = buf + (size_t)j * rec;
            for (i = 0; i < nc; i++) {
                lua_rawgeti(L, c[i].values, j0 + j);
                if (c[i].type == DKV_H5_I64) {
                    int64_t v = lua_tointeger(L, -1);
                    memcpy(r + c[i].off, &v, 8);
                } else if (c[i].type == DKV_H5_F64) {
                    double v = lua_tonumber(L, -1);
                    memcpy(r + c[i].off, &v, 8);
                } else if (c[i].type == DKV_H5_U8) {
                    r[c[i].off] = (unsigned char)lua_toboolean(L, -1);
                } else {
                    size_t sl;
                    const char *s = lua_tolstring(L, -1, &sl);
                    memcpy(r + c[i].off, s, sl);
                }
                lua_pop(L, 1);
            }
        }
        if (dkv_h5_table_append(h, buf, (size_t)cnt, &err) != DKV_OK)
            dkv_lconf_error(L, path, NULL, "%s", err.msg);
    }
    dkv_h5_table_close(h);
}

/* Writes one table from {col = {values...}} or {columns = {...}, units = {...}, docs = {...}};
 * with run == NULL only checks it. */
static void write_table(lua_State *L, dkv_h5_run *run, const char *tname, int t, const char *path)
{
    int top = lua_gettop(L);
    t = lua_absindex(L, t);
    dkv_lconf_check_table(L, t, path);
    int cols = t, units = 0, docs = 0;
    lua_getfield(L, t, "columns");
    if (lua_istable(L, -1)) {
        static const char *const keys[] = {"columns", "units", "docs", NULL};
        dkv_lconf_check_keys(L, t, path, keys);
        cols = lua_gettop(L);
        units = dkv_lconf_subtable(L, t, path, "units", 0) ? lua_gettop(L) : 0;
        docs = dkv_lconf_subtable(L, t, path, "docs", 0) ? lua_gettop(L) : 0;
    }
    size_t nc = 0;
    lua_pushnil(L);
    while (lua_next(L, cols)) {
        lua_pop(L, 1);
        nc++;
    }
    if (nc == 0)
        dkv_lconf_error(L, path, NULL, "a table needs at least one column");
    col *c = lua_newuserdatauv(L, nc * sizeof *c, 0);
    size_t i = 0;
    lua_pushnil(L);
    while (lua_next(L, cols)) {
        if (lua_type(L, -2) != LUA_TSTRING)
            dkv_lconf_error(L, path, NULL, "column names must be strings");
        if (!lua_istable(L, -1))
            dkv_lconf_error(L, path, lua_tostring(L, -2), "expected an array of values, got %s",
                            luaL_typename(L, -1));
        c[i].name = lua_tostring(L, -2);
        c[i].values = 0;
        i++;
        lua_pop(L, 1);
    }
    qsort(c, nc, sizeof *c, cmp_col);
    lua_Integer n = -1;
    size_t rec = 0;
    for (i = 0; i < nc; i++) {
        char cp[256];
        dkv_lconf_path(cp, sizeof cp, path, c[i].name);
        lua_getfield(L, cols, c[i].name);
        c[i].values = lua_gettop(L);
        lua_Integer len = (lua_Integer)lua_rawlen(L, c[i].values);
        if (n >= 0 && len != n)
            dkv_lconf_error(L, cp, NULL, "has %lld values, other columns have %lld", (long long)len, (long long)n);
        n = len;
        check_array(L, c[i].values, len, path, c[i].name);
        int ints = 1, nums = 1, bools = 1, strs = 1;
        for (lua_Integer j = 1; j <= len; j++) {
            int ty = lua_rawgeti(L, c[i].values, j);
            ints = ints && lua_isinteger(L, -1);
            nums = nums && ty == LUA_TNUMBER;
            bools = bools && ty == LUA_TBOOLEAN;
            strs = strs && ty == LUA_TSTRING;
            if (ty == LUA_TSTRING && lua_rawlen(L, -1) >= DKV_H5_STR32_LEN)
                dkv_lconf_error(L, cp, NULL, "value %lld is longer than %d characters", (long long)j,
                                DKV_H5_STR32_LEN - 1);
            lua_pop(L, 1);
            if (!nums && !bools && !strs)
                dkv_lconf_error(L, cp, NULL, "value %lld: a column holds numbers, booleans or strings, one kind",
                                (long long)j);
        }
        c[i].type = len == 0 ? DKV_H5_F64 : ints ? DKV_H5_I64 : nums ? DKV_H5_F64 : bools ? DKV_H5_U8 : DKV_H5_STR32;
        c[i].off = rec;
        rec += c[i].type == DKV_H5_STR32 ? DKV_H5_STR32_LEN : 8;
        c[i].unit = c[i].doc = "";
        if (units) {
            lua_getfield(L, units, c[i].name);
            if (lua_type(L, -1) == LUA_TSTRING)
                c[i].unit = lua_tostring(L, -1);  /* kept alive by the units table */
            lua_pop(L, 1);
        }
        if (docs) {
            lua_getfield(L, docs, c[i].name);
            if (lua_type(L, -1) == LUA_TSTRING)
                c[i].doc = lua_tostring(L, -1);
            lua_pop(L, 1);
        }
    }
    /* every unit and doc names a column, and is a string */
    const char **names = lua_newuserdatauv(L, (nc + 1) * sizeof *names, 0);
    for (i = 0; i < nc; i++)
        names[i] = c[i].name;
    names[nc] = NULL;
    char up[256];
    if (units)
        check_named(L, units, dkv_lconf_path(up, sizeof up, path, "units"), names, "column");
    if (docs)
        check_named(L, docs, dkv_lconf_path(up, sizeof up, path, "docs"), names, "column");
    if (!run) {  /* check only */
        lua_settop(L, top);
        return;
    }
    write_rows(L, run, tname, c, nc, n, rec, path);
    lua_settop(L, top);
}

/* dkv.write_run(name, {params=, summary=, units=, tables=, config=, seed=}) -> true | false */
static int write_run_body(lua_State *L);

static int l_write_run(lua_State *L)
{
    dkv_lua_param_gate(L);
    return dkv_lua_timed(L, write_run_body);
}

static int write_run_body(lua_State *L)
{
    const char *name = luaL_checkstring(L, 1);
    luaL_checktype(L, 2, LUA_TTABLE);
    static const char *const keys[] = {"params", "summary", "units", "tables", "config", "seed", NULL};
    dkv_lconf_check_keys(L, 2, "run", keys);
    int64_t seed = dkv_lconf_integer(L, 2, "run", "seed", 0, INT64_MIN, INT64_MAX, 0);
    lua_getfield(L, 2, "config");
    if (lua_isnil(L, -1)) {
        lua_pop(L, 1);
        lua_getfield(L, 2, "params");
    }
    int cfg = lua_isnil(L, -1) ? 0 : lua_gettop(L);
    /* check everything before the run is created, so a bad spec leaves no trace in the file */
    for (int pass = 0; pass < 2; pass++) {
        dkv_h5_run *run = NULL;
        if (pass == 1 && !(run = dkv_lua_run_begin(L, name, cfg, (uint64_t)seed))) {
            lua_pushboolean(L, 0);
            return 1;
        }
        if (dkv_lconf_subtable(L, 2, "run", "params", 0)) {
            write_attrs(L, run, -1, "params", "run.params");
            lua_pop(L, 1);
        }
        if (dkv_lconf_subtable(L, 2, "run", "summary", 0)) {
            write_attrs(L, run, -1, "summary", "run.summary");
            lua_pop(L, 1);
        }
        if (dkv_lconf_subtable(L, 2, "run", "units", 0)) {
            int u = lua_gettop(L);
            dkv_err err = {0};
            if (!run) {   /* each unit goes beside a summary value: one for a key the summary lacks is a mistake */
                if (dkv_lconf_subtable(L, 2, "run", "summary", 0))
                    push_names(L, -1);
                else
                    *(const char **)lua_newuserdatauv(L, sizeof(const char *), 0) = NULL;
                check_named(L, u, "run.units", lua_touserdata(L, -1), "summary value");
                lua_settop(L, u);
            }
            lua_pushnil(L);
            while (lua_next(L, u)) {
                char key[128];
                if (lua_type(L, -2) != LUA_TSTRING || lua_type(L, -1) != LUA_TSTRING)
                    dkv_lconf_error(L, "run.units", NULL, "expected {summary_key = \"unit\"} strings");
                snprintf(key, sizeof key, "units.%s", lua_tostring(L, -2));
                if (run && dkv_h5_attr_str(run, "summary", key, lua_tostring(L, -1), &err) != DKV_OK)
                    dkv_lconf_error(L, "run.units", lua_tostring(L, -2), "%s", err.msg);
                lua_pop(L, 1);
            }
            lua_pop(L, 1);
        }
        if (dkv_lconf_subtable(L, 2, "run", "tables", 0)) {
            int ts = lua_gettop(L);
            lua_pushnil(L);
            while (lua_next(L, ts)) {
                char tp[160];
                if (lua_type(L, -2) != LUA_TSTRING)
                    dkv_lconf_error(L, "run.tables", NULL, "table names must be strings");
                const char *tn = lua_tostring(L, -2);
                dkv_lconf_path(tp, sizeof tp, "run.tables", tn);
                write_table(L, run, tn, -1, tp);
                lua_pop(L, 1);
            }
            lua_pop(L, 1);
        }
        if (run)
            dkv_lua_run_end(L, run);
    }
    lua_pushboolean(L, 1);
    return 1;
}

/* ------------------------------------------------------------------ the module */

int luaopen_dkv(lua_State *L)
{
    static const luaL_Reg fns[] = {{"model_info", l_model_info}, {"budget", l_budget},
                                   {"write_run", l_write_run},   {"progress", l_progress},
                                   {"literal", l_literal},       {NULL, NULL}};
    static const luaL_Reg preset_fns[] = {
        {"gpu", l_preset_gpu}, {"model", l_preset_model}, {"list", l_preset_list}, {NULL, NULL}};
    luaL_newlib(L, fns);
    lua_pushstring(L, DKV_VERSION);
    lua_setfield(L, -2, "version");
    lua_pushstring(L, DKV_GIT_COMMIT);
    lua_setfield(L, -2, "git_commit");
    dkv_lua_open_param(L);   /* dkv.param, dkv.params */
    uint32_t idx, cnt;
    dkv_lua__shard(L, &idx, &cnt);
    lua_newtable(L);
    set_int(L, "index", idx);
    set_int(L, "count", cnt);
    lua_pushcfunction(L, l_shard_select);
    lua_setfield(L, -2, "select");
    lua_pushcfunction(L, l_shard_mine);
    lua_setfield(L, -2, "mine");
    lua_setfield(L, -2, "shard");
    dkv_lua *s = dkv_lua_from_state(L);
    if (s && dkv_lua_output_path(s))
        lua_pushstring(L, dkv_lua_output_path(s));
    else
        lua_pushnil(L);
    lua_setfield(L, -2, "output");
    luaL_newlib(L, preset_fns);
    lua_setfield(L, -2, "preset");
    dkv_lua_open_mem(L);
    dkv_lua_open_engine(L);
    dkv_lua_open_execute(L);
    return 1;
}
