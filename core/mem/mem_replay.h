/* mem_replay.h - replaying a recorded allocation stream through a memory manager.
 *
 * A recorded stream names its allocations with its own 64-bit ids (a trace's `id` field, a
 * PyTorch address); the replayer maps them to dkv_mem ids and keeps counts of what could not
 * be replayed.  Pure computation (core/cli reads the trace file and calls these).
 *
 *     dkv_mem_replay *r;  dkv_mem_replay_new(m, &r, &err);
 *     for each event:  dkv_mem_replay_time(r, ev.time_s, &err);
 *                      alloc -> dkv_mem_replay_alloc(r, ev.id, ev.bytes, &owner, &err)
 *                      free  -> dkv_mem_replay_free(r, ev.id, &err)
 *     dkv_mem_replay_counts(r, &c);  dkv_mem_replay_free_handle(r);
 *
 * Anomalies of the stream (an allocation that does not fit, a free of an id never allocated,
 * an id allocated twice) are counted and returned as a status with a message, and the replay
 * can go on: the manager's state is never changed by them.  A free of an id whose allocation
 * failed is counted as such and is not an error (DKV_OK). */
#ifndef DKV_MEM_REPLAY_H
#define DKV_MEM_REPLAY_H

#include "mem/mem.h"

typedef struct dkv_mem_replay dkv_mem_replay;

typedef struct dkv_mem_replay_counts {
    uint64_t n_alloc, n_free;            /* applied */
    uint64_t n_alloc_failed;             /* the manager refused (DKV_ENOMEM) */
    uint64_t n_free_of_failed;           /* frees of those (skipped) */
    uint64_t n_free_unknown;             /* frees of ids never allocated / already freed */
    uint64_t n_dup_id;                   /* alloc of an id that is live */
    uint64_t n_reserve, n_reserve_failed, n_unreserve, n_unreserve_failed;
    uint64_t live;                       /* stream ids live now */
} dkv_mem_replay_counts;

/* Borrows m (it must outlive the replayer).  *out owned by the caller. */
dkv_status dkv_mem_replay_new(dkv_mem *m, dkv_mem_replay **out, dkv_err *err);
void       dkv_mem_replay_free_handle(dkv_mem_replay *r);   /* NULL is a no-op */

/* Moves the manager's clock (deferred releases happen).  DKV_EINVAL when t goes backwards. */
dkv_status dkv_mem_replay_time(dkv_mem_replay *r, double t, dkv_err *err);
dkv_status dkv_mem_replay_alloc(dkv_mem_replay *r, uint64_t id, uint64_t bytes,
                                const dkv_mem_owner *owner, dkv_err *err);
dkv_status dkv_mem_replay_free(dkv_mem_replay *r, uint64_t id, dkv_err *err);
/* Static manager: a request's admission (reserve its maximum bytes) and completion.
 * On other managers they do nothing and return DKV_OK. */
dkv_status dkv_mem_replay_admit(dkv_mem_replay *r, uint32_t request, uint64_t max_bytes, dkv_err *err);
dkv_status dkv_mem_replay_finish(dkv_mem_replay *r, uint32_t request, dkv_err *err);

void dkv_mem_replay_counts_get(const dkv_mem_replay *r, dkv_mem_replay_counts *out);

#endif
