/* l_mem_aux.c - dkv.mem helpers: the stats table and dkv.mem.requests (request streams for
 * memory studies, read with core/workload). */
#include <lauxlib.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "lua/dkv_lua.h"
#include "lua/l_mem.h"
#include "lua/lua_modules.h"
#include "lua/lconf.h"
#include "workload/workload.h"

static void set_u(lua_State *L, const char *k, uint64_t v)
{
    lua_pushinteger(L, (lua_Integer)v);
    lua_setfield(L, -2, k);
}

static void set_f(lua_State *L, const char *k, double v)
{
    lua_pushnumber(L, v);
    lua_setfield(L, -2, k);
}

void dkv_lua_push_mem_stats(lua_State *L, const dkv_mem *m, const dkv_mem_stats *s)
{
    const dkv_mem_options *o = dkv_mem_get_options(m);
    lua_createtable(L, 0, 64);
    lua_pushstring(L, dkv_mem_kind_name(o->kind));
    lua_setfield(L, -2, "kind");
#define U(f) set_u(L, #f, s->f)
#define F(f) set_f(L, #f, s->f)
    U(requested); U(allocated); U(reserved); U(peak_requested); U(peak_allocated); U(peak_reserved);
    U(pending_bytes); U(live); F(internal_frag); F(external_frag); F(peak_internal_frag);
    F(peak_external_frag); F(mean_internal_frag); F(mean_external_frag); F(external_frag_at_peak); F(internal_frag_at_peak);
    U(largest_free); U(n_acquire); U(n_release); U(n_retain); U(n_events); U(n_failed);
    U(n_failed_frag); U(reuse_hits); U(reuse_total); F(reuse_rate); U(bad_double_release);
    U(bad_unknown_id); U(bad_underflow); U(bad_size); U(bad_other); U(device_allocs);
    U(device_frees); U(device_alloc_bytes); F(device_time_s); U(setup_bytes); F(setup_time_s);
    U(inactive_split_bytes); U(inactive_split_blocks); U(num_alloc_retries); U(num_ooms);
    U(segments); U(blocks_total); U(blocks_free);
#undef U
#undef F
    lua_createtable(L, 0, DKV_MEM_TAG_COUNT);
    for (int t = 0; t < DKV_MEM_TAG_COUNT; t++) {
        lua_createtable(L, 0, 4);
        set_u(L, "requested", s->tag[t].requested);
        set_u(L, "allocated", s->tag[t].allocated);
        set_u(L, "peak_allocated", s->tag[t].peak_allocated);
        set_u(L, "n_acquire", s->tag[t].n_acquire);
        lua_setfield(L, -2, dkv_mem_tag_name((dkv_mem_tag)t));
    }
    lua_setfield(L, -2, "tags");
    uint32_t ni = o->n_instances ? o->n_instances : 1;
    lua_createtable(L, (int)ni, 0);
    for (uint32_t i = 0; i < ni; i++) {
        lua_pushinteger(L, (lua_Integer)s->instance_used[i]);
        lua_rawseti(L, -2, (lua_Integer)i + 1);
    }
    lua_setfield(L, -2, "instance_used");
}

static void push_column_u32(lua_State *L, const dkv_workload *w, int which)
{
    size_t n = dkv_workload_count(w);
    lua_createtable(L, (int)n, 0);
    for (size_t i = 0; i < n; i++) {
        const dkv_request *r = dkv_workload_get(w, i);
        if (which == 0)
            lua_pushnumber(L, r->arrival_s);
        else
            lua_pushinteger(L, which == 1 ? r->prompt_tokens : r->gen_tokens);
        lua_rawseti(L, -2, (lua_Integer)i + 1);
    }
}

static dkv_len_dist check_len(lua_State *L, int t, const char *path, const char *what, double mean_def,
                              double median_def)
{
    char km[32], kd[32];
    snprintf(km, sizeof km, "%s_mean", what);
    snprintf(kd, sizeof kd, "%s_median", what);
    double mean = dkv_lconf_number(L, t, path, km, mean_def, 0, HUGE_VAL, DKV_LCONF_LO_OPEN);
    double med = dkv_lconf_number(L, t, path, kd, median_def, 0, HUGE_VAL, DKV_LCONF_LO_OPEN);
    dkv_len_dist d;
    dkv_err e = {0};
    if (dkv_len_lognormal_mean_median(mean, med, &d, &e) != DKV_OK)
        dkv_lconf_error(L, path, km, "%s", e.msg);
    return d;
}

static int mem_requests_body(lua_State *L);

int dkv_lua_mem_requests(lua_State *L)
{
    return dkv_lua_timed(L, mem_requests_body);
}

