/* l_engine_cfg.h - dkv.simulate's configuration table -> engine + simulator configuration.
 * Internal to core/lua (l_engine.c, l_engine_cfg.c).  docs/LUA_API.md ("dkv.simulate")
 * documents every field, its default and its unit. */
#ifndef DKV_LUA_L_ENGINE_CFG_H
#define DKV_LUA_L_ENGINE_CFG_H

#include <lua.h>
#include <stdbool.h>

#include "engine/engine.h"
#include "lua/l_engine_trace.h"
#include "sim/sim.h"

/* Everything a simulate call owns.  Lives in a Lua userdata (its __gc calls dkv_lsim_free), so a
 * Lua error raised half-way through parsing leaks nothing. */
typedef struct dkv_lsim {
    dkv_model model;
    dkv_gpu gpu;
    dkv_workload *w;
    dkv_lengths *len_tab[2];      /* empirical prompt / gen tables */
    dkv_engine_config ec;         /* model, gpu, workload point into this struct */
    dkv_sim_options so;
    double *entropies;            /* retention.entropies */
    double *weights;              /* instances.weights */
    lua_State *L;                 /* for the retention callback */
    int cb_ref;                   /* registry ref of retention.callback, LUA_NOREF when none */
    bool cb_failed;
    char cb_err[512];
    bool record_kernels;
    dkv_lsim_trace *trace;        /* cfg.record.trace, NULL when none */
    uint64_t seed;
    /* set by a backend maker that runs the engine itself (dkv.execute's threaded instances): it
       replaces dkv_engine_run; the backend the maker returned is then unused */
    dkv_status (*run)(struct dkv_lsim *s, void *ud, dkv_engine_result **out, dkv_err *err);
    void *run_ud;
} dkv_lsim;

/* Parses the configuration table at idx into *s (zeroed by the caller) and pushes the resolved
 * configuration (every field with its value, defaults filled in) for provenance.  Raises a Lua
 * error naming the field (unknown keys get the nearest valid one), or for a configuration the
 * engine rejects (block length not dividing a generation, a model that does not fit...). */
void dkv_lsim_parse(lua_State *L, int idx, dkv_lsim *s);

/* Releases what *s owns (workload, tables, arrays, callback ref).  Idempotent. */
void dkv_lsim_free(dkv_lsim *s);

/* Runs the engine on the configuration table at cfg_idx with the backend make(s, ud, ...)
 * creates from the parsed configuration, and pushes the result (the dkv.result userdata that
 * dkv.save takes).  Raises a Lua error naming `who` on failure.  Used by dkv.simulate
 * (l_engine.c) and dkv.execute (l_execute.c). */
typedef dkv_status (*dkv_lsim_backend_fn)(dkv_lsim *s, void *ud, dkv_backend *out, dkv_err *err);
int dkv_lsim_run(lua_State *L, int cfg_idx, const char *who, dkv_lsim_backend_fn make, void *ud);

/* Sets the device and driver the result at idx ran on (dkv.execute, after the run; dkv.save
 * writes them as run attributes).  Strings are copied. */
/* The result's backend ("cuda" for dkv.execute by default; "cpu" for the CPU backend), whose
 * numbers are measured. */
void dkv_lsim_result_set_backend(lua_State *L, int idx, const char *backend);
void dkv_lsim_result_set_device(lua_State *L, int idx, const char *device, const char *driver);

/* Hands a backend's per-request outputs (lua/exec_outputs.h) to the result at idx, which then
 * owns them (*o is left empty): dkv.save writes them into the run (docs/HDF5_SCHEMA.md,
 * "Generated tokens and text"), as text where the configuration's model has a tokenizer. */
struct dkv_exec_outputs;
void dkv_lua_result_take_outputs(lua_State *L, int idx, struct dkv_exec_outputs *o);

#endif
