/* l_engine.c - dkv.simulate (engine + simulator backend) and dkv.save (a result into the
 * output file).  docs/LUA_API.md documents the configuration and the result; docs/HDF5_SCHEMA.md
 * the datasets dkv.save writes. */
#include <lauxlib.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io/h5.h"
#include "lua/dkv_lua.h"
#include "lua/exec_outputs.h"
#include "lua/l_engine_cfg.h"
#include "lua/lconf.h"
#include "lua/lua_modules.h"
#include "workload/tokenizer.h"

#define LSIM_MT "dkv.simulate.state"
#define RESULT_MT "dkv.result"

/* ---------------------------------------------------------------- record layouts */

typedef struct sfield {
    const char *name;
    size_t off;
    char type; /* 'u' uint64, 'f' double */
    const char *unit;
    const char *doc;
} sfield;

#define S(f, t, u, d) {#f, offsetof(dkv_run_summary, f), t, u, d}
#define SP(nm, i, d) {nm, offsetof(dkv_run_summary, peak_tag) + (i) * sizeof(uint64_t), 'u', "bytes", d}
static const sfield sum_fields[] = {
    S(n_requests, 'u', "requests", "requests in the workload"),
    S(n_done, 'u', "requests", "requests finished"),
    S(n_oom, 'u', "requests", "requests that could not be served: memory, even alone"),
    S(n_too_long, 'u', "requests", "requests whose canvas exceeds the model's max_len"),
    S(n_unfinished, 'u', "requests", "requests left when the run was interrupted"),
    S(n_steps, 'u', "steps", "engine iterations (backend steps)"),
    S(request_steps, 'u', "steps", "request-steps run (a step of one request)"),
    S(refresh_steps, 'u', "steps", "request-steps in the Refresh phase"),
    S(reuse_steps, 'u', "steps", "request-steps in the Reuse phase"),
    S(n_preempted, 'u', "", "preemptions (a stuck engine released a request's KV)"),
    S(preempted_steps, 'u', "steps", "request-steps repeated after preemption"),
    S(rho_clamped, 'u', "blocks", "retention callback values clamped into [rho_min, rho_max] (retention.clamp)"),
    S(gen_tokens, 'u', "tokens", "generated tokens of finished requests"),
    S(prompt_tokens, 'u', "tokens", "prompt tokens of finished requests"),
    S(sim_time_s, 'f', "s", "simulated time at the end of the run"),
    S(busy_s, 'f', "s", "sum of step times"),
    S(gpu_busy_frac, 'f', "", "kernel time / simulated time"),
    S(roofline_frac, 'f', "", "kernel time costed by the roofline, not a measured profile (simulator)"),
    S(throughput_rps, 'f', "requests/s", "finished requests per simulated second"),
    S(tokens_per_s, 'f', "tokens/s", "generated tokens per simulated second"),
    S(latency_mean_s, 'f', "s", "mean arrival-to-finish latency"),
    S(latency_p50_s, 'f', "s", "median latency"),
    S(latency_p95_s, 'f', "s", "95th percentile latency"),
    S(latency_p99_s, 'f', "s", "99th percentile latency"),
    S(first_block_p50_s, 'f', "s", "median arrival to first block done"),
    S(first_block_p99_s, 'f', "s", "99th percentile arrival to first block done"),
    S(queue_mean_s, 'f', "s", "mean arrival to first step"),
    S(tpot_mean_s, 'f', "s/token", "mean (finish - start) / generated tokens"),
    S(mean_batch, 'f', "requests", "request-steps per engine step"),
    S(phase_pred_accuracy, 'f', "", "predicted phase == actual phase, fraction of request-steps"),
    S(budget_overruns, 'u', "steps", "steps whose tokens exceeded max_num_batched_tokens"),
    S(hbm_read_bytes, 'f', "bytes", "HBM bytes read by kernels"),
    S(hbm_write_bytes, 'f', "bytes", "HBM bytes written by kernels"),
    S(pcie_h2d_bytes, 'f', "bytes", "bytes copied host to device"),
    S(pcie_d2h_bytes, 'f', "bytes", "bytes copied device to host"),
    S(flops, 'f', "FLOP", "floating-point operations"),
    S(alloc_time_s, 'f', "s", "modelled allocator time (device malloc/free, routing costs)"),
    SP("peak_weights_bytes", DKV_MEM_TAG_WEIGHTS, "peak allocated bytes tagged weights"),
    SP("peak_kv_bytes", DKV_MEM_TAG_KV, "peak allocated bytes tagged kv"),
    SP("peak_activation_bytes", DKV_MEM_TAG_ACTIVATION, "peak allocated bytes tagged activation"),
    SP("peak_logits_bytes", DKV_MEM_TAG_LOGITS, "peak allocated bytes tagged logits (transient peak)"),
    SP("peak_staging_bytes", DKV_MEM_TAG_STAGING, "peak allocated bytes tagged staging"),
    S(peak_host_bytes, 'u', "bytes", "peak offloaded KV in host memory (physical)"),
    S(peak_allocated, 'u', "bytes", "peak allocated bytes, all tags"),
    S(peak_reserved, 'u', "bytes", "sum of the managers' peak reserved bytes"),
    S(kv_capacity_bytes, 'u', "bytes", "capacity of the KV manager(s)"),
    S(device_capacity_bytes, 'u', "bytes", "capacity of the device manager"),
    S(kv_internal_frag_peak, 'f', "", "KV manager: peak (allocated - requested) / allocated"),
    S(kv_external_frag_peak, 'f', "", "KV manager: peak (reserved - allocated) / reserved"),
    S(kv_external_frag_at_peak, 'f', "", "KV manager: external fragmentation at peak reserved"),
    S(kv_internal_frag_mean, 'f', "", "KV manager: 1 - sum(requested)/sum(allocated) over events"),
    S(kv_external_frag_mean, 'f', "", "KV manager: 1 - sum(allocated)/sum(reserved) over events"),
    S(dev_internal_frag_peak, 'f', "", "device manager: peak internal fragmentation"),
    S(dev_external_frag_peak, 'f', "", "device manager: peak external fragmentation"),
    S(block_reuse_rate, 'f', "", "block acquisitions served by a block used before / all"),
    S(alloc_failures, 'u', "", "failed acquisitions (the engine waited or dropped the step)"),
    S(alloc_failures_frag, 'u', "", "failed although reserved - allocated was larger"),
    S(end_allocated_kv, 'u', "bytes", "KV allocated after the run (0 when everything was freed)"),
    S(end_allocated_device, 'u', "bytes", "device-manager bytes after the run (the weights)"),
    S(peak_device_bytes, 'u', "bytes", "peak device memory of the CUDA backend: fixed + weights + arena + counted"),
    S(device_counted_bytes, 'u', "bytes", "the CUDA backend's buffers besides weights and arena, peak (devmem.h)"),
    S(device_arena_bytes, 'u', "bytes", "the CUDA backend's KV arena, whole (pool + staging + discard)"),
    S(device_fixed_bytes, 'f', "bytes", "CUDA context, libraries, modules: the profile's memory section"),
    S(device_mem_model, 'u', "", "0 complete, 1 partial (profile without memory), 2 partial (no profile), 3 none"),
    S(cost_per_hour, 'f', "$/h", "GPU price used"),
    S(cost_per_mtok, 'f', "$/Mtok", "cost per million generated tokens"),
    S(wall_s, 'f', "s", "host time of the simulation"),
};
#undef S
#undef SP

