/* profile_load.c - reading a measured GPU profile (datasets/profiles/<name>.lua,
 * docs/PROFILE_FORMAT.md) into a dkv_profile, once per Lua state. */
#include "lua/profile_load.h"

#include <lauxlib.h>
#include <lualib.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lua/dkv_lua.h"
#include "lua/lconf.h"
#include "model/gemm_warm.h"

#define PROF_META "dkv.profile"
#define PROF_CACHE "dkv.profiles"

typedef struct prof_box {
    dkv_profile *p;
} prof_box;

static int box_gc(lua_State *L)
{
    prof_box *b = luaL_checkudata(L, 1, PROF_META);
    dkv_profile_free(b->p);
    b->p = NULL;
    return 0;
}

static int valid_name(const char *s)
{
    if (!*s || strlen(s) > 63 || s[0] == '.')
        return 0;
    for (; *s; s++)
        if (!((*s >= 'a' && *s <= 'z') || (*s >= '0' && *s <= '9') || *s == '-' || *s == '_' || *s == '.'))
            return 0;
    return 1;
}

/* Pushes the table the file returns (empty environment but math). */
static void load_file(lua_State *L, const char *file, const char *path)
{
    FILE *fp = fopen(file, "r");
    if (!fp)
        dkv_lconf_error(L, path, NULL, "no profile file %s (dkv profile writes one; docs/PROFILE_FORMAT.md)", file);
    fclose(fp);
    if (luaL_loadfilex(L, file, "t") != LUA_OK)
        lua_error(L);
    lua_newtable(L);
    luaL_getsubtable(L, LUA_REGISTRYINDEX, LUA_LOADED_TABLE);
    lua_getfield(L, -1, LUA_MATHLIBNAME);
    lua_setfield(L, -3, "math");
    lua_pop(L, 1);
    lua_setupvalue(L, -2, 1);
    lua_call(L, 0, 1);
    if (!lua_istable(L, -1))
        dkv_lconf_error(L, file, NULL, "a profile file must return a table (got %s)", luaL_typename(L, -1));
}

/* Reads an array of strings at t[key] into names (at most max); returns the count. */
static uint32_t read_names(lua_State *L, int t, const char *path, const char *key, const char **names, uint32_t max,
                           bool required)
{
    char p[256];
    dkv_lconf_path(p, sizeof p, path, key);
    if (!dkv_lconf_subtable(L, t, path, key, required ? DKV_LCONF_REQUIRED : 0))
        return 0;
    int a = lua_gettop(L);
    dkv_lconf_check_keys_array(L, a, p, NULL, true);
    lua_Integer n = (lua_Integer)lua_rawlen(L, a);
    if (n > (lua_Integer)max)
        dkv_lconf_error(L, p, NULL, "has %lld names (at most %u)", (long long)n, max);
    for (lua_Integer i = 1; i <= n; i++) {
        lua_rawgeti(L, a, i);
        if (lua_type(L, -1) != LUA_TSTRING)
            dkv_lconf_error(L, p, NULL, "entry %lld: expected a string, got %s", (long long)i, luaL_typename(L, -1));
        names[i - 1] = lua_tostring(L, -1);   /* kept alive: the array stays on the stack */
        lua_pop(L, 1);
    }
    return (uint32_t)n;
}

/* Reads t[key] (an array of rows of `width` numbers) into a fresh array; NULL rows when absent. */
static double *read_rows(lua_State *L, int t, const char *path, const char *key, uint32_t width, size_t *n_out)
{
    char p[256];
    dkv_lconf_path(p, sizeof p, path, key);
    dkv_lconf_subtable(L, t, path, key, DKV_LCONF_REQUIRED);
    int a = lua_gettop(L);
    dkv_lconf_check_keys_array(L, a, p, NULL, true);
    size_t n = lua_rawlen(L, a);
    double *rows = lua_newuserdatauv(L, (n ? n : 1) * width * sizeof *rows, 0);  /* freed by the GC */
    for (size_t i = 0; i < n; i++) {
        lua_rawgeti(L, a, (lua_Integer)i + 1);
        int r = lua_gettop(L);
        char rp[300];
        snprintf(rp, sizeof rp, "%s[%zu]", p, i + 1);
        if (!lua_istable(L, r) || lua_rawlen(L, r) != width)
            dkv_lconf_error(L, rp, NULL, "expected %u numbers (the fields, seconds%s), got %s", width,
                            width > 3 ? ", launches and any extra" : "",
                            lua_istable(L, r) ? "a row of another length" : luaL_typename(L, r));
        for (uint32_t c = 0; c < width; c++) {
            lua_rawgeti(L, r, (lua_Integer)c + 1);
            int ok = 0;
            double v = lua_tonumberx(L, -1, &ok);
            if (!ok)
                dkv_lconf_error(L, rp, NULL, "value %u: expected a number, got %s", c + 1, luaL_typename(L, -1));
            rows[i * width + c] = v;
            lua_pop(L, 1);
        }
        lua_pop(L, 1);
    }
    lua_remove(L, a);   /* the rows userdata stays on the stack */
    *n_out = n;
    return rows;
}

static void add_table(lua_State *L, dkv_profile *pr, dkv_prof_tab id, int t, const char *path, const char *file,
                      const char *const *fields, uint32_t nf, uint32_t n_extra, const char *rows_key)
{
    int top = lua_gettop(L);
    uint32_t width = nf + (id >= DKV_PT_COPY_ALONE ? 1 : 2) + n_extra;
    size_t n;
    double *rows = read_rows(L, t, path, rows_key, width, &n);
    dkv_err err = {0};
    char where[512];
    snprintf(where, sizeof where, "%s", file);
    if (dkv_profile_table_add(pr, id, fields, nf, n_extra, rows, n, where, &err) != DKV_OK)
        luaL_error(L, "%s", err.msg);
    lua_settop(L, top);
}

