/* l_engine_trace.c - the trace file of dkv.simulate (see l_engine_trace.h). */
#include "lua/l_engine_trace.h"

#include <stdlib.h>

#include "trace/trace.h"

struct dkv_lsim_trace {
    dkv_trace_writer *w;
    dkv_trace_sink sink;
};

dkv_status dkv_lsim_trace_open(const char *path, dkv_lsim_trace **out, dkv_err *err)
{
    *out = NULL;
    dkv_lsim_trace *t = calloc(1, sizeof *t);
    if (!t)
        return dkv_err_set(err, DKV_ENOMEM, "trace: out of memory");
    dkv_status st = dkv_trace_writer_open(path, dkv_trace_file_format_for_path(path), &t->w, err);
    if (st != DKV_OK) {
        free(t);
        return st;
    }
    t->sink = dkv_trace_writer_sink(t->w);
    *out = t;
    return DKV_OK;
}

const struct dkv_trace_sink *dkv_lsim_trace_sink(const dkv_lsim_trace *t)
{
    return t ? &t->sink : NULL;
}

dkv_status dkv_lsim_trace_close(dkv_lsim_trace *t, dkv_err *err)
{
    if (!t)
        return DKV_OK;
    dkv_status st = dkv_trace_writer_close(t->w, err);
    free(t);
    return st;
}
