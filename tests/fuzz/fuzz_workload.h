/* fuzz_workload.h - the body of the four trace-reader harnesses (fuzz_azure.c, fuzz_mooncake.c,
 * fuzz_vidur.c, fuzz_burstgpt.c): each reads its input strictly and leniently, with the format
 * named and, for CSV, detected from the header (DKV_FMT_AUTO), and walks every request. */
#ifndef DKV_FUZZ_WORKLOAD_H
#define DKV_FUZZ_WORKLOAD_H

#include <math.h>

#include "fuzz_util.h"
#include "workload/workload.h"

static void fuzz_workload_read(const char *path, dkv_trace_format fmt, int lenient, uint32_t first_n)
{
    dkv_workload_opts o;
    dkv_workload_opts_default(&o);
    o.lenient = lenient;
    o.first_n = first_n;
    o.gen_multiple_of = 32;
    dkv_workload *w = NULL;
    dkv_err err = {0};
    if (dkv_workload_read(path, fmt, &o, &w, &err) != DKV_OK) {
        if (w != NULL || err.msg[0] == '\0')
            abort();   /* a failure must leave no workload and must say why */
        return;
    }
    double last = 0;
    for (size_t i = 0; i < dkv_workload_count(w); i++) {
        const dkv_request *r = dkv_workload_get(w, i);
        if (!r || !(r->arrival_s >= last) || isinf(r->arrival_s) || r->gen_tokens < 32 || r->gen_tokens % 32 ||
            (r->n_hash_ids && !r->hash_ids))
            abort();   /* sorted and finite; G rounded up to a multiple of 32 and at least 32 (docs/WORKLOADS.md) */
        last = r->arrival_s;
        for (uint32_t k = 0; k < r->n_hash_ids; k++)
            (void)*(volatile const uint64_t *)&r->hash_ids[k];
    }
    if (first_n && dkv_workload_count(w) > first_n)
        abort();
    dkv_workload_free(w);
}

static int fuzz_workload(const uint8_t *data, size_t size, const char *suffix, dkv_trace_format fmt)
{
    const char *p = fuzz_file(0, suffix, data, size);
    fuzz_workload_read(p, fmt, 0, 0);
    fuzz_workload_read(p, fmt, 1, 0);
    fuzz_workload_read(p, fmt, 1, 3);
    if (fmt != DKV_FMT_MOONCAKE)
        fuzz_workload_read(p, DKV_FMT_AUTO, 0, 0);
    return 0;
}

#endif
