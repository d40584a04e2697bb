/* presets.c - GPU and model presets: loading the data files, merging `base`, checking fields. */
#include "lua/presets.h"

#include <dirent.h>
#include <lauxlib.h>
#include <lualib.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cost/profile.h"
#include "engine/backend.h"
#include "lua/dkv_lua.h"
#include "lua/lconf.h"
#include "lua/profile_load.h"
#include "workload/tokenizer.h"

/* ------------------------------------------------------------------ field tables */

typedef enum { PF_STR, PF_U32, PF_F64, PF_BOOL, PF_DTYPE, PF_DOC, PF_CURVE, PF_KCLASS, PF_TOKENIZER, PF_PROFILE,
               PF_TEXT } pf_type;

typedef struct pfield {
    const char *name;
    pf_type type;
    size_t off;
    int required;      /* needed when there is no base */
    double lo;         /* lower bound (inclusive unless lo_open) */
    int lo_open;
    double hi;         /* PF_F64: upper bound (inclusive unless hi_open); 0: none (every number is finite,
                        * lconf.h) */
    int hi_open;
} pfield;

#define MF(f, t, req, lo, open) {#f, t, offsetof(dkv_model, f), req, lo, open, 0, 0}
static const pfield model_fields[] = {
    {"name", PF_STR, offsetof(dkv_model, name), 0, 0, 0, 0, 0},
    {"source", PF_DOC, 0, 0, 0, 0, 0, 0},
    {"base", PF_DOC, 0, 0, 0, 0, 0, 0},
    MF(n_layers, PF_U32, 1, 1, 0),
    MF(hidden, PF_U32, 1, 1, 0),
    MF(ffn, PF_U32, 1, 1, 0),
    MF(n_heads, PF_U32, 1, 1, 0),
    MF(n_kv_heads, PF_U32, 1, 1, 0),
    MF(head_dim, PF_U32, 1, 1, 0),
    MF(vocab, PF_U32, 1, 1, 0),
    MF(mask_id, PF_U32, 1, 0, 0),
    MF(max_len, PF_U32, 1, 1, 0),
    MF(rope_theta, PF_F64, 1, 0, 1),
    MF(tied_embeddings, PF_BOOL, 0, 0, 0),
    MF(qkv_bias, PF_BOOL, 0, 0, 0),
    MF(weight_dtype, PF_DTYPE, 0, 0, 0),
    MF(kv_dtype, PF_DTYPE, 0, 0, 0),
    MF(act_dtype, PF_DTYPE, 0, 0, 0),
    MF(tokenizer, PF_TOKENIZER, 0, 0, 0),
};
#undef MF