#define F(T, f, ty, u, d) {#f, ty, offsetof(T, f), u, d}
static const dkv_h5_field req_fields[] = {
    F(dkv_req_record, id, DKV_H5_U64, "", "request id (workload order)"),
    F(dkv_req_record, instance, DKV_H5_U32, "", "engine instance"),
    F(dkv_req_record, status, DKV_H5_U8, "", "0 done, 1 oom, 2 too_long, 3 unfinished"),
    F(dkv_req_record, route, DKV_H5_U8, "", "0 pool, 1 plain path"),
    F(dkv_req_record, prompt_tokens, DKV_H5_U32, "tokens", "prompt length P"),
    F(dkv_req_record, gen_tokens, DKV_H5_U32, "tokens", "generation length G"),
    F(dkv_req_record, steps, DKV_H5_U32, "steps", "steps run"),
    F(dkv_req_record, refresh_steps, DKV_H5_U32, "steps", "Refresh steps"),
    F(dkv_req_record, reuse_steps, DKV_H5_U32, "steps", "Reuse steps"),
    F(dkv_req_record, preempted_steps, DKV_H5_U32, "steps", "steps repeated after preemption"),
    F(dkv_req_record, arrival_s, DKV_H5_F64, "s", "arrival"),
    F(dkv_req_record, start_s, DKV_H5_F64, "s", "first step began (NaN: never)"),
    F(dkv_req_record, first_block_s, DKV_H5_F64, "s", "first block done (NaN: never)"),
    F(dkv_req_record, finish_s, DKV_H5_F64, "s", "last step done (NaN: not done)"),
    F(dkv_req_record, latency_s, DKV_H5_F64, "s", "finish - arrival"),
    F(dkv_req_record, queue_s, DKV_H5_F64, "s", "start - arrival"),
    F(dkv_req_record, tpot_s, DKV_H5_F64, "s/token", "(finish - start) / gen_tokens"),
    F(dkv_req_record, kv_peak_bytes, DKV_H5_U64, "bytes", "largest KV held on the device"),
};
static const dkv_h5_field step_fields[] = {
    F(dkv_step_record, index, DKV_H5_U64, "", "engine iteration"),
    F(dkv_step_record, instance, DKV_H5_U32, "", "instance (4294967295: merged spatial step)"),
    F(dkv_step_record, start_s, DKV_H5_F64, "s", "step start"),
    F(dkv_step_record, time_s, DKV_H5_F64, "s", "step time incl. allocator time"),
    F(dkv_step_record, compute_s, DKV_H5_F64, "s", "kernel time"),
    F(dkv_step_record, pcie_s, DKV_H5_F64, "s", "PCIe copy time"),
    F(dkv_step_record, stall_s, DKV_H5_F64, "s", "time waiting for copies"),
    F(dkv_step_record, alloc_s, DKV_H5_F64, "s", "modelled allocator time"),
    F(dkv_step_record, n_items, DKV_H5_U32, "requests", "request-steps in the step"),
    F(dkv_step_record, n_refresh, DKV_H5_U32, "requests", "of which Refresh"),
    F(dkv_step_record, n_reuse, DKV_H5_U32, "requests", "of which Reuse"),
    F(dkv_step_record, n_admitted, DKV_H5_U32, "requests", "admitted by this step"),
    F(dkv_step_record, n_waiting, DKV_H5_U32, "requests", "waiting after the step"),
    F(dkv_step_record, n_running, DKV_H5_U32, "requests", "running after the step"),
    F(dkv_step_record, q_tokens, DKV_H5_U64, "tokens", "query tokens computed"),
    F(dkv_step_record, budget_tokens, DKV_H5_U64, "tokens", "tokens charged to the scheduler budget"),
    F(dkv_step_record, logit_rows, DKV_H5_U64, "rows", "LM-head rows"),
    F(dkv_step_record, hbm_read_bytes, DKV_H5_U64, "bytes", "HBM read"),
    F(dkv_step_record, hbm_write_bytes, DKV_H5_U64, "bytes", "HBM written"),
    F(dkv_step_record, pcie_h2d_bytes, DKV_H5_U64, "bytes", "host to device"),
    F(dkv_step_record, pcie_d2h_bytes, DKV_H5_U64, "bytes", "device to host"),
    F(dkv_step_record, flops, DKV_H5_F64, "FLOP", "floating-point operations"),
    F(dkv_step_record, flops_util, DKV_H5_F64, "", "FLOPs / (kernel time x peak)"),
    F(dkv_step_record, bw_util, DKV_H5_F64, "", "HBM bytes / (kernel time x bandwidth)"),
    F(dkv_step_record, host_plan_s, DKV_H5_F64, "s", "host: engine planning + commit (measured)"),
    F(dkv_step_record, host_enqueue_s, DKV_H5_F64, "s", "host: backend enqueue (measured; 0 simulated)"),
    F(dkv_step_record, host_wait_s, DKV_H5_F64, "s", "host: backend waits (measured; 0 simulated)"),
    F(dkv_step_record, sm_mhz, DKV_H5_F64, "MHz", "SM clock of the step (executed: sampled mean; simulated: the clock model's; 0: none)"),
    F(dkv_step_record, sm_probe_mhz, DKV_H5_F64, "MHz", "SMs' mean clock over the step from their cycle counters (executed with clock_probe; 0: none)"),
};
static const dkv_h5_field mem_fields[] = {
    F(dkv_mem_record, time_s, DKV_H5_F64, "s", "time of the sample (end of a step)"),
    F(dkv_mem_record, weights, DKV_H5_U64, "bytes", "allocated, tag weights"),
    F(dkv_mem_record, kv, DKV_H5_U64, "bytes", "allocated, tag kv"),
    F(dkv_mem_record, activation, DKV_H5_U64, "bytes", "allocated, tag activation"),
    F(dkv_mem_record, logits, DKV_H5_U64, "bytes", "allocated, tag logits"),
    F(dkv_mem_record, staging, DKV_H5_U64, "bytes", "allocated, tag staging"),
    F(dkv_mem_record, host, DKV_H5_U64, "bytes", "offloaded KV on the host"),
    F(dkv_mem_record, allocated, DKV_H5_U64, "bytes", "allocated, all tags"),
    F(dkv_mem_record, reserved, DKV_H5_U64, "bytes", "reserved by the managers"),
};
static const dkv_h5_field kern_fields[] = {
    F(dkv_kernel_record, step_index, DKV_H5_U64, "", "engine iteration"),
    F(dkv_kernel_record, kind, DKV_H5_U32, "", "kernel class (dkv_kernel_class)"),
    F(dkv_kernel_record, layer, DKV_H5_U32, "", "4294967295: all layers of the step"),
    F(dkv_kernel_record, n_launches, DKV_H5_U32, "", "kernel launches"),
    F(dkv_kernel_record, time_s, DKV_H5_F64, "s", "time incl. launch overhead"),
    F(dkv_kernel_record, flops, DKV_H5_F64, "FLOP", "floating-point operations"),
    F(dkv_kernel_record, read_bytes, DKV_H5_U64, "bytes", "HBM read"),
    F(dkv_kernel_record, write_bytes, DKV_H5_U64, "bytes", "HBM written"),
};
static const dkv_h5_field l2_fields[] = {   /* record.l2_kernels: the L2 replay's kernels (backend.h l2_seq) */
    F(dkv_kernel_record, step_index, DKV_H5_U64, "", "engine iteration"),
    F(dkv_kernel_record, l2_seq, DKV_H5_U32, "", "position in the step's replay (1: first)"),
    F(dkv_kernel_record, l2_part, DKV_H5_U32, "", "0 step start, 1 one layer (x n_layers), 2 step end"),
    F(dkv_kernel_record, kind, DKV_H5_U32, "", "kernel class (dkv_kernel_class)"),
    F(dkv_kernel_record, read_bytes, DKV_H5_U64, "bytes", "HBM read"),
    F(dkv_kernel_record, write_bytes, DKV_H5_U64, "bytes", "HBM written"),
    F(dkv_kernel_record, l2_dirty_bytes, DKV_H5_U64, "bytes", "dirty in the replay's L2 after the kernel"),
    F(dkv_kernel_record, l2_held_x, DKV_H5_U64, "bytes", "of the residual stream in the replay's L2 after the kernel"),
    F(dkv_kernel_record, l2_held_qkv, DKV_H5_U64, "bytes", "of the q|k|v buffer in the replay's L2 after the kernel"),
    F(dkv_kernel_record, l2_held_att, DKV_H5_U64, "bytes", "of the attention's output in the replay's L2 after it"),
};
#undef F
#define NF(a) (sizeof(a) / sizeof((a)[0]))

