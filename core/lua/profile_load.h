/* profile_load.h - a measured GPU profile from datasets/profiles/<name>.lua (docs/PROFILE_FORMAT.md).
 *
 * Loaded once per Lua state and kept in its registry (the state owns it; a dkv_gpu borrows it
 * for the state's life).  Every field is checked; an error names the file and the field. */
#ifndef DKV_LUA_PROFILE_LOAD_H
#define DKV_LUA_PROFILE_LOAD_H

#include <lua.h>

#include "cost/profile.h"

/* The profile `name` (a-z 0-9 - _ .), loading it on first use.  path names the referring field
 * for errors (e.g. gpu("h200").profile).  Raises a Lua error on any problem. */
const dkv_profile *dkv_lua_load_profile(lua_State *L, const char *name, const char *path);

#endif
