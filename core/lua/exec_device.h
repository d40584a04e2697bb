/* exec_device.h - dkv.execute's device table (the CUDA backend's report as a Lua table). */
#ifndef DKV_LUA_EXEC_DEVICE_H
#define DKV_LUA_EXEC_DEVICE_H

#include <lua.h>
#include <stdint.h>

#include "cuda/backend.h"

void dkv_exec_set_u(lua_State *L, const char *k, uint64_t v);   /* t[k] = v on the table at the top */
void dkv_exec_set_f(lua_State *L, const char *k, double v);
/* Pushes the device table of one backend's report: its sizes, times, copies, projections and the
 * memory series ({step, time_s, free_bytes, total_bytes, pool_blocks, staging_blocks, host_bytes}). */
void dkv_exec_push_device(lua_State *L, const dkv_cuda_backend_report *r);

#endif