#define GF(f, t, req, lo, open) {#f, t, offsetof(dkv_gpu, f), req, lo, open, 0, 0}
/* with an upper bound: hi_open 1 for [lo, hi) */
#define GFH(f, t, req, lo, open, hi, hi_open) {#f, t, offsetof(dkv_gpu, f), req, lo, open, hi, hi_open}
/* a byte count: < 2^64, like the configuration's (a larger one overflows the budget's integers) */
#define BYTES_MAX 0x1p64
/* a per-call time (launch, cudaMalloc, cudaFree): at most DKV_LCONF_EVENT_S_MAX, as the configuration's */
#define CALL_S_MAX DKV_LCONF_EVENT_S_MAX
static const pfield gpu_fields[] = {
    {"name", PF_STR, offsetof(dkv_gpu, name), 0, 0, 0, 0, 0},
    {"source", PF_DOC, 0, 0, 0, 0, 0, 0},
    {"base", PF_DOC, 0, 0, 0, 0, 0, 0},
    GFH(hbm_bytes, PF_F64, 1, 0, 1, BYTES_MAX, 1),
    GF(hbm_bw, PF_F64, 1, 0, 1),
    GF(flops_bf16, PF_F64, 1, 0, 1),
    GF(flops_fp32, PF_F64, 0, 0, 0),
    GF(pcie_h2d_pinned, PF_F64, 1, 0, 1),
    GF(pcie_d2h_pinned, PF_F64, 1, 0, 1),
    GF(pcie_bidir_pinned, PF_F64, 0, 0, 0),
    GF(pcie_h2d_pageable, PF_F64, 1, 0, 1),
    GF(pcie_d2h_pageable, PF_F64, 1, 0, 1),
    GFH(launch_overhead_s, PF_F64, 0, 0, 0, CALL_S_MAX, 0),
    GFH(malloc_s, PF_F64, 0, 0, 0, CALL_S_MAX, 0),
    GFH(free_s, PF_F64, 0, 0, 0, CALL_S_MAX, 0),
    GF(cost_per_hour, PF_F64, 0, 0, 0),
    GF(n_sms, PF_U32, 0, 0, 0),
    GFH(l2_bytes, PF_F64, 0, 0, 0, BYTES_MAX, 1),
    GF(l2_partitions, PF_U32, 0, 0, 0),
    GF(max_num_logits, PF_U32, 0, 1, 0),
    GF(max_num_batched_tokens, PF_U32, 0, 1, 0),
    GF(retention, PF_F64, 0, 0, 1),
    {"bw_curve", PF_CURVE, offsetof(dkv_gpu, bw_curve), 0, 0, 0, 0, 0},
    {"kclass", PF_KCLASS, offsetof(dkv_gpu, kclass), 0, 0, 0, 0, 0},
    {"profile", PF_PROFILE, offsetof(dkv_gpu, profile_name), 0, 0, 0, 0, 0},
    /* how far the preset's simulated results may be off (roofline-only presets: the roofline's error measured on the
     * H200 and H100s; measured ones: their held-out errors); carried into each simulated run */
    {"expected_error", PF_TEXT, offsetof(dkv_gpu, expected_error), 0, 0, 0, 0, 0},
};
#undef GF
#undef GFH

#define NF(a) (sizeof(a) / sizeof((a)[0]))

static const char *const *field_names(const pfield *f, size_t n)
{
    static const char *model_keys[NF(model_fields) + 1], *gpu_keys[NF(gpu_fields) + 1];
    const char **keys = f == model_fields ? model_keys : gpu_keys;
    if (!keys[0])
        for (size_t i = 0; i < n; i++)
            keys[i] = f[i].name;
    return keys;
}

/* ------------------------------------------------------------------ loading */

static int valid_preset_name(const char *s)
{
    if (!*s || strlen(s) > 64 || s[0] == '.')
        return 0;
    for (; *s; s++)
        if (!((*s >= 'a' && *s <= 'z') || (*s >= '0' && *s <= '9') || *s == '-' || *s == '_' || *s == '.'))
            return 0;
    return 1;
}

void dkv_lua_push_preset_names(lua_State *L, const char *kind)
{
    char dir[4096];
    snprintf(dir, sizeof dir, "%s/datasets/presets/%s", dkv_lua_root(L), kind);
    lua_newtable(L);
    DIR *d = opendir(dir);
    if (!d)
        return;
    char *names[256];
    size_t n = 0;
    struct dirent *e;
    while ((e = readdir(d)) && n < 256) {
        size_t len = strlen(e->d_name);
        if (len > 4 && strcmp(e->d_name + len - 4, ".lua") == 0 && e->d_name[0] != '.') {
            names[n] = strndup(e->d_name, len - 4);
            if (names[n])
                n++;
        }
    }
    closedir(d);
    for (size_t i = 1; i < n; i++)
        for (size_t j = i; j > 0 && strcmp(names[j - 1], names[j]) > 0; j--) {
            char *x = names[j];
            names[j] = names[j - 1];
            names[j - 1] = x;
        }
    for (size_t i = 0; i < n; i++) {
        lua_pushstring(L, names[i]);
        lua_rawseti(L, -2, (lua_Integer)i + 1);
        free(names[i]);
    }
}

