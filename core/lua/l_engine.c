/* l_engine.c - dkv.simulate and friends: placeholder until the engine work lands. */
#include "lua/lua_modules.h"

void dkv_lua_open_engine(lua_State *L) { (void)L; }
