/* engine_trace.c - the engine's trace events (see engine_trace.h). */
#include "engine/engine_trace.h"

#include <string.h>

#include "trace/trace.h"

_Static_assert((int)ENG_EV_ARRIVE == (int)DKV_REQ_ARRIVE && (int)ENG_EV_ADMIT == (int)DKV_REQ_ADMIT &&
               (int)ENG_EV_FINISH == (int)DKV_REQ_FINISH && (int)ENG_EV_REJECT == (int)DKV_REQ_REJECT,
               "request sub codes");

dkv_status eng_trace_mem(const dkv_trace_sink *s, bool is_free, double t, uint64_t id, uint64_t bytes,
                         uint64_t addr, uint8_t tag, uint32_t request, uint32_t inst, dkv_err *err)
{
    if (!s)
        return DKV_OK;
    dkv_trace_event ev;
    memset(&ev, 0, sizeof ev);
    ev.kind = is_free ? DKV_EV_FREE : DKV_EV_ALLOC;
    ev.time_s = t;
    ev.id = id;
    ev.bytes = bytes;
    ev.aux = addr;
    ev.tag = tag;
    ev.request = request;
    ev.instance = (uint16_t)inst;
    return dkv_trace_emit(s, &ev, err);
}

dkv_status eng_trace_request(const dkv_trace_sink *s, double t, uint8_t what, uint32_t request, uint32_t inst,
                             uint64_t bytes, uint64_t tokens, dkv_err *err)
{
    if (!s)
        return DKV_OK;
    dkv_trace_event ev;
    memset(&ev, 0, sizeof ev);
    ev.kind = DKV_EV_REQUEST;
    ev.time_s = t;
    ev.sub = what;
    ev.bytes = bytes;
    ev.aux = tokens;
    ev.request = request;
    ev.instance = (uint16_t)inst;
    return dkv_trace_emit(s, &ev, err);
}

dkv_status eng_trace_phase(const dkv_trace_sink *s, double t, double dur, uint8_t phase, uint32_t request,
                           uint32_t inst, uint32_t block, uint32_t step, uint64_t tokens, dkv_err *err)
{
    if (!s)
        return DKV_OK;
    dkv_trace_event ev;
    memset(&ev, 0, sizeof ev);
    ev.kind = DKV_EV_PHASE;
    ev.time_s = t;
    ev.dur_s = dur;
    ev.sub = phase;
    ev.aux = tokens;
    ev.request = request;
    ev.instance = (uint16_t)inst;
    ev.block = block;
    ev.step = step;
    return dkv_trace_emit(s, &ev, err);
}