static void read_kernels(lua_State *L, int top, const char *file, dkv_profile *pr)
{
    static const char *names[DKV_PT_COPY_ALONE + 1];
    for (int i = 0; i < DKV_PT_COPY_ALONE; i++)
        names[i] = dkv_prof_tab_name((dkv_prof_tab)i);
    static const char *const tkeys[] = {"fields", "rows", "extra", "note", NULL};
    char kp[300];
    dkv_lconf_path(kp, sizeof kp, file, "kernels");
    if (!dkv_lconf_subtable(L, top, file, "kernels", DKV_LCONF_REQUIRED))
        return;
    int k = lua_gettop(L);
    dkv_lconf_check_keys(L, k, kp, names);
    for (int i = 0; i < DKV_PT_COPY_ALONE; i++) {
        if (!dkv_lconf_subtable(L, k, kp, names[i], 0))
            continue;
        int t = lua_gettop(L);
        char tp[320];
        dkv_lconf_path(tp, sizeof tp, kp, names[i]);
        dkv_lconf_check_keys(L, t, tp, tkeys);
        dkv_lconf_string(L, t, tp, "note", "", 0);
        const char *fields[DKV_PROF_FIELDS], *extra[16];
        uint32_t nf = read_names(L, t, tp, "fields", fields, DKV_PROF_FIELDS, true);
        uint32_t ne = read_names(L, t, tp, "extra", extra, 16, false);
        add_table(L, pr, (dkv_prof_tab)i, t, tp, file, fields, nf, ne, "rows");
        for (uint32_t e = 0; e < ne; e++) {
            dkv_err err = {0};
            if (strcmp(extra[e], "warm_s") == 0 && dkv_profile_table_warm(pr, (dkv_prof_tab)i, e, tp, &err) != DKV_OK)
                luaL_error(L, "%s", err.msg);
        }
        for (uint32_t e = 0; e < ne; e++) {   /* after warm_s: stream_s is read against it */
            dkv_err err = {0};
            if (strcmp(extra[e], "stream_s") == 0 && dkv_profile_table_stream(pr, (dkv_prof_tab)i, e, tp, &err) != DKV_OK)
                luaL_error(L, "%s", err.msg);
        }
        lua_settop(L, t - 1);
    }
    lua_pop(L, 1);
}

static void read_copy(lua_State *L, int top, const char *file, dkv_profile *pr)
{
    static const char *const ckeys[] = {"fields", "alone", "contended", "note", "load_gemm_alone_s",
                                        "load_gemm_beside_h2d_s", NULL};
    char cp[300];
    dkv_lconf_path(cp, sizeof cp, file, "copy");
    if (!dkv_lconf_subtable(L, top, file, "copy", 0))
        return;
    int c = lua_gettop(L);
    dkv_lconf_check_keys(L, c, cp, ckeys);
    dkv_lconf_string(L, c, cp, "note", "", 0);
    dkv_lconf_number(L, c, cp, "load_gemm_alone_s", 0, 0, HUGE_VAL, 0);       /* reported, not costed */
    dkv_lconf_number(L, c, cp, "load_gemm_beside_h2d_s", 0, 0, HUGE_VAL, 0);
    const char *fields[DKV_PROF_FIELDS];
    uint32_t nf = read_names(L, c, cp, "fields", fields, DKV_PROF_FIELDS, true);
    add_table(L, pr, DKV_PT_COPY_ALONE, c, cp, file, fields, nf, 0, "alone");
    add_table(L, pr, DKV_PT_COPY_CONTENDED, c, cp, file, fields, nf, 0, "contended");
    lua_settop(L, c - 1);
}

/* The largest first_s (extra column) of kernels.compress, or 0: the low-rank compressor's first call of
 * the profiling process, its module and workspace set-up (the backend pays it at its first COMPRESS
 * order; docs/COST_MODEL.md, "Cold shapes").  The table itself is checked by read_kernels. */
static double compress_first_s(lua_State *L, int top)
{
    double best = 0;
    int base = lua_gettop(L);
    if (lua_getfield(L, top, "kernels") == LUA_TTABLE && lua_getfield(L, -1, "compress") == LUA_TTABLE) {
        int c = lua_gettop(L);
        lua_Integer nf = lua_getfield(L, c, "fields") == LUA_TTABLE ? luaL_len(L, -1) : -1, col = -1;
        if (nf >= 0 && lua_getfield(L, c, "extra") == LUA_TTABLE) {
            for (lua_Integer i = 1; i <= luaL_len(L, -1); i++) {
                lua_geti(L, -1, i);
                if (lua_type(L, -1) == LUA_TSTRING && strcmp(lua_tostring(L, -1), "first_s") == 0)
                    col = nf + 2 + i;   /* fields, seconds, launches, then the extras (1-based) */
                lua_pop(L, 1);
            }
        }
        if (col > 0 && lua_getfield(L, c, "rows") == LUA_TTABLE)
            for (lua_Integer r = 1, rows = lua_gettop(L); r <= luaL_len(L, rows); r++) {
                if (lua_geti(L, rows, r) == LUA_TTABLE && lua_geti(L, -1, col) == LUA_TNUMBER) {
                    double v = lua_tonumber(L, -1);
                    best = isfinite(v) && v > best ? v : best;
                }
                lua_settop(L, rows);
            }
    }
    lua_settop(L, base);
    return best;
}


