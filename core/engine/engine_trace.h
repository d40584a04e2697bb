/* engine_trace.h - trace events from the engine to a dkv_trace_sink (core/trace/trace.h).
 * Kept apart from engine_impl.h because trace.h and decode.h both name the phases; this header
 * uses plain types only.  Internal to core/engine. */
#ifndef DKV_ENGINE_TRACE_H
#define DKV_ENGINE_TRACE_H

#include <stdbool.h>
#include <stdint.h>

#include "util/status.h"

struct dkv_trace_sink;

enum { ENG_EV_ARRIVE = 0, ENG_EV_ADMIT = 1, ENG_EV_FINISH = 2, ENG_EV_REJECT = 3 };

/* Each returns the sink's status (DKV_OK when s is NULL). */
dkv_status eng_trace_mem(const struct dkv_trace_sink *s, bool is_free, double t, uint64_t id, uint64_t bytes,
                         uint64_t addr, uint8_t tag, uint32_t request, uint32_t inst, dkv_err *err);
dkv_status eng_trace_request(const struct dkv_trace_sink *s, double t, uint8_t what, uint32_t request,
                             uint32_t inst, uint64_t bytes, uint64_t tokens, dkv_err *err);
dkv_status eng_trace_phase(const struct dkv_trace_sink *s, double t, double dur, uint8_t phase, uint32_t request,
                           uint32_t inst, uint32_t block, uint32_t step, uint64_t tokens, dkv_err *err);

#endif
