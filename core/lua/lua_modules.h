/* lua_modules.h - the parts of the `dkv` Lua module.  luaopen_dkv (core/lua/dkv_lua.c) creates
 * the `dkv` table and calls each opener with that table on top of the stack; an opener adds its
 * fields (functions, sub-tables) to it and leaves the stack as it found it. */
#ifndef DKV_LUA_MODULES_H
#define DKV_LUA_MODULES_H

#include <lua.h>

void dkv_lua_open_mem(lua_State *L);     /* dkv.mem.*                         core/lua/l_mem.c */
void dkv_lua_open_engine(lua_State *L);  /* dkv.simulate, dkv.save, dkv.budget core/lua/l_engine.c */
void dkv_lua_open_execute(lua_State *L); /* dkv.execute (CUDA backend)        core/lua/l_execute.c */

#endif
