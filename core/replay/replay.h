/* replay.h - a trace file's allocation events replayed through a memory manager (`dkv replay`,
 * and any tool that wants the same): core/trace reads the file, core/mem's replayer applies it.
 *
 *     dkv_mem *m; dkv_mem_new(&opts, &m, &err);
 *     dkv_replay_result r;
 *     dkv_replay_trace("alloc.csv", m, on_anomaly, user, &r, &err);
 *     ... dkv_mem_stats_get(m, &s); r.counts ...
 *
 * Events: alloc / free go to the manager (owner from the event's tag, request, instance, layer,
 * step; an instance beyond the manager's n_instances counts as instance 0); request events with
 * sub = admit reserve the event's bytes for the request (static manager), sub = finish releases
 * the reservation; every other event only advances the clock.  The trace must be in time order. */
#ifndef DKV_REPLAY_REPLAY_H
#define DKV_REPLAY_REPLAY_H

#include <stdint.h>

#include "mem/mem.h"
#include "mem/mem_replay.h"
#include "util/status.h"

typedef struct dkv_replay_result {
    uint64_t n_events;            /* events read */
    uint64_t n_other;             /* events that were not alloc / free (request events included) */
    uint64_t anomalies;           /* events the manager could not apply (not ENOMEM): see on_anomaly */
    double   last_time_s;         /* time of the last event */
    dkv_mem_replay_counts counts; /* the replayer's counts at the end */
} dkv_replay_result;

/* Called for each anomaly (a free of an unknown id, an id allocated twice, ...): the trace line
 * (or record), the message, and how many came before this one. */
typedef void (*dkv_replay_anomaly_fn)(void *user, uint64_t line, const char *msg, uint64_t n_before);

/* Replays every event of trace_path through m.  Errors: the reader's (file:line, field), an event
 * earlier than the one before (DKV_EFORMAT naming line and field 'time_s'), DKV_EINTR when
 * dkv_interrupt_requested() (checked every 65,536 events).  *out holds what was done so far. */
dkv_status dkv_replay_trace(const char *trace_path, dkv_mem *m, dkv_replay_anomaly_fn on_anomaly, void *user,
                            dkv_replay_result *out, dkv_err *err);

#endif
