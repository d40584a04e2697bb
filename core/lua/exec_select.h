/* exec_select.h - the sparse selections of dkv.execute{outputs = true} (decode/follow.h's
 * dkv_select_report, both backends' on_select hook): collected per (request, step, layer, set),
 * returned as dev.outputs.select, and read back from opts.follow.select for selection replay
 * (docs/CPU.md "CPU against CUDA").  Bookkeeping free of backend types, tested anywhere.
 *
 * dev.outputs.select = {request = {...}, step = {...}, layer = {...}, set = {...}, sets = {...},
 *   keep = {...}, kept = {{...}, ...}, differs = {...}, margin = {...}, mag = {...},
 *   lam = {...}, followed = {...}}: one row per set in report order; kept holds the keep canvas positions
 *   (0-based, ascending); differs 1 when the backend's own top-k is another set; margin its own
 *   score of the lowest kept key minus that of the highest dropped key (math.huge when nothing
 *   was dropped); mag the larger |score| of the two; lam the largest attention logit of the
 *   block's query rows (dkv_select_report); followed 1 when the set was replayed. */
#ifndef DKV_LUA_EXEC_SELECT_H
#define DKV_LUA_EXEC_SELECT_H

#include <lua.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "decode/follow.h"
#include "lua/exec_follow.h"

typedef struct dkv_exec_select_row {
    uint64_t step;
    uint32_t request, layer, set, sets, keep;
    uint8_t  differs, followed;
    float    margin, mag, lam;
    size_t   pos;          /* first kept position in dkv_exec_select.pos */
} dkv_exec_select_row;

typedef struct dkv_exec_select {
    dkv_exec_select_row *row;
    size_t    n, cap;
    uint32_t *pos;
    size_t    n_pos, cap_pos;
    bool      failed;      /* out of memory in the hook: raised after the run */
} dkv_exec_select;

/* on_select hook (user: a dkv_exec_select): appends the report's sets. */
void dkv_exec_select_hook(void *user, const dkv_select_report *r);
/* Pushes dev.outputs.select (above); nothing is pushed and 0 returned when s has no rows. */
int  dkv_exec_select_push(lua_State *L, const dkv_exec_select *s);
void dkv_exec_select_free(dkv_exec_select *s);

/* Reads the `select` field of the follow table at idx (path: "opts.follow") into f (after
 * dkv_exec_follow_read): every request gets has_sel and its records.  No field: nothing changes
 * (token replay only).  Raises a Lua error naming the field and row on bad input: columns of
 * different lengths, a request not in f, a set row out of order (set 0 .. sets-1 of one
 * (request, step, layer) in consecutive rows), kept not an array of keep integers >= 0. */
void dkv_exec_select_read(lua_State *L, int idx, const char *path, dkv_exec_follow *f);

#endif