/* Pushes the table returned by datasets/presets/<kind>/<name>.lua. */
static void load_preset_file(lua_State *L, const char *kind, const char *name, const char *path)
{
    if (!valid_preset_name(name))
        dkv_lconf_error(L, path, NULL, "bad preset name '%s' (use a-z 0-9 - _ .)", name);
    char file[4096];
    snprintf(file, sizeof file, "%s/datasets/presets/%s/%s.lua", dkv_lua_root(L), kind, name);
    FILE *fp = fopen(file, "r");
    if (!fp) {
        dkv_lua_push_preset_names(L, kind);
        int nt = lua_gettop(L);
        size_t n = lua_rawlen(L, nt);
        const char *cands[257];
        char known[1024] = "";
        if (n > 256)
            n = 256;
        for (size_t i = 0; i < n; i++) {
            lua_rawgeti(L, nt, (lua_Integer)i + 1);
            cands[i] = lua_tostring(L, -1);  /* stays alive in the names table */
            lua_pop(L, 1);
            if (i)
                strncat(known, ", ", sizeof known - strlen(known) - 1);
            strncat(known, cands[i], sizeof known - strlen(known) - 1);
        }
        cands[n] = NULL;
        const char *near = dkv_lconf_nearest(name, cands);
        if (near)
            dkv_lconf_error(L, path, NULL, "unknown %s preset '%s' (did you mean '%s'? known: %s)", kind, name,
                            near, known);
        dkv_lconf_error(L, path, NULL, "unknown %s preset '%s' (known: %s; looked in %s/datasets/presets/%s)",
                        kind, name, *known ? known : "none", dkv_lua_root(L), kind);
    }
    fclose(fp);
    if (luaL_loadfilex(L, file, "t") != LUA_OK)
        lua_error(L);
    lua_newtable(L);  /* environment: math only */
    luaL_getsubtable(L, LUA_REGISTRYINDEX, LUA_LOADED_TABLE);
    lua_getfield(L, -1, LUA_MATHLIBNAME);
    lua_setfield(L, -3, "math");
    lua_pop(L, 1);
    lua_setupvalue(L, -2, 1);
    lua_call(L, 0, 1);
    if (!lua_istable(L, -1))
        luaL_error(L, "%s: a preset file must return a table (got %s)", file, luaL_typename(L, -1));
}

/* Resolves the value at idx into a fresh table with `base` merged in (recursively, depth <= 8). */
static void resolve(lua_State *L, const char *kind, int idx, const char *path, const pfield *f, size_t nf,
                    int depth)
{
    idx = lua_absindex(L, idx);
    if (depth > 8)
        dkv_lconf_error(L, path, "base", "chain of bases is too deep (a cycle?)");
    if (lua_type(L, idx) == LUA_TSTRING) {
        const char *name = lua_tostring(L, idx);
        char sub[128];
        snprintf(sub, sizeof sub, "%s(\"%s\")", kind, name);
        load_preset_file(L, kind, name, path);
        int t = lua_gettop(L);
        dkv_lconf_check_keys(L, t, sub, field_names(f, nf));
        lua_getfield(L, t, "base");
        if (!lua_isnil(L, -1)) {
            resolve(L, kind, -1, sub, f, nf, depth + 1);
            lua_remove(L, -2);  /* the base name */
            /* copy this preset's fields over its base */
            lua_pushnil(L);
            while (lua_next(L, t)) {
                lua_pushvalue(L, -2);
                lua_insert(L, -2);
                lua_settable(L, -4);
            }
            lua_remove(L, t);
        } else {
            lua_pop(L, 1);
        }
        lua_getfield(L, -1, "name");
        int has_name = !lua_isnil(L, -1);
        lua_pop(L, 1);
        if (!has_name || depth == 0) {
            lua_pushstring(L, name);
            lua_setfield(L, -2, "name");
        }
        return;
    }
    if (!lua_istable(L, idx))
        dkv_lconf_error(L, path, NULL, "expected a %s preset name or a table, got %s", kind, luaL_typename(L, idx));
    dkv_lconf_check_keys(L, idx, path, field_names(f, nf));
    lua_getfield(L, idx, "base");
    int has_base = !lua_isnil(L, -1);
    if (has_base) {
        if (lua_type(L, -1) != LUA_TSTRING)
            dkv_lconf_error(L, path, "base", "expected a preset name, got %s", luaL_typename(L, -1));
        char bname[96];
        snprintf(bname, sizeof bname, "%s+custom", lua_tostring(L, -1));
        resolve(L, kind, -1, path, f, nf, depth + 1);
        lua_remove(L, -2);
        lua_pushstring(L, bname);
        lua_setfield(L, -2, "name");
    } else {
        lua_pop(L, 1);
        lua_newtable(L);
        lua_pushstring(L, "custom");
        lua_setfield(L, -2, "name");
    }
    lua_pushnil(L);
    while (lua_next(L, idx)) {
        lua_pushvalue(L, -2);
        lua_insert(L, -2);
        lua_settable(L, -4);
    }
}

