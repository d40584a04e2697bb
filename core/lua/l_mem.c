/* l_mem.c - dkv.mem: placeholder until the memory-manager work lands. */
#include "lua/lua_modules.h"

void dkv_lua_open_mem(lua_State *L) { (void)L; }