/* ---------------------------------------------------------------- result userdata */

typedef struct lresult {
    dkv_engine_result *r;
    dkv_kernel_record *k, *l2;   /* class records; the L2 replay's kernels (l2_seq >= 1) */
    size_t nk, capk, nl2, capl2;
    uint64_t seed;
    bool kernel_oom;
    char backend[8], device[160], driver[64];   /* the run's origin (dkv_run_origin) */
    char gpu_preset[64], model_preset[64], cost_profile[64];
    char gpu_expected_error[1024];   /* the simulated preset's expected_error ("" on a measured run) */
    dkv_exec_outputs out;   /* generated tokens, when the backend reported them */
} lresult;

static void on_kernel(void *user, const dkv_kernel_record *rec)
{
    lresult *r = user;
    dkv_kernel_record **v = rec->l2_seq ? &r->l2 : &r->k;
    size_t *n = rec->l2_seq ? &r->nl2 : &r->nk, *cap = rec->l2_seq ? &r->capl2 : &r->capk;
    if (*n == *cap) {
        size_t nc = *cap ? 2 * *cap : 4096;
        dkv_kernel_record *nv = realloc(*v, nc * sizeof *nv);
        if (!nv) {
            r->kernel_oom = true;
            return;
        }
        *v = nv;
        *cap = nc;
    }
    (*v)[(*n)++] = *rec;
}

