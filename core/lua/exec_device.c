/* exec_device.c - dkv.execute's device table on the CUDA backend: the backend's report
 * (cuda/backend.h) as Lua fields, the memory series as columns (docs/LUA_API.md "dkv.execute"). */
#ifdef DKV_HAVE_CUDA
#include <lauxlib.h>
#include <math.h>

#include "lua/exec_device.h"

void dkv_exec_set_u(lua_State *L, const char *k, uint64_t v)
{
    lua_pushinteger(L, (lua_Integer)v);
    lua_setfield(L, -2, k);
}

void dkv_exec_set_f(lua_State *L, const char *k, double v)
{
    lua_pushnumber(L, v);
    lua_setfield(L, -2, k);
}

void dkv_exec_push_device(lua_State *L, const dkv_cuda_backend_report *r)
{
    lua_createtable(L, 0, 24);
    lua_pushstring(L, r->device);
    lua_setfield(L, -2, "device");
    dkv_exec_set_u(L, "weights_bytes", r->weights_bytes);
    dkv_exec_set_u(L, "arena_bytes", r->arena_bytes);
    dkv_exec_set_u(L, "block_bytes", r->block_bytes);
    dkv_exec_set_u(L, "arena_blocks", r->arena_blocks);
    dkv_exec_set_u(L, "staging_blocks", r->staging_blocks);
    dkv_exec_set_u(L, "scratch_bytes", r->scratch_bytes);
    dkv_exec_set_u(L, "host_tier_bytes", r->host_tier_bytes);
    dkv_exec_set_u(L, "mem_total_bytes", r->mem_total_bytes);
    dkv_exec_set_u(L, "mem_free_min_bytes", r->mem_free_min_bytes);
    dkv_exec_set_u(L, "devmem_counted_bytes", r->devmem_counted_bytes);
    dkv_exec_set_u(L, "devmem_allocated_bytes", r->devmem_allocated_bytes);
    dkv_exec_set_u(L, "meta_bytes", r->meta_bytes);
    dkv_exec_set_u(L, "steps", r->steps);
    dkv_exec_set_u(L, "items", r->items);
    dkv_exec_set_f(L, "gpu_time_s", r->gpu_time_s);
    dkv_exec_set_f(L, "wall_time_s", r->wall_time_s);
    dkv_exec_set_f(L, "copy_time_s", r->copy_time_s);
    dkv_exec_set_u(L, "pcie_h2d_bytes", r->pcie_h2d_bytes);
    dkv_exec_set_u(L, "pcie_d2h_bytes", r->pcie_d2h_bytes);
    dkv_exec_set_u(L, "xfer_h2d_counted", r->xfer_h2d_counted);
    dkv_exec_set_u(L, "xfer_d2h_counted", r->xfer_d2h_counted);
    dkv_exec_set_u(L, "n_compress", r->n_compress);
    dkv_exec_set_f(L, "compressor_warm_s", r->compressor_warm_s);
    dkv_exec_set_f(L, "compress_rel_err_mean", r->n_compress ? r->compress_err_sum / (double)r->n_compress : NAN);
    lua_createtable(L, 0, 7);   /* memory over time: columns, one row per step */
    static const char *const cols[] = {"step", "time_s", "free_bytes", "total_bytes", "pool_blocks", "staging_blocks",
                                       "host_bytes"};
    for (int c = 0; c < 7; c++) {
        lua_createtable(L, (int)r->n_series, 0);
        for (size_t i = 0; i < r->n_series; i++) {
            const dkv_cuda_mem_sample *m = &r->series[i];
            switch (c) {
            case 0: lua_pushinteger(L, (lua_Integer)m->step_index); break;
            case 1: lua_pushnumber(L, m->time_s); break;
            case 2: lua_pushinteger(L, (lua_Integer)m->free_bytes); break;
            case 3: lua_pushinteger(L, (lua_Integer)m->total_bytes); break;
            case 4: lua_pushinteger(L, m->pool_blocks_used); break;
            case 5: lua_pushinteger(L, m->staging_blocks_used); break;
            default: lua_pushinteger(L, (lua_Integer)m->host_bytes_used); break;
            }
            lua_rawseti(L, -2, (lua_Integer)i + 1);
        }
        lua_setfield(L, -2, cols[c]);
    }
    lua_setfield(L, -2, "memory");
}
#else
typedef int dkv_exec_device_unused;   /* without CUDA: nothing (ISO C wants a declaration) */
#endif