static int mem_requests_body(lua_State *L)
{
    static const char *const keys[] = {"file", "format", "synth", "first_n", "rate_scale", "time_scale",
                                       "prompt_max", "gen_max", NULL};
    const char *P = "dkv.mem.requests";
    dkv_lconf_check_table(L, 1, P);
    dkv_lconf_check_keys(L, 1, P, keys);
    dkv_workload_opts o;
    dkv_workload_opts_default(&o);
    o.first_n = (uint32_t)dkv_lconf_integer(L, 1, P, "first_n", 0, 0, UINT32_MAX, 0);
    o.rate_scale = dkv_lconf_number(L, 1, P, "rate_scale", 1, 0, HUGE_VAL, DKV_LCONF_LO_OPEN);
    o.time_scale = dkv_lconf_number(L, 1, P, "time_scale", 1, 0, HUGE_VAL, DKV_LCONF_LO_OPEN);
    o.prompt_max = (uint32_t)dkv_lconf_integer(L, 1, P, "prompt_max", 0, 0, UINT32_MAX, 0);
    o.gen_max = (uint32_t)dkv_lconf_integer(L, 1, P, "gen_max", 0, 0, UINT32_MAX, 0);
    const char *file = dkv_lconf_string(L, 1, P, "file", NULL, 0);
    lua_getfield(L, 1, "synth");
    bool synth = !lua_isnil(L, -1);
    lua_pop(L, 1);
    if (file && synth)
        return dkv_lconf_error(L, P, "synth", "and file are both given: give one (a trace file or a synthetic stream)");
    lua_getfield(L, 1, "format");
    bool fmt_given = !lua_isnil(L, -1);
    lua_pop(L, 1);
    if (!file && fmt_given)
        return dkv_lconf_error(L, P, "format", "is the format of file = PATH (not used with synth)");
    int fmt = dkv_lconf_enum_names(L, 1, P, "format", &dkv_trace_format_names, 0, 0);
    dkv_workload *w = NULL;
    dkv_err e = {0};
    if (file) {
        char buf[4096];
        const char *path = dkv_lua_data_path(L, file, buf, sizeof buf);   /* relative: the project root too */
        if (access(path, R_OK) != 0) {
            lua_pushnil(L);
            lua_pushfstring(L, "%s: no such readable file (also looked under %s)", file, dkv_lua_root(L));
            return 2;
        }
        if (dkv_workload_read(path, (dkv_trace_format)fmt, &o, &w, &e) != DKV_OK)
            return dkv_lconf_error(L, P, "file", "%s", e.msg);
    } else {
        static const char *const skeys[] = {"n", "rate", "cv", "prompt_mean", "prompt_median", "gen_mean",
                                            "gen_median", "seed", NULL};
        char sp[64];
        dkv_lconf_path(sp, sizeof sp, P, "synth");
        if (!dkv_lconf_subtable(L, 1, P, "synth", 0))
            return dkv_lconf_error(L, P, NULL, "give file = PATH or synth = {...}");
        int t = lua_gettop(L);
        dkv_lconf_check_keys(L, t, sp, skeys);
        dkv_synth_cfg c;
        dkv_synth_cfg_default(&c);
        c.n_requests = (uint32_t)dkv_lconf_integer(L, t, sp, "n", 1000, 1, UINT32_MAX, 0);
        c.rate = dkv_lconf_number(L, t, sp, "rate", 1, 0, HUGE_VAL, DKV_LCONF_LO_OPEN);
        c.cv = dkv_lconf_number(L, t, sp, "cv", 1, 0, HUGE_VAL, DKV_LCONF_LO_OPEN);
        c.arrival = c.cv == 1 ? DKV_ARRIVAL_POISSON : DKV_ARRIVAL_GAMMA;
        c.prompt = check_len(L, t, sp, "prompt", 2048, 1469);   /* Azure code trace shape */
        c.gen = check_len(L, t, sp, "gen", 28, 13);
        c.seed = (uint64_t)dkv_lconf_integer(L, t, sp, "seed", 1, 0, INT64_MAX, 0);
        if (dkv_workload_synth(&c, &o, &w, &e) != DKV_OK)
            return dkv_lconf_error(L, sp, NULL, "%s", e.msg);
    }
    lua_createtable(L, 0, 5);
    push_column_u32(L, w, 0);
    lua_setfield(L, -2, "arrival_s");
    push_column_u32(L, w, 1);
    lua_setfield(L, -2, "prompt");
    push_column_u32(L, w, 2);
    lua_setfield(L, -2, "gen");
    lua_pushinteger(L, (lua_Integer)dkv_workload_count(w));
    lua_setfield(L, -2, "n");
    lua_pushstring(L, dkv_workload_source(w));
    lua_setfield(L, -2, "source");
    dkv_workload_free(w);
    return 1;
}
