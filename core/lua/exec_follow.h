/* exec_follow.h - opts.follow of dkv.execute: a recorded trajectory (the `outputs` table of an
 * earlier dkv.execute{outputs = true}: id, tokens, step per request) turned into the per-request
 * dkv_follow arrays a backend replays (decode/follow.h, docs/CPU.md "CPU against CUDA"). */
#ifndef DKV_LUA_EXEC_FOLLOW_H
#define DKV_LUA_EXEC_FOLLOW_H

#include <lua.h>
#include <stdint.h>

#include "decode/follow.h"

typedef struct dkv_exec_follow {
    dkv_follow *req;       /* (n) indexed by request id */
    uint32_t   *buf;       /* tokens and steps of every request, one allocation */
    uint32_t    n;
    dkv_follow_sel *sel;   /* opts.follow.select (exec_select.h): the records of every request */
    uint32_t   *sel_pos;   /* their kept positions */
} dkv_exec_follow;

/* Reads the table at idx (path names it in errors: "opts.follow"): fields id, tokens, step,
 * arrays of the same length; ids must be 0 .. n-1, each once; tokens[i] and step[i] arrays of the
 * same length (a position never committed: token -1, step -1).  Raises a Lua error naming the
 * field on bad input. */
void dkv_exec_follow_read(lua_State *L, int idx, const char *path, dkv_exec_follow *f);
void dkv_exec_follow_free(dkv_exec_follow *f);

#endif
