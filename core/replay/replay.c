/* replay.c - a trace file through a memory manager (replay.h). */
#include "replay/replay.h"

#include <string.h>

#include "trace/trace.h"
#include "util/interrupt.h"

_Static_assert((int)DKV_TRACE_TAG_KV == (int)DKV_MEM_TAG_KV && (int)DKV_TRACE_TAG_STAGING == (int)DKV_MEM_TAG_STAGING &&
               (int)DKV_TRACE_TAG_COUNT == (int)DKV_MEM_TAG_COUNT, "trace and mem tag numbering differ");

/* One event through the replayer; DKV_OK, DKV_ENOMEM (the manager is full: counted by the
 * replayer) or an anomaly's status with its message in err. */
static dkv_status apply(dkv_mem_replay *rp, const dkv_trace_event *ev, uint32_t n_instances, dkv_replay_result *r,
                        dkv_err *err)
{
    dkv_mem_owner who = {.tag = ev->tag, .instance = ev->instance, .request = ev->request,
                         .layer = ev->layer, .step = ev->step};
    if (ev->instance >= n_instances)
        who.instance = 0;   /* one manager, no quotas: every instance shares it */
    switch (ev->kind) {
    case DKV_EV_ALLOC:
        return dkv_mem_replay_alloc(rp, ev->id, ev->bytes, &who, err);
    case DKV_EV_FREE:
        return dkv_mem_replay_free(rp, ev->id, err);
    case DKV_EV_REQUEST:
        r->n_other++;
        if (ev->sub == DKV_REQ_ADMIT)
            return dkv_mem_replay_admit(rp, ev->request, ev->bytes, err);
        if (ev->sub == DKV_REQ_FINISH)
            return dkv_mem_replay_finish(rp, ev->request, err);
        return DKV_OK;
    default:
        r->n_other++;
        return DKV_OK;
    }
}

dkv_status dkv_replay_trace(const char *trace_path, dkv_mem *m, dkv_replay_anomaly_fn on_anomaly, void *user,
                            dkv_replay_result *out, dkv_err *err)
{
    memset(out, 0, sizeof *out);
    dkv_mem_replay *rp = NULL;
    dkv_trace_reader *rd = NULL;
    dkv_status st;
    DKV_TRY_OR(st, dkv_mem_replay_new(m, &rp, err), done);
    DKV_TRY_OR(st, dkv_trace_reader_open(trace_path, &rd, err), done);
    uint32_t n_inst = dkv_mem_get_options(m)->n_instances ? dkv_mem_get_options(m)->n_instances : 1;
    dkv_trace_event ev;
    bool got;
    for (;;) {
        DKV_TRY_OR(st, dkv_trace_reader_next(rd, &ev, &got, err), done);
        if (!got)
            break;
        out->n_events++;
        if ((out->n_events & 0xffff) == 0 && dkv_interrupt_requested()) {
            st = dkv_err_set(err, DKV_EINTR, "interrupted after %llu events", (unsigned long long)out->n_events);
            goto done;
        }
        if (ev.time_s < out->last_time_s) {
            st = dkv_err_set(err, DKV_EFORMAT, "%s:%llu: field 'time_s': %.9g s is earlier than the event before "
                             "(%.9g s); the trace must be in time order", trace_path,
                             (unsigned long long)dkv_trace_reader_line(rd), ev.time_s, out->last_time_s);
            goto done;
        }
        out->last_time_s = ev.time_s;
        dkv_mem_replay_time(rp, ev.time_s, NULL);
        dkv_err aerr = {0};
        dkv_status a = apply(rp, &ev, n_inst, out, &aerr);
        if (a != DKV_OK && a != DKV_ENOMEM) {
            if (on_anomaly)
                on_anomaly(user, dkv_trace_reader_line(rd), aerr.msg, out->anomalies);
            out->anomalies++;
        }
    }
    st = DKV_OK;
done:
    if (rp)
        dkv_mem_replay_counts_get(rp, &out->counts);
    dkv_trace_reader_close(rd);
    dkv_mem_replay_free_handle(rp);
    return st;
}