/* ------------------------------------------------------------------ checking */

static void read_curve(lua_State *L, int t, const char *path, dkv_gpu *g)
{
    char cp[160];
    dkv_lconf_path(cp, sizeof cp, path, "bw_curve");
    if (!dkv_lconf_subtable(L, t, path, "bw_curve", 0)) {
        g->n_bw_curve = 0;
        return;
    }
    int c = lua_gettop(L);
    static const char *const pkeys[] = {"run_bytes", "efficiency", NULL};
    dkv_lconf_check_keys_array(L, c, cp, NULL, true);
    lua_Integer n = (lua_Integer)lua_rawlen(L, c);
    if (n > DKV_GPU_CURVE_MAX)
        dkv_lconf_error(L, cp, NULL, "has %lld points (at most %d)", (long long)n, DKV_GPU_CURVE_MAX);
    for (lua_Integer i = 1; i <= n; i++) {
        char pp[192];
        snprintf(pp, sizeof pp, "%s[%lld]", cp, (long long)i);
        lua_rawgeti(L, c, i);
        int p = lua_gettop(L);
        dkv_lconf_check_table(L, p, pp);
        double rb, ef;
        if (lua_rawlen(L, p) == 2) {  /* {run_bytes, efficiency} */
            lua_rawgeti(L, p, 1);
            lua_rawgeti(L, p, 2);
            if (!lua_isnumber(L, -2) || !lua_isnumber(L, -1))
                dkv_lconf_error(L, pp, NULL, "expected {run_bytes, efficiency} numbers");
            rb = lua_tonumber(L, -2);
            ef = lua_tonumber(L, -1);
            lua_pop(L, 2);
        } else {
            dkv_lconf_check_keys(L, p, pp, pkeys);
            rb = dkv_lconf_number(L, p, pp, "run_bytes", 0, 0, HUGE_VAL, DKV_LCONF_REQUIRED | DKV_LCONF_LO_OPEN);
            ef = dkv_lconf_number(L, p, pp, "efficiency", 0, 0, 1, DKV_LCONF_REQUIRED | DKV_LCONF_LO_OPEN);
        }
        if (!(rb > 0) || isinf(rb))   /* the {run_bytes, efficiency} form is not read by dkv_lconf_number */
            dkv_lconf_error(L, pp, "run_bytes", "must be finite and > 0 (got %.17g)", rb);
        if (!(ef > 0 && ef <= 1))
            dkv_lconf_error(L, pp, "efficiency", "must be in (0, 1] (got %.17g)", ef);
        if (i > 1 && !(rb > g->bw_curve[i - 2].run_bytes))
            dkv_lconf_error(L, pp, "run_bytes", "points must be sorted by run_bytes (%.17g after %.17g)", rb,
                            g->bw_curve[i - 2].run_bytes);
        g->bw_curve[i - 1].run_bytes = rb;
        g->bw_curve[i - 1].efficiency = ef;
        lua_pop(L, 1);
    }
    g->n_bw_curve = (uint32_t)n;
    lua_pop(L, 1);
}