/* memory (optional): cuda/profile_mem.c's figures, bytes; each required when the table is there. */
static void read_memory(lua_State *L, int top, const char *file, dkv_profile_info *in)
{
    static const char *const keys[] = {"total_bytes", "context_bytes", "libraries_bytes", "blas_handle_bytes",
                                       "blas_handle_again_bytes", "first_launch_bytes", "method", "note", NULL};
    if (!dkv_lconf_subtable(L, top, file, "memory", 0))
        return;
    char mp[300];
    dkv_lconf_path(mp, sizeof mp, file, "memory");
    dkv_lconf_check_keys(L, lua_gettop(L), mp, keys);
    double tot = dkv_lconf_number(L, -1, mp, "total_bytes", 0, 1, HUGE_VAL, DKV_LCONF_REQUIRED);
    in->mem_context_bytes = dkv_lconf_number(L, -1, mp, "context_bytes", 0, 0, tot, DKV_LCONF_REQUIRED);
    /* a difference of two readings: may be slightly negative when nothing was added (free memory moves) */
    in->mem_libraries_bytes = dkv_lconf_number(L, -1, mp, "libraries_bytes", 0, -tot, tot, DKV_LCONF_REQUIRED);
    in->mem_blas_handle_bytes = dkv_lconf_number(L, -1, mp, "blas_handle_bytes", 0, -tot, tot, DKV_LCONF_REQUIRED);
    dkv_lconf_number(L, -1, mp, "blas_handle_again_bytes", 0, -tot, tot, 0);
    in->mem_first_launch_bytes = dkv_lconf_number(L, -1, mp, "first_launch_bytes", 0, -tot, tot, DKV_LCONF_REQUIRED);
    dkv_lconf_string(L, -1, mp, "method", "", 0);
    dkv_lconf_string(L, -1, mp, "note", "", 0);
    in->has_memory = true;
    lua_pop(L, 1);
}

/* attn_waves: {{head_dim = 64 | 128, group = 0 | 1, clusters = {8 counts}}, ...}, each pair once. */
static void read_attn_waves(lua_State *L, int top, const char *file, dkv_profile_info *in)
{
    if (!dkv_lconf_subtable(L, top, file, "attn_waves", 0))
        return;
    char ap[300];
    dkv_lconf_path(ap, sizeof ap, file, "attn_waves");
    int a = lua_gettop(L);
    dkv_lconf_check_keys_array(L, a, ap, NULL, true);
    static const char *const keys[] = {"head_dim", "group", "clusters", NULL};
    for (lua_Integer i = 1; i <= (lua_Integer)lua_rawlen(L, a); i++) {
        char ep[340];
        snprintf(ep, sizeof ep, "%s[%lld]", ap, (long long)i);
        lua_rawgeti(L, a, i);
        int e = lua_gettop(L);
        dkv_lconf_check_table(L, e, ep);
        dkv_lconf_check_keys(L, e, ep, keys);
        int64_t d = dkv_lconf_integer(L, e, ep, "head_dim", 0, 64, 128, DKV_LCONF_REQUIRED);
        if (d != 64 && d != 128)
            dkv_lconf_error(L, ep, "head_dim", "must be 64 or 128 (the kernel's head sizes), got %lld", (long long)d);
        int64_t g = dkv_lconf_integer(L, e, ep, "group", 0, 0, 1, DKV_LCONF_REQUIRED);
        double *c = in->attn_clusters[d == 128][g];
        if (c[0] > 0)
            dkv_lconf_error(L, ep, NULL, "head_dim %lld, group %lld is given twice", (long long)d, (long long)g);
        char cp[360];
        dkv_lconf_path(cp, sizeof cp, ep, "clusters");
        dkv_lconf_subtable(L, e, ep, "clusters", DKV_LCONF_REQUIRED);
        dkv_lconf_check_keys_array(L, lua_gettop(L), cp, NULL, true);
        if (lua_rawlen(L, -1) != 8)
            dkv_lconf_error(L, cp, NULL, "expected 8 counts (1..8 key splits), got %zu", (size_t)lua_rawlen(L, -1));
        for (int s = 0; s < 8; s++) {
            lua_rawgeti(L, -1, s + 1);
            int isnum = 0;
            lua_Integer v = lua_tointegerx(L, -1, &isnum);
            if (!isnum || v < 1 || v > 1000000)
                dkv_lconf_error(L, cp, NULL, "count %d: expected an integer in [1, 1000000], got %s", s + 1,
                                lua_isnumber(L, -1) ? lua_tostring(L, -1) : luaL_typename(L, -1));
            c[s] = (double)v;
            lua_pop(L, 1);
        }
        lua_pop(L, 2);
    }
    lua_pop(L, 1);
}

/* An array of 1..max numbers at t[key] (on the stack: index t) into v, each in [lo, hi] and, with
 * increasing, above the one before; returns the count. */
static uint32_t read_points(lua_State *L, int t, const char *path, const char *key, double lo, double hi,
                            bool increasing, uint32_t max, double *v)
{
    char p[400];
    dkv_lconf_path(p, sizeof p, path, key);
    dkv_lconf_subtable(L, t, path, key, DKV_LCONF_REQUIRED);
    int a = lua_gettop(L);
    dkv_lconf_check_keys_array(L, a, p, NULL, true);
    size_t n = lua_rawlen(L, a);
    if (n < 1 || n > max)
        dkv_lconf_error(L, p, NULL, "expected 1 to %u numbers, got %zu", max, n);
    for (size_t i = 0; i < n; i++) {
        lua_rawgeti(L, a, (lua_Integer)i + 1);
        int ok = 0;
        double x = lua_tonumberx(L, -1, &ok);
        if (!ok || !(x >= lo && x <= hi) || (increasing && i > 0 && !(x > v[i - 1])))
            dkv_lconf_error(L, p, NULL, "value %zu: expected a number in [%g, %g]%s, got %s", i + 1, lo, hi,
                            increasing ? " above the one before" : "",
                            lua_isnumber(L, -1) ? lua_tostring(L, -1) : luaL_typename(L, -1));
        v[i] = x;
        lua_pop(L, 1);
    }
    lua_pop(L, 1);
    return (uint32_t)n;
}