static int result_gc(lua_State *L)
{
    lresult *r = luaL_checkudata(L, 1, RESULT_MT);
    dkv_engine_result_free(r->r);
    r->r = NULL;
    free(r->k);
    free(r->l2);
    r->k = r->l2 = NULL;
    r->nk = r->capk = r->nl2 = r->capl2 = 0;
    dkv_exec_outputs_free(&r->out);
    return 0;
}

void dkv_lua_result_take_outputs(lua_State *L, int idx, dkv_exec_outputs *o)
{
    lresult *r = luaL_checkudata(L, idx, RESULT_MT);
    dkv_exec_outputs_free(&r->out);
    r->out = *o;
    memset(o, 0, sizeof *o);
}

/* The tokenizer of the resolved configuration's model (at cfg), for the text of the outputs. */
static void cfg_tokenizer(lua_State *L, int cfg, dkv_tokenizer *tok)
{
    dkv_tokenizer_kind k = DKV_TOKENIZER_NONE;
    lua_Integer vocab = 0, mask = 0;
    if (lua_getfield(L, cfg, "model") == LUA_TTABLE) {
        if (lua_getfield(L, -1, "tokenizer") == LUA_TSTRING && dkv_tokenizer_parse(lua_tostring(L, -1), &k, NULL) != DKV_OK)
            k = DKV_TOKENIZER_NONE;
        lua_getfield(L, -2, "vocab");
        lua_getfield(L, -3, "mask_id");
        vocab = lua_tointeger(L, -2), mask = lua_tointeger(L, -1);
        lua_pop(L, 3);
    }
    lua_pop(L, 1);
    if (dkv_tokenizer_init(tok, k, (uint32_t)vocab, (uint32_t)mask, NULL) != DKV_OK)
        dkv_tokenizer_init(tok, DKV_TOKENIZER_NONE, (uint32_t)vocab, (uint32_t)mask, NULL);
}

static lresult *check_result(lua_State *L, int i)
{
    lresult *r = luaL_checkudata(L, i, RESULT_MT);
    if (!r->r)
        luaL_error(L, "dkv result: already closed");
    return r;
}

/* Pushes {field = {values...}} for n records of the given layout. */
static void push_columns(lua_State *L, const void *recs, size_t n, size_t size, const dkv_h5_field *f, size_t nf)
{
    lua_createtable(L, 0, (int)nf);
    for (size_t j = 0; j < nf; j++) {
        lua_createtable(L, (int)n, 0);
        for (size_t i = 0; i < n; i++) {
            const unsigned char *p = (const unsigned char *)recs + i * size + f[j].offset;
            switch (f[j].type) {
            case DKV_H5_U8: lua_pushinteger(L, *p); break;
            case DKV_H5_U32: { uint32_t v; memcpy(&v, p, 4); lua_pushinteger(L, v); break; }
            case DKV_H5_U64: { uint64_t v; memcpy(&v, p, 8); lua_pushinteger(L, (lua_Integer)v); break; }
            default: { double v; memcpy(&v, p, 8); lua_pushnumber(L, v); break; }
            }
            lua_rawseti(L, -2, (lua_Integer)i + 1);
        }
        lua_setfield(L, -2, f[j].name);
    }
}

