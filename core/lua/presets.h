/* presets.h - GPU and model descriptions from Lua: a preset name or a table.
 *
 * Presets are data files datasets/presets/{gpu,model}/<name>.lua, each `return { ... }`,
 * loaded (by name only: [a-z0-9_.-]+) from the project root of the running sandbox, in an
 * empty environment.  A table may name `base = "<preset>"` and override some fields; without
 * a base every required field must be given.  Unknown or malformed fields raise a Lua error
 * naming the field ("gpu.hbm_bw: must be > 0 (got 0)", "gpu: unknown field 'hbm_bww' (did you
 * mean 'hbm_bw'?)").  docs/LUA_API.md lists the fields and their units.
 */
#ifndef DKV_LUA_PRESETS_H
#define DKV_LUA_PRESETS_H

#include <lua.h>

#include "model/model.h"

/* Fill *out from the value at idx (preset name or table); validate with dkv_model_validate /
 * dkv_gpu_validate.  Return 1; raise a Lua error otherwise. */
int dkv_lua_check_model(lua_State *L, int idx, dkv_model *out);
int dkv_lua_check_gpu(lua_State *L, int idx, dkv_gpu *out);
/* The same, with the name of the value for error messages (e.g. "cfg.gpu"). */
int dkv_lua_check_model_at(lua_State *L, int idx, const char *path, dkv_model *out);
int dkv_lua_check_gpu_at(lua_State *L, int idx, const char *path, dkv_gpu *out);

/* Push the resolved preset table (name loaded, `base` merged, checked) for the value at idx.
 * kind is "gpu" or "model".  Raises on error. */
void dkv_lua_push_preset(lua_State *L, const char *kind, int idx);

/* Pushes an array of the preset names of kind ("gpu" or "model"), sorted. */
void dkv_lua_push_preset_names(lua_State *L, const char *kind);

/* Push a Lua table describing a filled struct (all fields, as in the preset files). */
void dkv_lua_push_model(lua_State *L, const dkv_model *m);
void dkv_lua_push_gpu(lua_State *L, const dkv_gpu *g);

#endif