/* clock (PROFILE_FORMAT.md "clock"): every field required when the block is given. */
static void read_clock(lua_State *L, int top, const char *file, dkv_profile_info *in)
{
    if (!dkv_lconf_subtable(L, top, file, "clock", 0))
        return;
    static const char *const keys[] = {"note", "max_mhz", "lag_s", "window_s", "follow", "gemm_sens", "attn_sens",
                                       "gemm_mhz", "settle", "attn_mhz", NULL};
    static const char *const skeys[] = {"rows", "mhz", "other_mhz", NULL};
    static const char *const gkeys[] = {"lo_rows", "hi_rows", "sens", NULL}, *const akeys[] = {"reuse", "refresh", NULL};
    static const char *const fkeys[] = {"down_s", "up_s", NULL};
    static const char *const ckeys[] = {"qkv", "o", "ffn", "lm_head", NULL}, *const pkeys[] = {"rows", "mhz", NULL};
    char cp[300], sp[340];
    dkv_lconf_path(cp, sizeof cp, file, "clock");
    int c = lua_gettop(L);
    dkv_lconf_check_keys(L, c, cp, keys);
    dkv_lconf_string(L, c, cp, "note", "", 0);
    in->clock_max_mhz = dkv_lconf_number(L, c, cp, "max_mhz", 0, 1, 100000, DKV_LCONF_REQUIRED);
    /* the clock the step runs at: the window form (lag_s, window_s) or the follow form, one of them */
    lua_getfield(L, c, "follow");
    bool follows = !lua_isnil(L, -1);
    lua_pop(L, 1);
    if (follows) {
        for (int k = 0; k < 2; k++) {
            const char *w = k ? "window_s" : "lag_s";
            lua_getfield(L, c, w);
            if (!lua_isnil(L, -1))
                dkv_lconf_error(L, cp, w, "cannot take effect beside follow (the window form or the follow form, not both)");
            lua_pop(L, 1);
        }
        dkv_lconf_path(sp, sizeof sp, cp, "follow");
        dkv_lconf_subtable(L, c, cp, "follow", DKV_LCONF_REQUIRED);
        dkv_lconf_check_keys(L, lua_gettop(L), sp, fkeys);
        in->clock_down_s = dkv_lconf_number(L, -1, sp, "down_s", 0, 0, 100, DKV_LCONF_REQUIRED | DKV_LCONF_LO_OPEN);
        in->clock_up_s = dkv_lconf_number(L, -1, sp, "up_s", 0, 0, 100, DKV_LCONF_REQUIRED | DKV_LCONF_LO_OPEN);
        lua_pop(L, 1);
    } else {
        in->clock_lag_s = dkv_lconf_number(L, c, cp, "lag_s", 0, 0, 10, DKV_LCONF_REQUIRED);
        in->clock_window_s = dkv_lconf_number(L, c, cp, "window_s", 0, 0, 10, DKV_LCONF_REQUIRED);
    }
    dkv_lconf_path(sp, sizeof sp, cp, "gemm_sens");
    dkv_lconf_subtable(L, c, cp, "gemm_sens", DKV_LCONF_REQUIRED);
    dkv_lconf_check_keys(L, lua_gettop(L), sp, gkeys);
    in->clock_gemm_lo_rows = dkv_lconf_number(L, -1, sp, "lo_rows", 0, 1, 1e9, DKV_LCONF_REQUIRED);
    in->clock_gemm_hi_rows = dkv_lconf_number(L, -1, sp, "hi_rows", 0, 1, 1e9, DKV_LCONF_REQUIRED);
    if (!(in->clock_gemm_hi_rows > in->clock_gemm_lo_rows))
        dkv_lconf_error(L, sp, "hi_rows", "must be above lo_rows (%g), got %g", in->clock_gemm_lo_rows,
                        in->clock_gemm_hi_rows);
    in->clock_gemm_sens = dkv_lconf_number(L, -1, sp, "sens", 0, 0, 2, DKV_LCONF_REQUIRED);
    lua_pop(L, 1);
    dkv_lconf_path(sp, sizeof sp, cp, "attn_sens");
    dkv_lconf_subtable(L, c, cp, "attn_sens", DKV_LCONF_REQUIRED);
    dkv_lconf_check_keys(L, lua_gettop(L), sp, akeys);
    in->clock_reuse_sens = dkv_lconf_number(L, -1, sp, "reuse", 0, 0, 2, DKV_LCONF_REQUIRED);
    in->clock_refresh_sens = dkv_lconf_number(L, -1, sp, "refresh", 0, 0, 2, DKV_LCONF_REQUIRED);
    lua_pop(L, 1);
    dkv_lconf_path(sp, sizeof sp, cp, "gemm_mhz");
    dkv_lconf_subtable(L, c, cp, "gemm_mhz", DKV_LCONF_REQUIRED);
    int g = lua_gettop(L);
    dkv_lconf_check_keys(L, g, sp, ckeys);
    for (int k = 0; k < 4; k++) {
        char kp[380];
        dkv_lconf_path(kp, sizeof kp, sp, ckeys[k]);
        dkv_lconf_subtable(L, g, sp, ckeys[k], DKV_LCONF_REQUIRED);
        int e = lua_gettop(L);
        dkv_lconf_check_keys(L, e, kp, pkeys);
        uint32_t nr = read_points(L, e, kp, "rows", 1, 1e9, true, DKV_PROFILE_CLOCK_PTS, in->clock_rows[k]);
        uint32_t nm = read_points(L, e, kp, "mhz", 1, in->clock_max_mhz, false, DKV_PROFILE_CLOCK_PTS, in->clock_mhz[k]);
        if (nr != nm)
            dkv_lconf_error(L, kp, "mhz", "has %u values for %u rows", nm, nr);
        in->clock_n[k] = nr;
        lua_pop(L, 1);
    }
    lua_pop(L, 1);
    in->clock_attn_mhz = dkv_lconf_number(L, c, cp, "attn_mhz", 0, 1, in->clock_max_mhz, 0);
    /* settle (optional): the clocks sustained work settles at, apart from the rows' own */
    if (dkv_lconf_subtable(L, c, cp, "settle", 0)) {
        dkv_lconf_path(sp, sizeof sp, cp, "settle");
        int e = lua_gettop(L);
        dkv_lconf_check_keys(L, e, sp, skeys);
        uint32_t nr = read_points(L, e, sp, "rows", 1, 1e9, true, DKV_PROFILE_CLOCK_PTS, in->clock_settle_rows);
        uint32_t nm = read_points(L, e, sp, "mhz", 1, in->clock_max_mhz, false, DKV_PROFILE_CLOCK_PTS,
                                  in->clock_settle_mhz);
        if (nr != nm)
            dkv_lconf_error(L, sp, "mhz", "has %u values for %u rows", nm, nr);
        in->clock_settle_n = nr;
        in->clock_settle_other_mhz = dkv_lconf_number(L, e, sp, "other_mhz", 0, 1, in->clock_max_mhz,
                                                      DKV_LCONF_REQUIRED);
        lua_pop(L, 1);
    }
    lua_pop(L, 1);
}