/* kclass = {<class> = {scale = S, launch_s = T}, ...}: class names as engine/backend.h names them */
static void read_kclass(lua_State *L, int t, const char *path, dkv_gpu *g)
{
    char cp[160];
    dkv_lconf_path(cp, sizeof cp, path, "kclass");
    g->kclass_set = 0;
    if (!dkv_lconf_subtable(L, t, path, "kclass", 0))
        return;
    int c = lua_gettop(L);
    static const char *names[DKV_KCLASS_N + 1];
    for (int k = 0; k < DKV_KCLASS_N; k++)
        names[k] = dkv_kernel_class_name((dkv_kernel_class)k);
    dkv_lconf_check_keys(L, c, cp, names);
    static const char *const ekeys[] = {"scale", "launch_s", NULL};
    for (int k = 0; k < DKV_KCLASS_N; k++) {
        if (!dkv_lconf_subtable(L, c, cp, names[k], 0))
            continue;
        int e = lua_gettop(L);
        char ep[192];
        dkv_lconf_path(ep, sizeof ep, cp, names[k]);
        dkv_lconf_check_keys(L, e, ep, ekeys);
        g->kclass[k].scale = dkv_lconf_number(L, e, ep, "scale", 0, 0, HUGE_VAL, DKV_LCONF_REQUIRED | DKV_LCONF_LO_OPEN);
        g->kclass[k].launch_s = dkv_lconf_number(L, e, ep, "launch_s", 0, 0, CALL_S_MAX, DKV_LCONF_REQUIRED);
        g->kclass_set |= 1u << k;
        lua_pop(L, 1);
    }
    lua_pop(L, 1);
}

static void read_fields(lua_State *L, int t, const char *path, const pfield *f, size_t nf, void *out)
{
    char *base = out;
    for (size_t i = 0; i < nf; i++) {
        const pfield *p = &f[i];
        unsigned flags = (p->required ? DKV_LCONF_REQUIRED : 0) | (p->lo_open ? DKV_LCONF_LO_OPEN : 0);
        switch (p->type) {
        case PF_DOC:
            lua_getfield(L, t, p->name);
            if (!lua_isnil(L, -1) && lua_type(L, -1) != LUA_TSTRING)
                dkv_lconf_error(L, path, p->name, "expected a string, got %s", luaL_typename(L, -1));
            lua_pop(L, 1);
            break;
        case PF_STR: {
            const char *s = dkv_lconf_string(L, t, path, p->name, "custom", 0);
            if (strlen(s) >= 64)
                dkv_lconf_error(L, path, p->name, "longer than 63 characters");
            strcpy(base + p->off, s);
            break;
        }
        case PF_TEXT: {   /* an optional string of at most 1,023 characters ("" when absent) */
            const char *s = dkv_lconf_string(L, t, path, p->name, "", 0);
            if (strlen(s) >= sizeof ((dkv_gpu *)0)->expected_error)
                dkv_lconf_error(L, path, p->name, "longer than %zu characters", sizeof ((dkv_gpu *)0)->expected_error - 1);
            strcpy(base + p->off, s);
            break;
        }
        case PF_TOKENIZER: {   /* "none" (default) or a tokenizer of core/workload/tokenizer.h */
            const char *s = dkv_lconf_string(L, t, path, p->name, "none", 0);
            dkv_tokenizer_kind k;
            dkv_err e = {0};
            if (dkv_tokenizer_parse(s, &k, &e) != DKV_OK)
                dkv_lconf_error(L, path, p->name, "%s", e.msg);
            snprintf(base + p->off, sizeof ((dkv_model *)0)->tokenizer, "%s", dkv_tokenizer_name(k));
            break;
        }
        case PF_U32: {
            int64_t v = dkv_lconf_integer(L, t, path, p->name, 0, (int64_t)p->lo, INT64_MAX, flags);
            if (v > UINT32_MAX)
                dkv_lconf_error(L, path, p->name, "must be <= 4294967295 (got %lld)", (long long)v);
            *(uint32_t *)(base + p->off) = (uint32_t)v;
            break;
        }
        case PF_F64:
            *(double *)(base + p->off) = dkv_lconf_number(L, t, path, p->name, 0, p->lo, p->hi > 0 ? p->hi : HUGE_VAL,
                                                          flags | (p->hi_open ? DKV_LCONF_HI_OPEN : 0));
            break;
        case PF_BOOL:
            *(bool *)(base + p->off) = dkv_lconf_boolean(L, t, path, p->name, false, flags);
            break;
        case PF_DTYPE:
            *(dkv_dtype *)(base + p->off) = (dkv_dtype)dkv_lconf_enum_names(L, t, path, p->name, &dkv_dtype_names, 0,
                                                                            flags);
            break;
        case PF_CURVE:
            read_curve(L, t, path, (dkv_gpu *)out);
            break;
        case PF_KCLASS:
            read_kclass(L, t, path, (dkv_gpu *)out);
            break;
        case PF_PROFILE: {   /* profile = "<name>": datasets/profiles/<name>.lua, loaded once per state */
            dkv_gpu *g = out;
            const char *s = dkv_lconf_string(L, t, path, p->name, "", 0);
            g->profile = NULL;
            g->mem_measured = false;
            snprintf(g->profile_name, sizeof g->profile_name, "%s", s);
            if (*s) {
                char pp[192];
                dkv_lconf_path(pp, sizeof pp, path, p->name);
                g->profile = dkv_lua_load_profile(L, s, pp);
                const dkv_profile_info *in = dkv_profile_get_info(g->profile);
                g->mem_measured = in->has_memory;
                g->mem_context_bytes = in->mem_context_bytes, g->mem_libraries_bytes = in->mem_libraries_bytes;
                g->mem_blas_handle_bytes = in->mem_blas_handle_bytes;
                g->mem_first_launch_bytes = in->mem_first_launch_bytes;
            }
            break;
        }
        }
    }
}

