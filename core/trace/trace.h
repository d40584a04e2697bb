/* trace.h - the event schema both backends emit, and its CSV and binary forms.
 *
 * One struct for every event; which fields mean what depends on the kind (docs/TRACE_FORMAT.md
 * is the reference; the table below is its summary).  Fields a kind does not use are 0.
 *
 *   kind     id              bytes                 aux            sub                  dur_s
 *   alloc    allocation id   requested bytes       address or 0   -                    -
 *   free     allocation id   bytes (may be 0)      address or 0   -                    -
 *   kernel   kernel seq no.  HBM bytes read+write  FLOPs          kernel class         time
 *   xfer     transfer id     bytes copied          -              h2d / d2h / d2d      time
 *   phase    -               -                     -              refresh / reuse      time
 *   request  -               max bytes (admit)     tokens         arrive/admit/finish/reject
 *
 * All kinds carry time_s (seconds from the start of the run) and the owner fields tag,
 * request, instance, layer, step, block.  Allocation ids are any 64-bit value unique among
 * the live allocations of one trace (a freed id may be reused).  The tag numbering equals
 * dkv_mem_tag (core/mem/mem.h).
 *
 * Reading reports a malformed line as "PATH:LINE: field 'NAME': what is wrong".
 */
#ifndef DKV_TRACE_TRACE_H
#define DKV_TRACE_TRACE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util/names.h"
#include "util/status.h"

typedef enum dkv_trace_kind {
    DKV_EV_ALLOC = 0,
    DKV_EV_FREE,
    DKV_EV_KERNEL,
    DKV_EV_XFER,
    DKV_EV_PHASE,
    DKV_EV_REQUEST,
    DKV_EV_KIND_COUNT
} dkv_trace_kind;

/* Same numbers as dkv_mem_tag. */
typedef enum dkv_trace_tag {
    DKV_TRACE_TAG_WEIGHTS = 0,
    DKV_TRACE_TAG_KV,
    DKV_TRACE_TAG_ACTIVATION,
    DKV_TRACE_TAG_LOGITS,
    DKV_TRACE_TAG_STAGING,
    DKV_TRACE_TAG_COUNT
} dkv_trace_tag;

/* `sub` values, by kind. */
/* Phase values: the same definition as decode/decode.h (whichever header comes first defines it),
 * so both headers can be included together. */
#ifndef DKV_PHASE_DEFINED
#define DKV_PHASE_DEFINED
typedef enum dkv_phase {
    DKV_PHASE_REFRESH = 0, /* forward over the full canvas (q = L) */
    DKV_PHASE_REUSE = 1    /* forward over part of the canvas, the rest from the cache */
} dkv_phase;
#endif
enum { DKV_XFER_H2D = 0, DKV_XFER_D2H = 1, DKV_XFER_D2D = 2 };
enum { DKV_REQ_ARRIVE = 0, DKV_REQ_ADMIT = 1, DKV_REQ_FINISH = 2, DKV_REQ_REJECT = 3 };
enum { DKV_KERNEL_OTHER = 0, DKV_KERNEL_GEMM, DKV_KERNEL_ATTENTION, DKV_KERNEL_LOGITS,
       DKV_KERNEL_ELEMENTWISE, DKV_KERNEL_COPY };

typedef struct dkv_trace_event {
    double   time_s;      /* start, seconds from the beginning of the run */
    double   dur_s;       /* kernel / xfer / phase duration; 0 otherwise */
    uint64_t id;
    uint64_t bytes;
    uint64_t aux;
    uint32_t request, layer, step, block;
    uint16_t instance;
    uint8_t  kind;        /* dkv_trace_kind */
    uint8_t  tag;         /* dkv_trace_tag */
    uint8_t  sub;         /* by kind, see above */
} dkv_trace_event;