/* A block of GEMM shapes (gemm_splitk, gemm_reads, gemm_left, gemm_store, gemm_steps): pushes the array and returns its length, 1 to max (an
 * error otherwise); 0, nothing pushed, when the block is absent.  Its path goes to ap. */
static size_t shape_array(lua_State *L, int top, const char *file, const char *key, size_t max, char *ap, size_t apn)
{
    if (!dkv_lconf_subtable(L, top, file, key, 0))
        return 0;
    dkv_lconf_path(ap, apn, file, key);
    dkv_lconf_check_keys_array(L, lua_gettop(L), ap, NULL, true);
    size_t n = lua_rawlen(L, -1);
    if (n < 1 || n > max)
        dkv_lconf_error(L, ap, NULL, "expected 1 to %zu GEMM shapes, got %zu", max, n);
    return n;
}

/* Entry i of the shape array at index a (path ap): pushes it, checks its keys, reads its optional model /
 * class names and its n and k into nk[i] (a shape given twice is an error); returns its index, its path in ep. */
static int shape_entry(lua_State *L, int a, const char *ap, size_t i, const char *const *keys, double (*nk)[2],
                       char *ep, size_t epn)
{
    snprintf(ep, epn, "%s[%zu]", ap, i + 1);
    lua_rawgeti(L, a, (lua_Integer)i + 1);
    int e = lua_gettop(L);
    dkv_lconf_check_table(L, e, ep);
    dkv_lconf_check_keys(L, e, ep, keys);
    dkv_lconf_string(L, e, ep, "model", "", 0);
    dkv_lconf_string(L, e, ep, "class", "", 0);
    double N = (double)dkv_lconf_integer(L, e, ep, "n", 0, 1, 1 << 24, DKV_LCONF_REQUIRED);
    double K = (double)dkv_lconf_integer(L, e, ep, "k", 0, 1, 1 << 24, DKV_LCONF_REQUIRED);
    for (size_t j = 0; j < i; j++)
        if (nk[j][0] == N && nk[j][1] == K)
            dkv_lconf_error(L, ep, NULL, "n %g, k %g is given twice (also entry %zu)", N, K, j + 1);
    nk[i][0] = N, nk[i][1] = K;
    return e;
}

/* gemm_splitk (PROFILE_FORMAT.md "gemm_splitk"): an array of GEMM shapes, each {n, k, rows, splitk} (and
 * optional model / class names); a shape given twice, rows not starting at 8 or not increasing, and counts
 * outside 1..64 are errors. */
static void read_gemm_splitk(lua_State *L, int top, const char *file, dkv_profile_info *in)
{
    char ap[300], ep[340];
    size_t n = shape_array(L, top, file, "gemm_splitk", DKV_PROFILE_SPLITK_SHAPES, ap, sizeof ap);
    if (n == 0)
        return;
    int a = lua_gettop(L);
    static const char *const keys[] = {"model", "class", "n", "k", "rows", "splitk", NULL};
    for (size_t i = 0; i < n; i++) {
        int e = shape_entry(L, a, ap, i, keys, in->splitk_nk, ep, sizeof ep);
        uint32_t nr = read_points(L, e, ep, "rows", 8, DKV_GEMM_WARM_MAX_ROWS, true, DKV_PROFILE_SPLITK_PTS,
                                  in->splitk_rows[i]);
        uint32_t nv = read_points(L, e, ep, "splitk", 1, 64, false, DKV_PROFILE_SPLITK_PTS, in->splitk_val[i]);
        if (nr != nv)
            dkv_lconf_error(L, ep, "splitk", "has %u values for %u rows", nv, nr);
        if (in->splitk_rows[i][0] != 8)
            dkv_lconf_error(L, ep, "rows", "must start at 8 (the first warm-up row count), got %g", in->splitk_rows[i][0]);
        for (uint32_t j = 0; j < nv; j++)
            if (in->splitk_val[i][j] != floor(in->splitk_val[i][j]))
                dkv_lconf_error(L, ep, "splitk", "value %u: expected a whole number, got %g", j + 1, in->splitk_val[i][j]);
        in->splitk_pts[i] = nr;
        lua_pop(L, 1);
    }
    in->splitk_n = (uint32_t)n;
    lua_pop(L, 1);
}

