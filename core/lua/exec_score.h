/* exec_score.h - opts.targets of dkv.execute (teacher-forced held-out scoring, either backend):
 * the targets file read into the per-request arrays a backend takes, and the backend's scores
 * (decode/score.h) pushed as dev.score.  One reader and one table for the CPU and the CUDA
 * backend (docs/CPU.md "Quality metrics", docs/GPU.md "Held-out scoring"). */
#ifndef DKV_LUA_EXEC_SCORE_H
#define DKV_LUA_EXEC_SCORE_H

#include <lua.h>
#include <stddef.h>
#include <stdint.h>

#include "decode/score.h"
#include "model/model.h"
#include "workload/workload.h"

typedef struct dkv_exec_targets {
    dkv_workload    *tw;    /* the file read as prompts (owned) */
    const uint32_t **ptr;   /* (n) ptr[i] = request i's target token ids (into tw) */
    size_t           n;
} dkv_exec_targets;

/* Reads path, a prompts-format file (JSONL, `text` or `tokens` per line) through the model's
 * tokenizer: line i is request i's true continuation and must cover its gen_tokens.  Errors
 * name opts.targets, the file and the line: another line count than w's requests, a line
 * shorter than its request's generation. */
dkv_status dkv_exec_targets_read(dkv_exec_targets *t, const char *path, const dkv_model *m, const dkv_workload *w,
                                 dkv_err *err);
void dkv_exec_targets_free(dkv_exec_targets *t);

/* Pushes dev.score = {n, accuracy, bits_per_byte, per_request = {{n, accuracy, bits_per_byte}, ...}}
 * of n_req per-request scores (accuracy and bits per byte NaN where n = 0). */
void dkv_exec_push_score(lua_State *L, const dkv_score *s, uint32_t n_req);

#endif