extern const dkv_names dkv_trace_kind_names;         /* "alloc", ... (util/names.h: dkv_names_parse) */
extern const dkv_names dkv_trace_tag_names;          /* "weights", ... */
const char *dkv_trace_kind_name(dkv_trace_kind k);   /* "?" when out of range */
const char *dkv_trace_tag_name(dkv_trace_tag t);
/* Name of a sub value for a kind ("refresh", "h2d", "admit", "gemm", ...; "" when unused), and its
 * parser (DKV_EINVAL with the accepted names listed). */
const char *dkv_trace_sub_name(dkv_trace_kind k, uint8_t sub);
dkv_status dkv_trace_sub_parse(dkv_trace_kind k, const char *s, uint8_t *out, dkv_err *err);
/* Checks ranges of kind, tag and sub; DKV_EFORMAT naming the field. */
dkv_status dkv_trace_event_validate(const dkv_trace_event *ev, dkv_err *err);

/* ---- sinks: where emitted events go (the engine calls emit for each) -------------------- */

typedef struct dkv_trace_sink {
    void *ctx;
    dkv_status (*emit)(void *ctx, const dkv_trace_event *ev, dkv_err *err);
} dkv_trace_sink;

static inline dkv_status dkv_trace_emit(const dkv_trace_sink *s, const dkv_trace_event *ev, dkv_err *err)
{
    return s && s->emit ? s->emit(s->ctx, ev, err) : DKV_OK;
}

/* A growing in-memory array of events. */
typedef struct dkv_trace_buf {
    dkv_trace_event *ev;
    size_t n, cap;
} dkv_trace_buf;

dkv_status     dkv_trace_buf_push(dkv_trace_buf *b, const dkv_trace_event *ev, dkv_err *err);
void           dkv_trace_buf_clear(dkv_trace_buf *b);      /* frees the array; b reusable */
dkv_trace_sink dkv_trace_buf_sink(dkv_trace_buf *b);       /* borrows b */

/* ---- files ------------------------------------------------------------------------------ */

typedef enum dkv_trace_file_format {
    DKV_TRACE_CSV = 0,   /* header line of column names, then one event per line */
    DKV_TRACE_BIN        /* 32-byte header "DKVTRACE", then 64-byte little-endian records */
} dkv_trace_file_format;

/* CSV when path ends in ".csv", binary otherwise. */
dkv_trace_file_format dkv_trace_file_format_for_path(const char *path);

typedef struct dkv_trace_writer dkv_trace_writer;
/* Creates (truncates) path.  *out owned by the caller: dkv_trace_writer_close. */
dkv_status dkv_trace_writer_open(const char *path, dkv_trace_file_format fmt, dkv_trace_writer **out,
                                 dkv_err *err);
dkv_status dkv_trace_writer_put(dkv_trace_writer *w, const dkv_trace_event *ev, dkv_err *err);
/* Flushes, closes and frees (NULL: no-op, DKV_OK).  Reports a failed write. */
dkv_status dkv_trace_writer_close(dkv_trace_writer *w, dkv_err *err);
dkv_trace_sink dkv_trace_writer_sink(dkv_trace_writer *w);  /* borrows w */

typedef struct dkv_trace_reader dkv_trace_reader;
/* Opens a CSV or binary trace (told apart by the "DKVTRACE" magic).  *out owned by the caller. */
dkv_status dkv_trace_reader_open(const char *path, dkv_trace_reader **out, dkv_err *err);
/* Reads the next event: *got = false at the end.  DKV_EFORMAT for a malformed line or
 * record: "PATH:LINE: field 'NAME': ...". */
dkv_status dkv_trace_reader_next(dkv_trace_reader *r, dkv_trace_event *ev, bool *got, dkv_err *err);
dkv_trace_file_format dkv_trace_reader_format(const dkv_trace_reader *r);
uint64_t         dkv_trace_reader_line(const dkv_trace_reader *r);  /* CSV line / record number */
void             dkv_trace_reader_close(dkv_trace_reader *r);       /* NULL is a no-op */

/* Reads a whole trace into b (appending).  Same errors as the reader. */
dkv_status dkv_trace_read_all(const char *path, dkv_trace_buf *b, dkv_err *err);

#endif
