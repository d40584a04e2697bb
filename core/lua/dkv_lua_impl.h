/* dkv_lua_impl.h - the sandbox's state, shared by the files of the sandbox (dkv_lua.c: limits,
 * libraries, running; dkv_lua_output.c: the output file and provenance).  Not for bindings: they
 * use dkv_lua.h and lua_modules.h. */
#ifndef DKV_LUA_IMPL_H
#define DKV_LUA_IMPL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "lua/dkv_lua.h"

#define HOOK_EVERY 10000

enum { STOP_NONE = 0, STOP_INSTR, STOP_MEM, STOP_INTR, STOP_USAGE, STOP_LISTED, STOP_TIME };

struct dkv_lua {
    lua_State *L;
    char *root, *output_path;
    char **params;
    size_t nparams;
    uint32_t shard_index, shard_count;
    uint64_t instr_limit, instr_count;
    size_t mem_limit, mem_used;
    int stop;                  /* why the script was stopped (sticky) */
    dkv_progress_fn progress;
    void *progress_ud;
    void (*notice)(void *ud, const char *msg);
    void *notice_ud;
    char *traceback;
    char *script_path, *script_text, *script_dir;
    dkv_h5 *out;
    size_t runs_written;
    bool list_params;          /* dkv_lua_config.list_params */
    double time_limit_s;       /* Lua run time limit (0: none) */
    double t_start;            /* monotonic clock when the script started */
    double c_time;             /* seconds inside dkv's long calls (dkv_lua_timed) */
    double c_t0;               /* start of the outermost call in progress */
    int c_depth;               /* dkv_lua_timed calls in progress */
    char where[160];           /* "file:line" at the last hook (for memory errors) */
    bool usage_error;          /* the last run stopped on a usage error */
};

#endif