static int result_requests(lua_State *L)
{
    lresult *r = check_result(L, 1);
    size_t n;
    const dkv_req_record *v = dkv_engine_result_requests(r->r, &n);
    push_columns(L, v, n, sizeof *v, req_fields, NF(req_fields));
    return 1;
}

static int result_steps(lua_State *L)
{
    lresult *r = check_result(L, 1);
    size_t n;
    const dkv_step_record *v = dkv_engine_result_steps(r->r, &n);
    push_columns(L, v, n, sizeof *v, step_fields, NF(step_fields));
    return 1;
}

static int result_memory(lua_State *L)
{
    lresult *r = check_result(L, 1);
    size_t n;
    const dkv_mem_record *v = dkv_engine_result_memory(r->r, &n);
    push_columns(L, v, n, sizeof *v, mem_fields, NF(mem_fields));
    return 1;
}

/* Columns of kernel records with the class names (class_names[kind]). */
static int push_kernel_columns(lua_State *L, const dkv_kernel_record *v, size_t n, const dkv_h5_field *f, size_t nf)
{
    push_columns(L, v, n, sizeof *v, f, nf);
    lua_newtable(L);
    for (int c = 0; c < DKV_KCLASS_N; c++) {
        lua_pushstring(L, dkv_kernel_class_name((dkv_kernel_class)c));
        lua_rawseti(L, -2, c);
    }
    lua_setfield(L, -2, "class_names");
    return 1;
}

static int result_kernels(lua_State *L)
{
    lresult *r = check_result(L, 1);
    return push_kernel_columns(L, r->k, r->nk, kern_fields, NF(kern_fields));
}

/* r:l2_kernels() -> columns of the L2 replay's kernels (record.l2_kernels) */
static int result_l2_kernels(lua_State *L)
{
    lresult *r = check_result(L, 1);
    return push_kernel_columns(L, r->l2, r->nl2, l2_fields, NF(l2_fields));
}

static int result_index(lua_State *L)
{
    luaL_checkudata(L, 1, RESULT_MT);
    const char *k = luaL_checkstring(L, 2);
    if (strcmp(k, "summary") == 0) {
        lua_getiuservalue(L, 1, 2);
        return 1;
    }
    if (strcmp(k, "config") == 0) {
        lua_getiuservalue(L, 1, 1);
        return 1;
    }
    static const luaL_Reg m[] = {{"requests", result_requests}, {"steps", result_steps},
                                 {"memory", result_memory},     {"kernels", result_kernels},
                                 {"l2_kernels", result_l2_kernels},
                                 {NULL, NULL}};
    for (const luaL_Reg *r = m; r->name; r++)
        if (strcmp(k, r->name) == 0) {
            lua_pushcfunction(L, r->func);
            return 1;
        }
    return luaL_error(L, "dkv result: no field '%s' (fields: summary, config, requests(), steps(), memory(), "
                         "kernels())", k);
}

static void push_summary(lua_State *L, const dkv_run_summary *s)
{
    lua_createtable(L, 0, (int)NF(sum_fields));
    for (size_t i = 0; i < NF(sum_fields); i++) {
        const unsigned char *p = (const unsigned char *)s + sum_fields[i].off;
        if (sum_fields[i].type == 'u') {
            uint64_t v;
            memcpy(&v, p, 8);
            if (v <= (uint64_t)LUA_MAXINTEGER)
                lua_pushinteger(L, (lua_Integer)v);
            else
                lua_pushnumber(L, (lua_Number)v);   /* 2^63 or more: a float, not a negative integer */
        } else {
            double v;
            memcpy(&v, p, 8);
            lua_pushnumber(L, v);
        }
        lua_setfield(L, -2, sum_fields[i].name);
    }
}

/* ---------------------------------------------------------------- dkv.simulate */

static int lsim_gc(lua_State *L)
{
    dkv_lsim *s = luaL_checkudata(L, 1, LSIM_MT);
    dkv_lsim_free(s);
    return 0;
}