/* gemm_reads, gemm_left, gemm_store and gemm_steps (PROFILE_FORMAT.md): an array of GEMM shapes, each {n, k, beta, rows,
 * VALUE} (and optional model / class names; VALUE "read", "left", "found" or "ratio"); a shape given twice, rows that
 * are not increasing warm-up row counts (multiples of 8 up to 8,192), a beta other than 0 or 1, and values
 * outside [lo, hi] are errors.  Into nk and bytes (by bucket), has (when not NULL) marking the buckets given;
 * returns the number of shapes. */
static uint32_t read_gemm_by_rows(lua_State *L, int top, const char *file, const char *key, const char *value,
                                  double lo, double hi, double (*nk)[2], float (*bytes)[DKV_PROFILE_READS_PTS],
                                  uint8_t (*has)[DKV_PROFILE_READS_PTS])
{
    char ap[300], ep[340];
    size_t n = shape_array(L, top, file, key, DKV_PROFILE_READS_SHAPES, ap, sizeof ap);
    if (n == 0)
        return 0;
    int a = lua_gettop(L);
    const char *const keys[] = {"model", "class", "n", "k", "beta", "rows", value, NULL};
    double rows[DKV_PROFILE_READS_PTS], v[DKV_PROFILE_READS_PTS];
    for (size_t i = 0; i < n; i++) {
        int e = shape_entry(L, a, ap, i, keys, nk, ep, sizeof ep);
        dkv_lconf_integer(L, e, ep, "beta", 0, 0, 1, DKV_LCONF_REQUIRED);
        uint32_t nr = read_points(L, e, ep, "rows", DKV_GEMM_WARM_STEP, DKV_GEMM_WARM_MAX_ROWS, true,
                                  DKV_PROFILE_READS_PTS, rows);
        uint32_t nv = read_points(L, e, ep, value, lo, hi, false, DKV_PROFILE_READS_PTS, v);
        if (nr != nv)
            dkv_lconf_error(L, ep, value, "has %u values for %u rows", nv, nr);
        for (uint32_t j = 0; j < nr; j++) {
            if (fmod(rows[j], DKV_GEMM_WARM_STEP) != 0)
                dkv_lconf_error(L, ep, "rows", "value %u: %g is not a warm-up row count (a multiple of %u)", j + 1,
                                rows[j], DKV_GEMM_WARM_STEP);
            uint32_t b = (uint32_t)rows[j] / DKV_GEMM_WARM_STEP - 1;
            bytes[i][b] = (float)v[j];
            if (has)
                has[i][b] = 1;
        }
        lua_pop(L, 1);
    }
    lua_pop(L, 1);
    return (uint32_t)n;
}