void dkv_lua_push_preset(lua_State *L, const char *kind, int idx)
{
    int is_gpu = strcmp(kind, "gpu") == 0;
    const pfield *f = is_gpu ? gpu_fields : model_fields;
    size_t nf = is_gpu ? NF(gpu_fields) : NF(model_fields);
    idx = lua_absindex(L, idx);
    char path[128];
    if (lua_type(L, idx) == LUA_TSTRING)
        snprintf(path, sizeof path, "%s(\"%.64s\")", kind, lua_tostring(L, idx));
    else
        snprintf(path, sizeof path, "%s", kind);
    resolve(L, kind, idx, path, f, nf, 0);
    lua_pushnil(L);
    lua_setfield(L, -2, "base");
}

static void check_at(lua_State *L, int idx, const char *path, const char *kind, void *out)
{
    int is_gpu = strcmp(kind, "gpu") == 0;
    const pfield *f = is_gpu ? gpu_fields : model_fields;
    size_t nf = is_gpu ? NF(gpu_fields) : NF(model_fields);
    idx = lua_absindex(L, idx);
    char p[160];
    if (lua_type(L, idx) == LUA_TSTRING)
        snprintf(p, sizeof p, "%s(\"%.64s\")", path, lua_tostring(L, idx));
    else
        snprintf(p, sizeof p, "%s", path);
    /* a table overriding the roofline's figures of a base with a measured profile, without saying
     * which costs it wants: the overrides could not take effect on the profiled kernels */
    const char *roof_key = NULL;
    if (is_gpu && lua_istable(L, idx)) {
        static const char *const rk[] = {"hbm_bw", "flops_bf16", "bw_curve", "launch_overhead_s", "kclass", NULL};
        lua_getfield(L, idx, "profile");
        bool named = !lua_isnil(L, -1);
        lua_pop(L, 1);
        for (int i = 0; rk[i] && !named && !roof_key; i++) {
            lua_getfield(L, idx, rk[i]);
            if (!lua_isnil(L, -1))
                roof_key = rk[i];
            lua_pop(L, 1);
        }
    }
    resolve(L, kind, idx, p, f, nf, 0);
    int t = lua_gettop(L);
    memset(out, 0, is_gpu ? sizeof(dkv_gpu) : sizeof(dkv_model));
    read_fields(L, t, p, f, nf, out);
    lua_pop(L, 1);
    if (roof_key && ((dkv_gpu *)out)->profile)
        dkv_lconf_error(L, p, roof_key, "overrides the roofline of a preset whose measured profile '%s' costs the "
                        "kernels, so it would not take effect there: add profile = \"\" (the roofline with this "
                        "value) or profile = \"<name>\"", ((dkv_gpu *)out)->profile_name);
    dkv_err err = {0};
    if (is_gpu) {
        dkv_gpu *g = out;
        if (g->pcie_bidir_pinned == 0)
            g->pcie_bidir_pinned = g->pcie_h2d_pinned + g->pcie_d2h_pinned;
        if (g->max_num_logits == 0)
            g->max_num_logits = 4096;
        if (g->max_num_batched_tokens == 0)
            g->max_num_batched_tokens = 8192;
        if (g->retention == 0)
            g->retention = 0.5;
        if (!(g->retention <= 1))
            dkv_lconf_error(L, p, "retention", "must be in (0, 1] (got %.17g)", g->retention);
        if (dkv_gpu_validate(g, &err) != DKV_OK)
            dkv_lconf_error(L, p, NULL, "%s", err.msg);
    } else {
        if (dkv_model_validate(out, &err) != DKV_OK)
            dkv_lconf_error(L, p, NULL, "%s", err.msg);
        const dkv_model *m = out;
        dkv_tokenizer_kind k;
        dkv_tokenizer tok;
        if (dkv_tokenizer_parse(m->tokenizer, &k, &err) != DKV_OK ||
            dkv_tokenizer_init(&tok, k, m->vocab, m->mask_id, &err) != DKV_OK)
            dkv_lconf_error(L, p, "tokenizer", "%s", err.msg);
    }
}