static double rho_callback(void *ud, uint64_t request, uint32_t block, double rho)
{
    dkv_lsim *s = ud;
    if (s->cb_failed)
        return NAN;
    lua_State *L = s->L;
    lua_rawgeti(L, LUA_REGISTRYINDEX, s->cb_ref);
    lua_pushinteger(L, (lua_Integer)request);
    lua_pushinteger(L, block);
    lua_pushnumber(L, rho);
    if (lua_pcall(L, 3, 1, 0) != LUA_OK) {
        snprintf(s->cb_err, sizeof s->cb_err, "%s", lua_isstring(L, -1) ? lua_tostring(L, -1) : "error");
        s->cb_failed = true;
        lua_pop(L, 1);
        return NAN;
    }
    double v = lua_tonumber(L, -1);
    if (lua_type(L, -1) != LUA_TNUMBER) {   /* a numeric string is a mistake too */
        snprintf(s->cb_err, sizeof s->cb_err, "returned a %s for request %llu block %u, expected a number",
                 luaL_typename(L, -1), (unsigned long long)request, block);
        s->cb_failed = true;
        v = NAN;
    } else if (!isfinite(v)) {               /* the engine would otherwise fall back to rho */
        snprintf(s->cb_err, sizeof s->cb_err, "returned %g for request %llu block %u, expected a finite number",
                 v, (unsigned long long)request, block);
        s->cb_failed = true;
    }
    lua_pop(L, 1);
    return v;
}

typedef struct prog { lua_State *L; } prog;

static void on_progress(void *user, double done, double total)
{
    prog *p = user;
    dkv_lua_progress(p->L, "simulate", done, total);
}

/* The preset cfg[key] names: the string itself, a table's `base`, or "" (given inline). */
static void preset_name(lua_State *L, int cfg_idx, const char *key, char *out, size_t n)
{
    out[0] = '\0';
    int t = lua_getfield(L, cfg_idx, key);
    if (t == LUA_TSTRING)
        snprintf(out, n, "%s", lua_tostring(L, -1));
    else if (t == LUA_TTABLE && lua_getfield(L, -1, "base") == LUA_TSTRING)
        snprintf(out, n, "%s", lua_tostring(L, -1));
    lua_settop(L, lua_gettop(L) - (t == LUA_TTABLE ? 2 : 1));
}

void dkv_lsim_result_set_backend(lua_State *L, int idx, const char *backend)
{
    lresult *r = luaL_checkudata(L, idx, RESULT_MT);
    snprintf(r->backend, sizeof r->backend, "%s", backend);
    snprintf(r->cost_profile, sizeof r->cost_profile, "measured");
    r->gpu_expected_error[0] = '\0';
}

void dkv_lsim_result_set_device(lua_State *L, int idx, const char *device, const char *driver)
{
    lresult *r = luaL_checkudata(L, idx, RESULT_MT);
    snprintf(r->device, sizeof r->device, "%s", device ? device : "");
    snprintf(r->driver, sizeof r->driver, "%s", driver ? driver : "");
}

/* Runs the engine on the configuration table at cfg_idx with the backend make() creates and
 * pushes the result (l_engine_cfg.h).  dkv.simulate and dkv.execute share it. */
