/* fuzz_trace.c - libFuzzer harness: the input is a dkv event trace, CSV or binary ("DKVTRACE" magic)
 * (core/trace).  It is read whole (dkv_trace_read_all) and replayed, as `dkv replay` does
 * (dkv_replay_trace, core/replay), through each of the three memory managers (core/mem), so hostile
 * ids, sizes, times and tags reach the managers too. */
#include "fuzz_util.h"
#include "mem/mem.h"
#include "replay/replay.h"
#include "trace/trace.h"

static void on_anomaly(void *user, uint64_t line, const char *msg, uint64_t n_before)
{
    (void)line, (void)n_before;
    if (!msg || !*msg)
        abort();   /* an anomaly must say what it is */
    ++*(uint64_t *)user;
}

static void replay(const char *path, dkv_mem_kind kind)
{
    dkv_mem_options o = dkv_mem_options_default(kind);
    o.capacity_bytes = 1ull << 30;
    o.sample_stride = 1;
    dkv_mem *m = NULL;
    dkv_err err = {0};
    if (dkv_mem_new(&o, &m, &err) != DKV_OK)
        abort();
    dkv_replay_result res;
    uint64_t seen = 0;
    if (dkv_replay_trace(path, m, on_anomaly, &seen, &res, &err) != DKV_OK && err.msg[0] == '\0')
        abort();
    dkv_mem_stats s;
    dkv_mem_stats_get(m, &s);
    dkv_mem_free(m);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *p = fuzz_file(0, ".trace", data, size);
    dkv_trace_buf b = {0};
    dkv_err err = {0};
    if (dkv_trace_read_all(p, &b, &err) != DKV_OK && err.msg[0] == '\0')
        abort();
    dkv_trace_buf_clear(&b);
    replay(p, DKV_MEM_STATIC);
    replay(p, DKV_MEM_CACHING);
    replay(p, DKV_MEM_BLOCKPOOL);
    return 0;
}
