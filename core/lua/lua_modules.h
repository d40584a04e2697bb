/* lua_modules.h - the parts of the `dkv` Lua module.  luaopen_dkv (core/lua/dkv_lua.c) creates
 * the `dkv` table and calls each opener with that table on top of the stack; an opener adds its
 * fields (functions, sub-tables) to it and leaves the stack as it found it. */
#ifndef DKV_LUA_MODULES_H
#define DKV_LUA_MODULES_H

#include <lua.h>

void dkv_lua_open_mem(lua_State *L);     /* dkv.mem.*                         core/lua/l_mem.c */
void dkv_lua_open_engine(lua_State *L);  /* dkv.simulate, dkv.save, dkv.budget core/lua/l_engine.c */
void dkv_lua_open_execute(lua_State *L); /* dkv.execute (CUDA backend)        core/lua/l_execute.c */
void dkv_lua_open_param(lua_State *L);   /* dkv.param, dkv.params             core/lua/l_param.c */

/* Declared parameters (core/lua/l_param.c).  Every binding that starts work (dkv.simulate,
 * dkv.execute, dkv.write_run, dkv.save, dkv.mem.new) calls the gate first: it raises a usage error
 * (exit 2) when a -D name is one the script has not declared or read, and in the listing mode of
 * `dkv run SCRIPT --help` it stops the script there, the parameters being declared. */
void  dkv_lua_param_gate(lua_State *L);
int   dkv_lua_param_check_end(lua_State *L);   /* the same check once a script ended (a lua_CFunction) */
char *dkv_lua_param_listing(lua_State *L);     /* "  name  default  help\n" lines; caller frees */

/* Runs f(L) as time spent inside dkv (not counted by the Lua time limit); for the bindings that
 * can run long.  An error raised inside is accounted for by the sandbox's pcall and finish. */
int dkv_lua_timed(lua_State *L, lua_CFunction f);

/* Passes a message to the sandbox's notice callback (dkv_lua_config.notice), if any. */
void dkv_lua_notice(lua_State *L, const char *fmt, ...);

/* Sandbox internals used by l_param.c (core/lua/dkv_lua.c). */
void        dkv_lua__stop_usage(lua_State *L);   /* the error being raised is a usage error (exit 2) */
void        dkv_lua__stop_listed(lua_State *L);  /* listing mode: the parameters are declared, stop */
int         dkv_lua__listing(lua_State *L);
const char *dkv_lua__script_name(lua_State *L);

#endif