int dkv_lsim_run(lua_State *L, int cfg_idx, const char *who, dkv_lsim_backend_fn make, void *ud)
{
    cfg_idx = lua_absindex(L, cfg_idx);
    luaL_checktype(L, cfg_idx, LUA_TTABLE);
    int base = lua_gettop(L);
    dkv_lsim *s = lua_newuserdatauv(L, sizeof *s, 0);                /* base + 1 */
    memset(s, 0, sizeof *s);
    s->cb_ref = LUA_NOREF;
    luaL_setmetatable(L, LSIM_MT);
    dkv_lsim_parse(L, cfg_idx, s);                                    /* base + 2: resolved config */
    if (strcmp(who, "dkv.execute") == 0) {   /* the simulator's options (dkv.execute refuses cfg.sim): an executed
                                              * run's saved config does not carry their defaults as if they applied */
        lua_pushnil(L);
        lua_setfield(L, base + 2, "sim");
    }
    lresult *res = lua_newuserdatauv(L, sizeof *res, 2);              /* base + 3 */
    memset(res, 0, sizeof *res);
    luaL_setmetatable(L, RESULT_MT);
    res->seed = s->seed;
    snprintf(res->backend, sizeof res->backend, "%s", strcmp(who, "dkv.execute") == 0 ? "cuda" : "sim");
    snprintf(res->device, sizeof res->device, "%s", s->gpu.name);
    preset_name(L, cfg_idx, "gpu", res->gpu_preset, sizeof res->gpu_preset);
    preset_name(L, cfg_idx, "model", res->model_preset, sizeof res->model_preset);
    int ncls = 0;
    for (uint32_t b = s->gpu.kclass_set; b; b &= b - 1)
        ncls++;
    snprintf(res->gpu_expected_error, sizeof res->gpu_expected_error, "%s",
             strcmp(res->backend, "sim") == 0 ? s->gpu.expected_error : "");
    if (strcmp(res->backend, "cuda") == 0)
        snprintf(res->cost_profile, sizeof res->cost_profile, "measured");
    else if (s->gpu.profile_name[0])
        snprintf(res->cost_profile, sizeof res->cost_profile, "profile: %.50s", s->gpu.profile_name);
    else if (ncls)
        snprintf(res->cost_profile, sizeof res->cost_profile, "calibrated: %d kernel classes", ncls);
    else
        snprintf(res->cost_profile, sizeof res->cost_profile, "roofline");
    if (s->ec.retention.mode == DKV_RHO_CALLBACK) {
        s->ec.retention.callback = rho_callback;
        s->ec.retention.callback_ud = s;
    }
    dkv_err err = {0};
    dkv_backend be = {0};
    if (make(s, ud, &be, &err) != DKV_OK)
        return luaL_error(L, "%s: %s", who, err.msg);
    prog pg = {L};
    s->ec.backend = &be;
    s->ec.progress = on_progress;
    s->ec.progress_user = &pg;
    if (s->record_kernels || s->so.l2_records) {
        s->ec.on_kernel = on_kernel;
        s->ec.on_kernel_user = res;
    }
    dkv_status st = s->run ? s->run(s, s->run_ud, &res->r, &err) : dkv_engine_run(&s->ec, &res->r, &err);
    dkv_backend_free(&be);
    dkv_err terr = {0};
    if (dkv_lsim_trace_close(s->trace, &terr) != DKV_OK && st == DKV_OK) {
        s->trace = NULL;
        return luaL_error(L, "cfg.record.trace: %s", terr.msg);
    }
    s->trace = NULL;
    if (s->ec.retention.mode == DKV_RHO_CALLBACK && (s->cb_failed || strncmp(err.msg, "retention.callback ", 19) == 0)) {
        lua_Debug ar;   /* name the callback by where it is defined */
        char where[256] = "?";
        lua_rawgeti(L, LUA_REGISTRYINDEX, s->cb_ref);
        if (lua_getinfo(L, ">S", &ar))
            snprintf(where, sizeof where, "%s:%d", ar.short_src, ar.linedefined);
        if (s->cb_failed)
            return luaL_error(L, "cfg.policies.retention.callback (%s): %s", where, s->cb_err);
        return luaL_error(L, "cfg.policies.retention.callback (%s) %s", where, err.msg + 19);
    }
    if (st == DKV_EINTR) {
        dkv_lua_mark_interrupted(L);   /* sticky: a pcall around this call does not end the stop */
        return luaL_error(L, "%s: %s", who, err.msg);
    }
    if (st != DKV_OK)
        return luaL_error(L, "cfg: %s", err.msg);
    if (res->kernel_oom)
        return luaL_error(L, "%s: out of memory for kernel records (set cfg.record.kernels and l2_kernels = false)", who);
    lua_pushvalue(L, base + 2);
    lua_setiuservalue(L, base + 3, 1);
    push_summary(L, dkv_engine_result_summary(res->r));
    lua_pushstring(L, s->ec.decode.cache == DKV_CACHE_SPARSE ? "sparse" : "dense");
    lua_setfield(L, -2, "attention");
    lua_setiuservalue(L, base + 3, 2);
    dkv_lsim_free(s);
    lua_settop(L, base + 3);
    return 1;
}

static dkv_status make_sim(dkv_lsim *s, void *ud, dkv_backend *out, dkv_err *err)
{
    (void)ud;
    return dkv_sim_backend_new(&s->so, out, err);
}

/* dkv.simulate(cfg) -> result */
static int simulate_body(lua_State *L)
{
    return dkv_lsim_run(L, 1, "dkv.simulate", make_sim, NULL);
}

static int l_simulate(lua_State *L)
{
    dkv_lua_param_gate(L);
    luaL_checktype(L, 1, LUA_TTABLE);
    lua_settop(L, 1);
    return dkv_lua_timed(L, simulate_body);
}

/* ---------------------------------------------------------------- dkv.save */

static void h5_check(lua_State *L, dkv_status st, const dkv_err *err)
{
    if (st != DKV_OK)
        luaL_error(L, "dkv.save: %s", err->msg);
}

static void save_table(lua_State *L, dkv_h5_run *run, const char *name, const void *recs, size_t n, size_t size,
                       const dkv_h5_field *f, size_t nf)
{
    dkv_err err = {0};
    dkv_h5_table *t;
    h5_check(L, dkv_h5_table_create(run, name, size, f, nf, &t, &err), &err);
    h5_check(L, dkv_h5_table_append(t, recs, n, &err), &err);
    dkv_h5_table_close(t);
}

/* dkv.save(result, name) -> true, or false when the script has no output file */
static int save_body(lua_State *L);

static int l_save(lua_State *L)
{
    dkv_lua_param_gate(L);
    return dkv_lua_timed(L, save_body);
}

