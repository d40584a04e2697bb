/* fuzz_trace.c - libFuzzer harness: the input is a dkv event trace, CSV or binary ("DKVTRACE" magic)
 * (core/trace).  Every event read is replayed, as `dkv replay` does, through each of the three memory
 * managers (core/mem), so hostile ids, sizes, times and tags reach the managers too. */
#include <math.h>

#include "fuzz_util.h"
#include "mem/mem.h"
#include "mem/mem_replay.h"
#include "trace/trace.h"

static void replay(const char *path, dkv_mem_kind kind)
{
    dkv_mem_options o = dkv_mem_options_default(kind);
    o.capacity_bytes = 1ull << 30;
    o.sample_stride = 1;
    dkv_mem *m = NULL;
    dkv_mem_replay *rp = NULL;
    dkv_trace_reader *rd = NULL;
    dkv_err err = {0};
    if (dkv_mem_new(&o, &m, &err) != DKV_OK || dkv_mem_replay_new(m, &rp, &err) != DKV_OK)
        abort();
    if (dkv_trace_reader_open(path, &rd, &err) == DKV_OK) {
        dkv_trace_event ev;
        bool got;
        double last_t = 0;
        for (int n = 0; n < 100000; n++) {
            dkv_status st = dkv_trace_reader_next(rd, &ev, &got, &err);
            if (st != DKV_OK) {
                if (err.msg[0] == '\0')
                    abort();
                break;
            }
            if (!got)
                break;
            if (!(ev.time_s >= last_t))
                break;   /* dkv replay stops here: the trace must be in time order */
            last_t = ev.time_s;
            dkv_mem_replay_time(rp, ev.time_s, NULL);
            dkv_mem_owner who = {.tag = ev.tag, .instance = 0, .request = ev.request, .layer = ev.layer,
                                 .step = ev.step};
            if (ev.kind == DKV_EV_ALLOC)
                dkv_mem_replay_alloc(rp, ev.id, ev.bytes, &who, &err);
            else if (ev.kind == DKV_EV_FREE)
                dkv_mem_replay_free(rp, ev.id, &err);
            else if (ev.kind == DKV_EV_REQUEST && ev.sub == DKV_REQ_ADMIT)
                dkv_mem_replay_admit(rp, ev.request, ev.bytes, &err);
            else if (ev.kind == DKV_EV_REQUEST && ev.sub == DKV_REQ_FINISH)
                dkv_mem_replay_finish(rp, ev.request, &err);
        }
    } else if (rd != NULL || err.msg[0] == '\0') {
        abort();
    }
    dkv_mem_stats s;
    dkv_mem_stats_get(m, &s);
    dkv_mem_replay_counts c;
    dkv_mem_replay_counts_get(rp, &c);
    dkv_trace_reader_close(rd);
    dkv_mem_replay_free_handle(rp);
    dkv_mem_free(m);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *p = fuzz_file(0, ".trace", data, size);
    replay(p, DKV_MEM_STATIC);
    replay(p, DKV_MEM_CACHING);
    replay(p, DKV_MEM_BLOCKPOOL);
    dkv_trace_buf b = {0};
    dkv_err err = {0};
    dkv_trace_read_all(p, &b, &err);
    dkv_trace_buf_clear(&b);
    return 0;
}
