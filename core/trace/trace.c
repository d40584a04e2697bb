/* trace.c - names of kinds, tags and sub values; validation; the in-memory buffer. */
#include "trace/trace.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const kind_names[DKV_EV_KIND_COUNT] = {"alloc", "free", "kernel", "xfer",
                                                           "phase", "request"};
static const char *const tag_names[DKV_TRACE_TAG_COUNT] = {"weights", "kv", "activation",
                                                            "logits", "staging"};
static const char *const phase_names[] = {"refresh", "reuse"};
static const char *const xfer_names[] = {"h2d", "d2h", "d2d"};
static const char *const req_names[] = {"arrive", "admit", "finish", "reject"};
static const char *const kernel_names[] = {"other", "gemm", "attention", "logits", "elementwise", "copy"};
const dkv_names dkv_trace_kind_names = DKV_NAMES("event kind", kind_names);
const dkv_names dkv_trace_tag_names = DKV_NAMES("tag", tag_names);
static const dkv_names phase_sub = DKV_NAMES("phase sub value", phase_names);
static const dkv_names xfer_sub = DKV_NAMES("xfer sub value", xfer_names);
static const dkv_names req_sub = DKV_NAMES("request sub value", req_names);
static const dkv_names kernel_sub = DKV_NAMES("kernel sub value", kernel_names);

static const dkv_names *sub_table(dkv_trace_kind k)
{
    switch (k) {
    case DKV_EV_PHASE: return &phase_sub;
    case DKV_EV_XFER: return &xfer_sub;
    case DKV_EV_REQUEST: return &req_sub;
    case DKV_EV_KERNEL: return &kernel_sub;
    default: return NULL;
    }
}

const char *dkv_trace_kind_name(dkv_trace_kind k) { return dkv_names_at(&dkv_trace_kind_names, (int)k); }
const char *dkv_trace_tag_name(dkv_trace_tag t) { return dkv_names_at(&dkv_trace_tag_names, (int)t); }

const char *dkv_trace_sub_name(dkv_trace_kind k, uint8_t sub)
{
    const dkv_names *t = sub_table(k);
    return t && sub < t->n ? dkv_names_at(t, sub) : "";
}

dkv_status dkv_trace_sub_parse(dkv_trace_kind k, const char *s, uint8_t *out, dkv_err *err)
{
    const dkv_names *t = sub_table(k);
    if (!t)
        return dkv_err_set(err, DKV_EINVAL, "a %s event has no sub value (got '%s')", dkv_trace_kind_name(k), s);
    int v;
    dkv_status st = dkv_names_parse(t, s, &v, err);
    if (!st)
        *out = (uint8_t)v;
    return st;
}

dkv_status dkv_trace_event_validate(const dkv_trace_event *ev, dkv_err *err)
{
    if (ev->kind >= DKV_EV_KIND_COUNT)
        return dkv_err_set(err, DKV_EFORMAT, "field 'kind': value %u out of range", ev->kind);
    if (ev->tag >= DKV_TRACE_TAG_COUNT)
        return dkv_err_set(err, DKV_EFORMAT, "field 'tag': value %u out of range", ev->tag);
    const dkv_names *st = sub_table((dkv_trace_kind)ev->kind);
    int n = st ? st->n : 0;
    if (ev->sub && ev->sub >= n)
        return dkv_err_set(err, DKV_EFORMAT, "field 'sub': value %u out of range for a %s event", ev->sub,
                           dkv_trace_kind_name((dkv_trace_kind)ev->kind));
    if (!isfinite(ev->time_s))
        return dkv_err_set(err, DKV_EFORMAT, "field 'time_s': not a finite number");
    if (!isfinite(ev->dur_s) || ev->dur_s < 0)
        return dkv_err_set(err, DKV_EFORMAT, "field 'dur_s': must be a finite number >= 0");
    return DKV_OK;
}

/* ---------------------------------------------------------------- buffer */

dkv_status dkv_trace_buf_push(dkv_trace_buf *b, const dkv_trace_event *ev, dkv_err *err)
{
    if (b->n == b->cap) {
        size_t cap = b->cap ? b->cap * 2 : 1024;
        dkv_trace_event *e = realloc(b->ev, cap * sizeof *e);
        if (!e)
            return dkv_err_set(err, DKV_ENOMEM, "trace buffer: out of host memory at %zu events", b->n);
        b->ev = e;
        b->cap = cap;
    }
    b->ev[b->n++] = *ev;
    return DKV_OK;
}

void dkv_trace_buf_clear(dkv_trace_buf *b)
{
    free(b->ev);
    b->ev = NULL;
    b->n = b->cap = 0;
}

static dkv_status buf_emit(void *ctx, const dkv_trace_event *ev, dkv_err *err)
{
    return dkv_trace_buf_push(ctx, ev, err);
}

dkv_trace_sink dkv_trace_buf_sink(dkv_trace_buf *b)
{
    return (dkv_trace_sink){b, buf_emit};
}
