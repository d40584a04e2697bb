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

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

static const char *const *sub_table(dkv_trace_kind k, size_t *n)
{
    switch (k) {
    case DKV_EV_PHASE: *n = COUNT(phase_names); return phase_names;
    case DKV_EV_XFER: *n = COUNT(xfer_names); return xfer_names;
    case DKV_EV_REQUEST: *n = COUNT(req_names); return req_names;
    case DKV_EV_KERNEL: *n = COUNT(kernel_names); return kernel_names;
    default: *n = 0; return NULL;
    }
}

const char *dkv_trace_kind_name(dkv_trace_kind k)
{
    return (unsigned)k < DKV_EV_KIND_COUNT ? kind_names[k] : "?";
}

const char *dkv_trace_tag_name(dkv_trace_tag t)
{
    return (unsigned)t < DKV_TRACE_TAG_COUNT ? tag_names[t] : "?";
}

const char *dkv_trace_sub_name(dkv_trace_kind k, uint8_t sub)
{
    size_t n;
    const char *const *t = sub_table(k, &n);
    return t && sub < n ? t[sub] : "";
}

static dkv_status parse_name(const char *s, const char *const *names, size_t n, const char *what,
                             unsigned *out, dkv_err *err)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(s, names[i]) == 0) {
            *out = (unsigned)i;
            return DKV_OK;
        }
    char list[256] = "";
    for (size_t i = 0; i < n; i++) {
        strncat(list, names[i], sizeof list - strlen(list) - 1);
        if (i + 1 < n)
            strncat(list, ", ", sizeof list - strlen(list) - 1);
    }
    return dkv_err_set(err, DKV_EINVAL, "unknown %s '%s' (one of: %s)", what, s, list);
}

dkv_status dkv_trace_kind_parse(const char *s, dkv_trace_kind *out, dkv_err *err)
{
    unsigned v;
    dkv_status st = parse_name(s, kind_names, COUNT(kind_names), "event kind", &v, err);
    if (!st)
        *out = (dkv_trace_kind)v;
    return st;
}

dkv_status dkv_trace_tag_parse(const char *s, dkv_trace_tag *out, dkv_err *err)
{
    unsigned v;
    dkv_status st = parse_name(s, tag_names, COUNT(tag_names), "tag", &v, err);
    if (!st)
        *out = (dkv_trace_tag)v;
    return st;
}

dkv_status dkv_trace_sub_parse(dkv_trace_kind k, const char *s, uint8_t *out, dkv_err *err)
{
    size_t n;
    const char *const *t = sub_table(k, &n);
    if (!t)
        return dkv_err_set(err, DKV_EINVAL, "a %s event has no sub value (got '%s')", dkv_trace_kind_name(k), s);
    unsigned v;
    char what[48];
    snprintf(what, sizeof what, "%s sub value", dkv_trace_kind_name(k));
    dkv_status st = parse_name(s, t, n, what, &v, err);
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
    size_t n;
    sub_table((dkv_trace_kind)ev->kind, &n);
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
