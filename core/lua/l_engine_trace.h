/* l_engine_trace.h - the trace file of dkv.simulate (cfg.record.trace): a trace writer behind a
 * dkv_trace_sink.  Plain types only (trace.h and decode.h cannot be included together).
 * Internal to core/lua. */
#ifndef DKV_LUA_L_ENGINE_TRACE_H
#define DKV_LUA_L_ENGINE_TRACE_H

#include "util/status.h"

struct dkv_trace_sink;
typedef struct dkv_lsim_trace dkv_lsim_trace;

/* Opens path (CSV when it ends in .csv, binary otherwise); *out owned by the caller. */
dkv_status dkv_lsim_trace_open(const char *path, dkv_lsim_trace **out, dkv_err *err);
const struct dkv_trace_sink *dkv_lsim_trace_sink(const dkv_lsim_trace *t);
/* Flushes, closes and frees (NULL: no-op, DKV_OK). */
dkv_status dkv_lsim_trace_close(dkv_lsim_trace *t, dkv_err *err);

#endif