int dkv_lua_check_model_at(lua_State *L, int idx, const char *path, dkv_model *out)
{
    check_at(L, idx, path, "model", out);
    return 1;
}

int dkv_lua_check_gpu_at(lua_State *L, int idx, const char *path, dkv_gpu *out)
{
    check_at(L, idx, path, "gpu", out);
    return 1;
}

int dkv_lua_check_model(lua_State *L, int idx, dkv_model *out)
{
    return dkv_lua_check_model_at(L, idx, "model", out);
}

int dkv_lua_check_gpu(lua_State *L, int idx, dkv_gpu *out)
{
    return dkv_lua_check_gpu_at(L, idx, "gpu", out);
}

/* ------------------------------------------------------------------ struct -> table */

static void push_fields(lua_State *L, const pfield *f, size_t nf, const void *in)
{
    const char *base = in;
    lua_newtable(L);
    for (size_t i = 0; i < nf; i++) {
        const pfield *p = &f[i];
        switch (p->type) {
        case PF_DOC: continue;
        case PF_STR: case PF_TOKENIZER: lua_pushstring(L, base + p->off); break;
        case PF_U32: lua_pushinteger(L, *(const uint32_t *)(base + p->off)); break;
        case PF_F64: lua_pushnumber(L, *(const double *)(base + p->off)); break;
        case PF_BOOL: lua_pushboolean(L, *(const bool *)(base + p->off)); break;
        case PF_DTYPE: lua_pushstring(L, dkv_dtype_name(*(const dkv_dtype *)(base + p->off))); break;
        case PF_CURVE: {
            const dkv_gpu *g = in;
            lua_createtable(L, (int)g->n_bw_curve, 0);
            for (uint32_t k = 0; k < g->n_bw_curve; k++) {
                lua_createtable(L, 2, 0);
                lua_pushnumber(L, g->bw_curve[k].run_bytes);
                lua_rawseti(L, -2, 1);
                lua_pushnumber(L, g->bw_curve[k].efficiency);
                lua_rawseti(L, -2, 2);
                lua_rawseti(L, -2, (lua_Integer)k + 1);
            }
            break;
        }
        case PF_PROFILE:
        case PF_TEXT:
            if (!*(base + p->off))
                continue;   /* roofline only, or no statement: no field */
            lua_pushstring(L, base + p->off);
            break;
        case PF_KCLASS: {
            const dkv_gpu *g = in;
            lua_newtable(L);
            for (int k = 0; k < DKV_KCLASS_N; k++) {
                if (!(g->kclass_set >> k & 1u))
                    continue;
                lua_createtable(L, 0, 2);
                lua_pushnumber(L, g->kclass[k].scale);
                lua_setfield(L, -2, "scale");
                lua_pushnumber(L, g->kclass[k].launch_s);
                lua_setfield(L, -2, "launch_s");
                lua_setfield(L, -2, dkv_kernel_class_name((dkv_kernel_class)k));
            }
            break;
        }
        }
        lua_setfield(L, -2, p->name);
    }
}

void dkv_lua_push_model(lua_State *L, const dkv_model *m)
{
    push_fields(L, model_fields, NF(model_fields), m);
}

void dkv_lua_push_gpu(lua_State *L, const dkv_gpu *g)
{
    push_fields(L, gpu_fields, NF(gpu_fields), g);
}
