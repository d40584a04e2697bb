/* l_mem.h - internals of dkv.mem shared by l_mem.c and l_mem_aux.c (not a public API). */
#ifndef DKV_LUA_L_MEM_H
#define DKV_LUA_L_MEM_H

#include <lua.h>

#include "mem/mem.h"

/* Pushes a table of every dkv_mem_stats field, with s.tags.<tag> = {requested, allocated,
 * peak_allocated, n_acquire} and, for blockpool instances, s.instance_used = {bytes, ...}. */
void dkv_lua_push_mem_stats(lua_State *L, const dkv_mem *m, const dkv_mem_stats *s);

/* dkv.mem.requests{file = PATH | synth = {...}, first_n =, rate_scale =, time_scale =, format =,
 *                  prompt_max =, gen_max =}   (clamps of the lengths; 0 = none)
 * -> {arrival_s = {...}, prompt = {...}, gen = {...}, n =, source =}, or nil, message when the
 * file does not exist (so a script can fall back to a synthetic stream). */
int dkv_lua_mem_requests(lua_State *L);

#endif