static int save_body(lua_State *L)
{
    lresult *r = check_result(L, 1);
    const char *name = luaL_checkstring(L, 2);
    luaL_argcheck(L, lua_isnoneornil(L, 3), 3, "dkv.save(result, name): results go to the run's output file (-o)");
    lua_getiuservalue(L, 1, 1);
    int cfg = lua_gettop(L);
    dkv_h5_run *run = dkv_lua_run_begin(L, name, cfg, r->seed);
    if (!run) {
        lua_pushboolean(L, 0);
        return 1;
    }
    dkv_lua_run_origin(L, run, &(dkv_run_origin){r->backend, r->device, r->driver, r->gpu_preset, r->model_preset,
                                                 r->cost_profile, r->gpu_expected_error});
    dkv_err err = {0};
    const dkv_run_summary *s = dkv_engine_result_summary(r->r);
    for (size_t i = 0; i < NF(sum_fields); i++) {
        const unsigned char *p = (const unsigned char *)s + sum_fields[i].off;
        char key[96];
        if (sum_fields[i].type == 'u') {
            uint64_t v;
            memcpy(&v, p, 8);
            h5_check(L, dkv_h5_attr_u64(run, "summary", sum_fields[i].name, v, &err), &err);
        } else {
            double v;
            memcpy(&v, p, 8);
            h5_check(L, dkv_h5_attr_f64(run, "summary", sum_fields[i].name, v, &err), &err);
        }
        snprintf(key, sizeof key, "units.%s", sum_fields[i].name);
        h5_check(L, dkv_h5_attr_str(run, "summary", key, sum_fields[i].unit, &err), &err);
    }
    h5_check(L, dkv_h5_attr_str(run, "summary", "device_mem_model_name", dkv_devmem_model_name(s->device_mem_model),
                                &err), &err);
    /* a few parameters as attributes, for filtering runs without parsing the config */
    static const char *const params[][2] = {{"model", "name"}, {"gpu", "name"}};
    for (size_t i = 0; i < 2; i++) {
        lua_getfield(L, cfg, params[i][0]);
        if (lua_istable(L, -1) && lua_getfield(L, -1, params[i][1]) == LUA_TSTRING)
            h5_check(L, dkv_h5_attr_str(run, "params", params[i][0], lua_tostring(L, -1), &err), &err);
        lua_settop(L, cfg);
    }
    static const char *const sub[][2] = {{"scheduler", "kind"}, {"decode", "cache"}, {"mem", "kind"},
                                         {"instances", "placement"}};
    for (size_t i = 0; i < 4; i++) {
        lua_getfield(L, cfg, sub[i][0]);
        if (lua_istable(L, -1) && lua_getfield(L, -1, sub[i][1]) == LUA_TSTRING) {
            char key[64];
            snprintf(key, sizeof key, "%s.%s", sub[i][0], sub[i][1]);
            h5_check(L, dkv_h5_attr_str(run, "params", key, lua_tostring(L, -1), &err), &err);
        }
        lua_settop(L, cfg);
    }
    size_t n;
    const dkv_req_record *rq = dkv_engine_result_requests(r->r, &n);
    save_table(L, run, "requests", rq, n, sizeof *rq, req_fields, NF(req_fields));
    const dkv_step_record *st = dkv_engine_result_steps(r->r, &n);
    if (n)
        save_table(L, run, "steps", st, n, sizeof *st, step_fields, NF(step_fields));
    const dkv_mem_record *mr = dkv_engine_result_memory(r->r, &n);
    if (n)
        save_table(L, run, "memory", mr, n, sizeof *mr, mem_fields, NF(mem_fields));
    if (r->nk)
        save_table(L, run, "kernels", r->k, r->nk, sizeof *r->k, kern_fields, NF(kern_fields));
    if (r->nl2)
        save_table(L, run, "l2_kernels", r->l2, r->nl2, sizeof *r->l2, l2_fields, NF(l2_fields));
    if (r->out.n) {
        dkv_tokenizer tok;
        cfg_tokenizer(L, cfg, &tok);
        h5_check(L, dkv_exec_outputs_save(run, &r->out, &tok, &err), &err);
    }
    dkv_lua_run_end(L, run);
    lua_pushboolean(L, 1);
    return 1;
}

/* dkv.summary_fields() -> {{name=, unit=, doc=}, ...} in order (for tables and docs) */
static int l_summary_fields(lua_State *L)
{
    lua_createtable(L, (int)NF(sum_fields), 0);
    for (size_t i = 0; i < NF(sum_fields); i++) {
        lua_createtable(L, 0, 3);
        lua_pushstring(L, sum_fields[i].name);
        lua_setfield(L, -2, "name");
        lua_pushstring(L, sum_fields[i].unit);
        lua_setfield(L, -2, "unit");
        lua_pushstring(L, sum_fields[i].doc);
        lua_setfield(L, -2, "doc");
        lua_rawseti(L, -2, (lua_Integer)i + 1);
    }
    return 1;
}

void dkv_lua_open_engine(lua_State *L)
{
    if (luaL_newmetatable(L, LSIM_MT)) {
        lua_pushcfunction(L, lsim_gc);
        lua_setfield(L, -2, "__gc");
    }
    lua_pop(L, 1);
    if (luaL_newmetatable(L, RESULT_MT)) {
        lua_pushcfunction(L, result_gc);
        lua_setfield(L, -2, "__gc");
        lua_pushcfunction(L, result_gc);
        lua_setfield(L, -2, "__close");
        lua_pushcfunction(L, result_index);
        lua_setfield(L, -2, "__index");
        lua_pushstring(L, RESULT_MT);
        lua_setfield(L, -2, "__name");
    }
    lua_pop(L, 1);
    static const luaL_Reg fns[] = {{"simulate", l_simulate}, {"save", l_save},
                                   {"summary_fields", l_summary_fields}, {NULL, NULL}};
    luaL_setfuncs(L, fns, 0);
}