/* provenance, first_use, host, memory: the scalar parts of the file. */
static void read_info(lua_State *L, int top, const char *file, dkv_profile_info *in)
{
    int64_t format = dkv_lconf_integer(L, top, file, "format", 0, 1, 1, DKV_LCONF_REQUIRED);
    (void)format;
    snprintf(in->name, sizeof in->name, "%s", dkv_lconf_string(L, top, file, "name", NULL, DKV_LCONF_REQUIRED));
    char pp[300];
    dkv_lconf_path(pp, sizeof pp, file, "provenance");
    dkv_lconf_subtable(L, top, file, "provenance", DKV_LCONF_REQUIRED);
    int p = lua_gettop(L);
    snprintf(in->gpu, sizeof in->gpu, "%s", dkv_lconf_string(L, p, pp, "gpu", NULL, DKV_LCONF_REQUIRED));
    snprintf(in->date, sizeof in->date, "%s", dkv_lconf_string(L, p, pp, "date", NULL, DKV_LCONF_REQUIRED));
    lua_getfield(L, p, "dkv_commit");
    if (lua_type(L, -1) == LUA_TSTRING)
        snprintf(in->dkv_commit, sizeof in->dkv_commit, "%s", lua_tostring(L, -1));
    lua_pop(L, 1);
    in->measured = dkv_lconf_boolean(L, p, pp, "measured", false, DKV_LCONF_REQUIRED);
    lua_pop(L, 1);
    read_memory(L, top, file, in);
    read_attn_waves(L, top, file, in);
    read_clock(L, top, file, in);
    read_gemm_splitk(L, top, file, in);
    in->reads_n = read_gemm_by_rows(L, top, file, "gemm_reads", "read", 1, 1e13, in->reads_nk, in->reads_bytes, NULL);
    in->left_n = read_gemm_by_rows(L, top, file, "gemm_left", "left", 0, 1e13, in->left_nk, in->left_bytes,
                                   in->left_has);
    in->store_n = read_gemm_by_rows(L, top, file, "gemm_store", "found", 0, 1e13, in->store_nk, in->store_bytes,
                                    in->store_has);
    in->steps_n = read_gemm_by_rows(L, top, file, "gemm_steps", "ratio", 0.25, 4, in->steps_nk, in->steps_ratio,
                                    in->steps_has);
    static const char *const fkeys[] = {"gemm_s", "attn_s", "other_s", "compress_s", "gemm_max_s", "attn_max_s",
                                        "other_max_s", "gemm_shapes", "attn_shapes", "other_shapes", "note", NULL};
    static const char *const hkeys[] = {"base_s", "per_item_s", "per_launch_s", "per_gemm_launch_s", "resume_s",
                                        "handover_s", "note", NULL};
    char sp[300];
    if (dkv_lconf_subtable(L, top, file, "first_use", 0)) {
        dkv_lconf_path(sp, sizeof sp, file, "first_use");
        dkv_lconf_check_keys(L, lua_gettop(L), sp, fkeys);
        in->first_gemm_s = dkv_lconf_number(L, -1, sp, "gemm_s", 0, 0, HUGE_VAL, DKV_LCONF_REQUIRED);
        in->first_attn_s = dkv_lconf_number(L, -1, sp, "attn_s", 0, 0, HUGE_VAL, DKV_LCONF_REQUIRED);
        in->first_other_s = dkv_lconf_number(L, -1, sp, "other_s", 0, 0, HUGE_VAL, DKV_LCONF_REQUIRED);
        if (lua_getfield(L, -1, "compress_s") != LUA_TNIL)   /* else derived from kernels.compress (parse) */
            in->first_compress_s = dkv_lconf_number(L, -2, sp, "compress_s", 0, 0, HUGE_VAL, DKV_LCONF_REQUIRED);
        lua_pop(L, 1);
        static const char *const rep[] = {"gemm_max_s", "attn_max_s", "other_max_s", "gemm_shapes", "attn_shapes",
                                          "other_shapes", NULL};
        for (int i = 0; rep[i]; i++)   /* reported, not costed: checked only */
            dkv_lconf_number(L, -1, sp, rep[i], 0, 0, HUGE_VAL, 0);
        dkv_lconf_string(L, -1, sp, "note", "", 0);
        lua_pop(L, 1);
    }
    if (dkv_lconf_subtable(L, top, file, "hold", 0)) {   /* the clocks' hold after heavy steps */
        static const char *const okeys[] = {"after_s", "window_s", "slowdown", "note", NULL};
        dkv_lconf_path(sp, sizeof sp, file, "hold");
        dkv_lconf_check_keys(L, lua_gettop(L), sp, okeys);
        dkv_lconf_string(L, -1, sp, "note", "", 0);
        in->hold_after_s = dkv_lconf_number(L, -1, sp, "after_s", 0, 0, HUGE_VAL, DKV_LCONF_REQUIRED);
        in->hold_window_s = dkv_lconf_number(L, -1, sp, "window_s", 0, 0, HUGE_VAL, DKV_LCONF_REQUIRED);
        in->hold_slowdown = dkv_lconf_number(L, -1, sp, "slowdown", 0, 0, 10, DKV_LCONF_REQUIRED);
        lua_pop(L, 1);
    }
    if (dkv_lconf_subtable(L, top, file, "host", 0)) {
        dkv_lconf_path(sp, sizeof sp, file, "host");
        dkv_lconf_check_keys(L, lua_gettop(L), sp, hkeys);
        dkv_lconf_string(L, -1, sp, "note", "", 0);
        /* base_s, per_item_s: the engine's planning per step (dkv.execute's host_plan_s records);
         * per_launch_s, per_gemm_launch_s: enqueue of one launch (dkv profile's host section) */
        in->host_base_s = dkv_lconf_number(L, -1, sp, "base_s", 0, 0, HUGE_VAL, 0);
        in->host_per_item_s = dkv_lconf_number(L, -1, sp, "per_item_s", 0, 0, HUGE_VAL, 0);
        in->host_per_launch_s = dkv_lconf_number(L, -1, sp, "per_launch_s", 0, 0, HUGE_VAL, DKV_LCONF_REQUIRED);
        in->host_per_gemm_launch_s = dkv_lconf_number(L, -1, sp, "per_gemm_launch_s", in->host_per_launch_s, 0,
                                                      HUGE_VAL, 0);
        /* resume_s, handover_s: the GPU's idle time between two steps of one thread / of two threads
         * handing the GPU over (dkv profile's host section); both or neither */
        in->host_resume_s = dkv_lconf_number(L, -1, sp, "resume_s", 0, 0, HUGE_VAL, 0);
        in->host_handover_s = dkv_lconf_number(L, -1, sp, "handover_s", 0, 0, HUGE_VAL, 0);
        if ((in->host_resume_s > 0) != (in->host_handover_s > 0))
            luaL_error(L, "%s: resume_s and handover_s come together (one measurement)", sp);
        lua_pop(L, 1);
    }
}

/* A sustained run's duty fields (kind duty: required; any other kind: none of them). */
static void read_duty(lua_State *L, int e, const char *ep, bool duty)
{
    static const char *const f[] = {"gap_s", "step_calls", "cycle_s"};
    if (!duty) {
        for (int i = 0; i < 3; i++) {
            lua_getfield(L, e, f[i]);
            if (!lua_isnil(L, -1))
                dkv_lconf_error(L, ep, f[i], "only a run of kind \"duty\" has it");
            lua_pop(L, 1);
        }
        return;
    }
    double gap = dkv_lconf_number(L, e, ep, "gap_s", 0, 0, 1, DKV_LCONF_REQUIRED);
    dkv_lconf_integer(L, e, ep, "step_calls", 0, 1, 100000, DKV_LCONF_REQUIRED);
    double cyc = dkv_lconf_number(L, e, ep, "cycle_s", 0, 1e-9, 3600, DKV_LCONF_REQUIRED);
    if (cyc < gap)
        dkv_lconf_error(L, ep, "cycle_s", "%g s is shorter than gap_s %g s (a step's start to the next's holds the "
                        "gap)", cyc, gap);
}

/* sustained (optional; `dkv profile --sustain`): checked, not costed (scripts/clock_model.py sustained reads it). */
static void read_sustained(lua_State *L, int top, const char *file)
{
    static const char *const keys[] = {"seconds", "windows", "lead_s", "runs", NULL};
    static const char *const rkeys[] = {"model", "kind", "rows", "keys", "calls", "call_s", "nvml_mhz", "mhz",
                                        "gap_s", "step_calls", "cycle_s", NULL};
    if (!dkv_lconf_subtable(L, top, file, "sustained", 0))
        return;
    char sp[300], rp[340];
    dkv_lconf_path(sp, sizeof sp, file, "sustained");
    int s = lua_gettop(L);
    dkv_lconf_check_keys(L, s, sp, keys);
    dkv_lconf_number(L, s, sp, "seconds", 0, 0.01, 3600, DKV_LCONF_REQUIRED);
    int64_t w = dkv_lconf_integer(L, s, sp, "windows", 0, 1, 64, DKV_LCONF_REQUIRED);
    dkv_lconf_number(L, s, sp, "lead_s", 0.3, 0, 3600, 0);   /* optional: call 86's runs predate it (0.3 s) */
    dkv_lconf_path(rp, sizeof rp, sp, "runs");
    dkv_lconf_subtable(L, s, sp, "runs", DKV_LCONF_REQUIRED);
    int a = lua_gettop(L);
    dkv_lconf_check_keys_array(L, a, rp, NULL, true);
    for (lua_Integer i = 1; i <= (lua_Integer)lua_rawlen(L, a); i++) {
        char ep[380];
        snprintf(ep, sizeof ep, "%s[%lld]", rp, (long long)i);
        lua_rawgeti(L, a, i);
        int e = lua_gettop(L);
        dkv_lconf_check_table(L, e, ep);
        dkv_lconf_check_keys(L, e, ep, rkeys);
        if (!*dkv_lconf_string(L, e, ep, "model", "", DKV_LCONF_REQUIRED))
            dkv_lconf_error(L, ep, "model", "must name the model");
        const char *k = dkv_lconf_string(L, e, ep, "kind", "", DKV_LCONF_REQUIRED);
        if (strcmp(k, "gemm") != 0 && strcmp(k, "attn") != 0 && strcmp(k, "layer") != 0 && strcmp(k, "duty") != 0)
            dkv_lconf_error(L, ep, "kind", "must be \"gemm\", \"attn\", \"layer\" or \"duty\", got \"%s\"", k);
        read_duty(L, e, ep, strcmp(k, "duty") == 0);
        dkv_lconf_number(L, e, ep, "rows", 0, 1, 1e7, DKV_LCONF_REQUIRED);
        dkv_lconf_number(L, e, ep, "keys", 0, 0, 1e8, DKV_LCONF_REQUIRED);
        dkv_lconf_integer(L, e, ep, "calls", 0, 1, INT64_C(1) << 40, DKV_LCONF_REQUIRED);
        dkv_lconf_number(L, e, ep, "call_s", 0, 1e-9, 3600, DKV_LCONF_REQUIRED);
        dkv_lconf_number(L, e, ep, "nvml_mhz", 0, 0, 1e5, DKV_LCONF_REQUIRED);
        double mhz[64];
        if (read_points(L, e, ep, "mhz", 0, 1e5, false, 64, mhz) != (uint32_t)w)
            dkv_lconf_error(L, ep, "mhz", "expected %lld values (sustained.windows)", (long long)w);
        lua_pop(L, 1);
    }
    lua_settop(L, s - 1);
}

/* Parses the table at top (from file) into a new profile; raises on any error. */
static dkv_profile *parse(lua_State *L, int top, const char *file, prof_box *box)
{
    static const char *const keys[] = {"format", "name", "provenance", "kernels", "copy", "first_use", "host",
                                       "hold", "memory", "attn_waves", "clock", "gemm_splitk", "gemm_reads", "gemm_left",
                                       "gemm_store", "gemm_steps", "sustained", "complete", "incomplete", NULL};
    dkv_lconf_check_keys(L, top, file, keys);
    dkv_lconf_boolean(L, top, file, "complete", true, 0);     /* a cut run loads with what it measured */
    dkv_lconf_string(L, top, file, "incomplete", "", 0);
    /* large (the GEMM blocks by bucket): a Lua userdata, not the C stack, freed by the GC on an error */
    dkv_profile_info *in = lua_newuserdatauv(L, sizeof *in, 0);
    memset(in, 0, sizeof *in);
    in->first_compress_s = -1;
    read_info(L, top, file, in);
    if (in->first_compress_s < 0)   /* first_use.compress_s not given (or no first_use) */
        in->first_compress_s = compress_first_s(L, top);
    dkv_err err = {0};
    if (dkv_profile_new(in, &box->p, &err) != DKV_OK)
        luaL_error(L, "%s: %s", file, err.msg);
    read_kernels(L, top, file, box->p);
    read_copy(L, top, file, box->p);
    read_sustained(L, top, file);
    if (dkv_profile_finish(box->p, file, &err) != DKV_OK)
        luaL_error(L, "%s", err.msg);
    return box->p;
}

const dkv_profile *dkv_lua_load_profile(lua_State *L, const char *name, const char *path)
{
    if (!valid_name(name))
        dkv_lconf_error(L, path, NULL, "bad profile name '%s' (use a-z 0-9 - _ .)", name);
    luaL_getsubtable(L, LUA_REGISTRYINDEX, PROF_CACHE);
    lua_getfield(L, -1, name);
    if (!lua_isnil(L, -1)) {
        prof_box *b = luaL_checkudata(L, -1, PROF_META);
        lua_pop(L, 2);
        return b->p;
    }
    lua_pop(L, 1);
    int cache = lua_gettop(L);
    prof_box *b = lua_newuserdatauv(L, sizeof *b, 0);
    b->p = NULL;
    if (luaL_newmetatable(L, PROF_META)) {
        lua_pushcfunction(L, box_gc);
        lua_setfield(L, -2, "__gc");
    }
    lua_setmetatable(L, -2);
    int box = lua_gettop(L);
    char file[4096];
    snprintf(file, sizeof file, "%s/datasets/profiles/%s.lua", dkv_lua_root(L), name);
    char rel[128];
    snprintf(rel, sizeof rel, "datasets/profiles/%s.lua", name);
    load_file(L, file, path);
    parse(L, lua_gettop(L), rel, b);
    lua_settop(L, box);
    lua_setfield(L, cache, name);   /* the state owns it from here */
    lua_pop(L, 1);
    return b->p;
}
