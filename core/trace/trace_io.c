/* trace_io.c - trace files: CSV (header of column names) and binary (fixed 64-byte records). */
#include "trace/trace.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "util/file.h"

#define BIN_MAGIC "DKVTRACE"
#define BIN_VERSION 1u
#define BIN_HEADER 32u
#define BIN_RECORD 64u

/* CSV columns, in the order the writer puts them. */
enum { C_TIME, C_KIND, C_ID, C_BYTES, C_TAG, C_REQUEST, C_INSTANCE, C_LAYER, C_STEP, C_BLOCK,
       C_SUB, C_DUR, C_AUX, C_COUNT };
static const char *const col_names[C_COUNT] = {"time_s", "kind", "id", "bytes", "tag", "request",
                                               "instance", "layer", "step", "block", "sub",
                                               "dur_s", "aux"};

dkv_trace_file_format dkv_trace_file_format_for_path(const char *path)
{
    size_t n = strlen(path);
    return n >= 4 && strcmp(path + n - 4, ".csv") == 0 ? DKV_TRACE_CSV : DKV_TRACE_BIN;
}

/* ---------------------------------------------------------------- little-endian packing */

static void put_u64(uint8_t *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}
static uint64_t get_u64(const uint8_t *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = (v << 8) | p[i];
    return v;
}
static void put_u32(uint8_t *p, uint32_t v) { for (int i = 0; i < 4; i++) p[i] = (uint8_t)(v >> (8 * i)); }
static uint32_t get_u32(const uint8_t *p) { return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24; }
static void put_f64(uint8_t *p, double d)
{
    uint64_t v;
    memcpy(&v, &d, 8);
    put_u64(p, v);
}
static double get_f64(const uint8_t *p)
{
    uint64_t v = get_u64(p);
    double d;
    memcpy(&d, &v, 8);
    return d;
}

static void pack(uint8_t *p, const dkv_trace_event *e)
{
    memset(p, 0, BIN_RECORD);
    put_f64(p + 0, e->time_s);
    put_f64(p + 8, e->dur_s);
    put_u64(p + 16, e->id);
    put_u64(p + 24, e->bytes);
    put_u64(p + 32, e->aux);
    put_u32(p + 40, e->request);
    put_u32(p + 44, e->layer);
    put_u32(p + 48, e->step);
    put_u32(p + 52, e->block);
    p[56] = (uint8_t)e->instance;
    p[57] = (uint8_t)(e->instance >> 8);
    p[58] = e->kind;
    p[59] = e->tag;
    p[60] = e->sub;
}

static void unpack(const uint8_t *p, dkv_trace_event *e)
{
    e->time_s = get_f64(p + 0);
    e->dur_s = get_f64(p + 8);
    e->id = get_u64(p + 16);
    e->bytes = get_u64(p + 24);
    e->aux = get_u64(p + 32);
    e->request = get_u32(p + 40);
    e->layer = get_u32(p + 44);
    e->step = get_u32(p + 48);
    e->block = get_u32(p + 52);
    e->instance = (uint16_t)(p[56] | p[57] << 8);
    e->kind = p[58];
    e->tag = p[59];
    e->sub = p[60];
}

/* ---------------------------------------------------------------- writer */

struct dkv_trace_writer {
    FILE *f;
    dkv_trace_file_format fmt;
    uint64_t n;
    char *path;
};

dkv_status dkv_trace_writer_open(const char *path, dkv_trace_file_format fmt, dkv_trace_writer **out,
                                 dkv_err *err)
{
    *out = NULL;
    dkv_trace_writer *w = calloc(1, sizeof *w);
    if (!w || !(w->path = strdup(path))) {
        free(w);
        return dkv_err_set(err, DKV_ENOMEM, "trace writer: out of host memory");
    }
    w->fmt = fmt;
    w->f = fopen(path, "wb");
    if (!w->f) {
        dkv_status st = dkv_err_set(err, DKV_EIO, "%s: cannot create: %s", path, strerror(errno));
        free(w->path);
        free(w);
        return st;
    }
    if (fmt == DKV_TRACE_CSV) {
        for (int c = 0; c < C_COUNT; c++)
            fprintf(w->f, "%s%s", col_names[c], c + 1 < C_COUNT ? "," : "\n");
    } else {
        uint8_t h[BIN_HEADER] = {0};
        memcpy(h, BIN_MAGIC, 8);
        put_u32(h + 8, BIN_VERSION);
        put_u32(h + 12, BIN_RECORD);
        fwrite(h, 1, sizeof h, w->f);
    }
    *out = w;
    return DKV_OK;
}

/* Shortest of %.15g / %.17g that reads back to the same double. */
static void fmt_double(char *buf, size_t n, double d)
{
    snprintf(buf, n, "%.15g", d);
    if (strtod(buf, NULL) != d)
        snprintf(buf, n, "%.17g", d);
}

dkv_status dkv_trace_writer_put(dkv_trace_writer *w, const dkv_trace_event *e, dkv_err *err)
{
    dkv_status st = dkv_trace_event_validate(e, err);
    if (st) {
        dkv_err_prefix(err, "%s: event %llu", w->path, (unsigned long long)w->n + 1);
        return st;
    }
    int bad;
    if (w->fmt == DKV_TRACE_CSV) {
        char t[32], d[32];
        fmt_double(t, sizeof t, e->time_s);
        fmt_double(d, sizeof d, e->dur_s);
        bad = fprintf(w->f, "%s,%s,%llu,%llu,%s,%u,%u,%u,%u,%u,%s,%s,%llu\n", t,
                      dkv_trace_kind_name((dkv_trace_kind)e->kind), (unsigned long long)e->id,
                      (unsigned long long)e->bytes, dkv_trace_tag_name((dkv_trace_tag)e->tag),
                      e->request, e->instance, e->layer, e->step, e->block,
                      dkv_trace_sub_name((dkv_trace_kind)e->kind, e->sub), d,
                      (unsigned long long)e->aux) < 0;
    } else {
        uint8_t rec[BIN_RECORD];
        pack(rec, e);
        bad = fwrite(rec, 1, sizeof rec, w->f) != sizeof rec;
    }
    if (bad)
        return dkv_err_set(err, DKV_EIO, "%s: write failed: %s", w->path, strerror(errno));
    w->n++;
    return DKV_OK;
}

dkv_status dkv_trace_writer_close(dkv_trace_writer *w, dkv_err *err)
{
    if (!w)
        return DKV_OK;
    dkv_status st = DKV_OK;
    if (w->fmt == DKV_TRACE_BIN && fseek(w->f, 16, SEEK_SET) == 0) {
        uint8_t c[8];
        put_u64(c, w->n);
        fwrite(c, 1, 8, w->f);
    }
    if (ferror(w->f) | (fclose(w->f) != 0))
        st = dkv_err_set(err, DKV_EIO, "%s: write failed: %s", w->path, strerror(errno));
    free(w->path);
    free(w);
    return st;
}

static dkv_status writer_emit(void *ctx, const dkv_trace_event *ev, dkv_err *err)
{
    return dkv_trace_writer_put(ctx, ev, err);
}

dkv_trace_sink dkv_trace_writer_sink(dkv_trace_writer *w)
{
    return (dkv_trace_sink){w, writer_emit};
}

/* ---------------------------------------------------------------- reader */

struct dkv_trace_reader {
    FILE *f;
    dkv_trace_file_format fmt;
    char *path;
    uint64_t line;           /* CSV: physical line; binary: record number */
    char *buf;
    size_t cap;
    int col[C_COUNT + 1];    /* CSV: which column each field is, by position */
    int n_cols;
};

void dkv_trace_reader_close(dkv_trace_reader *r)
{
    if (!r)
        return;
    if (r->f)
        fclose(r->f);
    free(r->path);
    free(r->buf);
    free(r);
}

dkv_trace_file_format dkv_trace_reader_format(const dkv_trace_reader *r) { return r->fmt; }
uint64_t dkv_trace_reader_line(const dkv_trace_reader *r) { return r->line; }

static char *trim(char *s)
{
    while (*s == ' ' || *s == '\t')
        s++;
    size_t n = strlen(s);
    while (n && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\r' || s[n - 1] == '\n'))
        s[--n] = '\0';
    return s;
}

/* Next non-blank, non-comment line into r->buf; false at EOF. */
static bool next_line(dkv_trace_reader *r, char **line)
{
    ssize_t n;
    while ((n = getline(&r->buf, &r->cap, r->f)) >= 0) {
        r->line++;
        char *s = trim(r->buf);
        if (*s && *s != '#') {
            *line = s;
            return true;
        }
    }
    return false;
}

static dkv_status parse_header(dkv_trace_reader *r, dkv_err *err)
{
    char *line;
    if (!next_line(r, &line))
        return dkv_err_set(err, DKV_EFORMAT, "%s: empty trace (no header line)", r->path);
    bool seen[C_COUNT] = {false};
    r->n_cols = 0;
    for (char *save = NULL, *tok = strtok_r(line, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        tok = trim(tok);
        int c = 0;
        while (c < C_COUNT && strcmp(tok, col_names[c]) != 0)
            c++;
        if (c == C_COUNT)
            return dkv_err_set(err, DKV_EFORMAT, "%s:%llu: unknown column '%s' (columns: time_s, kind, id, bytes, tag, request, instance, layer, step, block, sub, dur_s, aux)",
                               r->path, (unsigned long long)r->line, tok);
        if (seen[c])
            return dkv_err_set(err, DKV_EFORMAT, "%s:%llu: column '%s' appears twice", r->path,
                               (unsigned long long)r->line, tok);
        if (r->n_cols == C_COUNT)
            break;
        seen[c] = true;
        r->col[r->n_cols++] = c;
    }
    if (!seen[C_TIME] || !seen[C_KIND])
        return dkv_err_set(err, DKV_EFORMAT, "%s:%llu: the header needs columns 'time_s' and 'kind'",
                           r->path, (unsigned long long)r->line);
    return DKV_OK;
}

dkv_status dkv_trace_reader_open(const char *path, dkv_trace_reader **out, dkv_err *err)
{
    *out = NULL;
    dkv_trace_reader *r = calloc(1, sizeof *r);
    if (!r || !(r->path = strdup(path))) {
        free(r);
        return dkv_err_set(err, DKV_ENOMEM, "trace reader: out of host memory");
    }
    dkv_status st = dkv_fopen_input(path, &r->f, err);
    if (st != DKV_OK) {
        dkv_trace_reader_close(r);
        return st;
    }
    uint8_t h[BIN_HEADER];
    size_t got = fread(h, 1, sizeof h, r->f);
    if (got >= 8 && memcmp(h, BIN_MAGIC, 8) == 0) {
        r->fmt = DKV_TRACE_BIN;
        if (got < BIN_HEADER)
            st = dkv_err_set(err, DKV_EFORMAT, "%s: binary trace header is truncated (%zu of %u bytes)",
                             path, got, BIN_HEADER);
        else if (get_u32(h + 8) != BIN_VERSION || get_u32(h + 12) != BIN_RECORD)
            st = dkv_err_set(err, DKV_EFORMAT, "%s: binary trace version %u / record size %u; this dkv reads version %u, %u-byte records",
                             path, get_u32(h + 8), get_u32(h + 12), BIN_VERSION, BIN_RECORD);
    } else {
        r->fmt = DKV_TRACE_CSV;
        rewind(r->f);
        st = parse_header(r, err);
    }
    if (st) {
        dkv_trace_reader_close(r);
        return st;
    }
    *out = r;
    return DKV_OK;
}

static dkv_status field_u64(const char *s, uint64_t max, uint64_t *out)
{
    if (!*s) {
        *out = 0;
        return DKV_OK;
    }
    if (*s < '0' || *s > '9')
        return DKV_EFORMAT;
    errno = 0;
    char *end;
    unsigned long long v = strtoull(s, &end, 10);
    if (*end || errno || v > max)
        return DKV_EFORMAT;
    *out = v;
    return DKV_OK;
}

static dkv_status read_csv(dkv_trace_reader *r, dkv_trace_event *e, bool *got, dkv_err *err)
{
    char *line;
    if (!next_line(r, &line)) {
        *got = false;
        return DKV_OK;
    }
    memset(e, 0, sizeof *e);
    char *fields[C_COUNT + 1];
    int n = 0;
    for (char *p = line;;) {
        char *comma = strchr(p, ',');
        if (n <= C_COUNT)
            fields[n] = p;
        n++;
        if (!comma)
            break;
        *comma = '\0';
        p = comma + 1;
    }
    if (n != r->n_cols)
        return dkv_err_set(err, DKV_EFORMAT, "%s:%llu: %d fields, the header has %d", r->path,
                           (unsigned long long)r->line, n, r->n_cols);
    /* kind first: sub names depend on it */
    int order[C_COUNT], k = 0;
    for (int i = 0; i < n; i++)
        if (r->col[i] == C_KIND)
            order[k++] = i;
    for (int i = 0; i < n; i++)
        if (r->col[i] != C_KIND)
            order[k++] = i;
    for (int j = 0; j < n; j++) {
        int i = order[j], c = r->col[i];
        char *s = trim(fields[i]);
        uint64_t v = 0;
        dkv_status st = DKV_OK;
        dkv_err sub = {0};
        const char *why = "not a non-negative integer in range";
        switch (c) {
        case C_TIME:
        case C_DUR: {
            char *end;
            double d = *s ? strtod(s, &end) : NAN;
            if (c == C_DUR && !*s) {
                d = 0;
            } else if (!*s || *end || !isfinite(d) || (c == C_DUR && d < 0)) {
                st = DKV_EFORMAT;
                why = !*s ? "missing (required)" : c == C_DUR ? "not a finite number >= 0" : "not a finite number";
            }
            if (c == C_TIME)
                e->time_s = d;
            else
                e->dur_s = d;
            break;
        }
        case C_KIND: {
            int kind = 0;
            st = dkv_names_parse(&dkv_trace_kind_names, s, &kind, &sub);
            e->kind = (uint8_t)kind;
            break;
        }
        case C_TAG: {
            int tag = DKV_TRACE_TAG_WEIGHTS;
            if (*s)
                st = dkv_names_parse(&dkv_trace_tag_names, s, &tag, &sub);
            e->tag = (uint8_t)tag;
            break;
        }
        case C_SUB:
            if (*s && (*s < '0' || *s > '9'))
                st = dkv_trace_sub_parse((dkv_trace_kind)e->kind, s, &e->sub, &sub);
            else if ((st = field_u64(s, 255, &v)) == DKV_OK)
                e->sub = (uint8_t)v;
            break;
        case C_ID: st = field_u64(s, UINT64_MAX, &e->id); break;
        case C_BYTES: st = field_u64(s, UINT64_MAX, &e->bytes); break;
        case C_AUX: st = field_u64(s, UINT64_MAX, &e->aux); break;
        case C_INSTANCE: st = field_u64(s, UINT16_MAX, &v); e->instance = (uint16_t)v; break;
        case C_REQUEST: st = field_u64(s, UINT32_MAX, &v); e->request = (uint32_t)v; break;
        case C_LAYER: st = field_u64(s, UINT32_MAX, &v); e->layer = (uint32_t)v; break;
        case C_STEP: st = field_u64(s, UINT32_MAX, &v); e->step = (uint32_t)v; break;
        case C_BLOCK: st = field_u64(s, UINT32_MAX, &v); e->block = (uint32_t)v; break;
        }
        if (st && sub.code)
            return dkv_err_set(err, DKV_EFORMAT, "%s:%llu: field '%s': %s", r->path,
                               (unsigned long long)r->line, col_names[c], sub.msg);
        if (st)
            return dkv_err_set(err, DKV_EFORMAT, "%s:%llu: field '%s': '%s' is %s", r->path,
                               (unsigned long long)r->line, col_names[c], s, why);
    }
    dkv_status st = dkv_trace_event_validate(e, err);
    if (st) {
        dkv_err_prefix(err, "%s:%llu", r->path, (unsigned long long)r->line);
        return st;
    }
    *got = true;
    return DKV_OK;
}

static dkv_status read_bin(dkv_trace_reader *r, dkv_trace_event *e, bool *got, dkv_err *err)
{
    uint8_t rec[BIN_RECORD];
    size_t n = fread(rec, 1, sizeof rec, r->f);
    if (n == 0) {
        *got = false;
        return ferror(r->f) ? dkv_err_set(err, DKV_EIO, "%s: read failed", r->path) : DKV_OK;
    }
    r->line++;
    if (n < sizeof rec)
        return dkv_err_set(err, DKV_EFORMAT, "%s: record %llu is truncated (%zu of %u bytes)", r->path,
                           (unsigned long long)r->line, n, BIN_RECORD);
    unpack(rec, e);
    dkv_status st = dkv_trace_event_validate(e, err);
    if (st) {
        dkv_err_prefix(err, "%s: record %llu (byte %llu)", r->path, (unsigned long long)r->line,
                       (unsigned long long)(BIN_HEADER + (r->line - 1) * BIN_RECORD));
        return st;
    }
    *got = true;
    return DKV_OK;
}

dkv_status dkv_trace_reader_next(dkv_trace_reader *r, dkv_trace_event *ev, bool *got, dkv_err *err)
{
    *got = false;
    return r->fmt == DKV_TRACE_CSV ? read_csv(r, ev, got, err) : read_bin(r, ev, got, err);
}

dkv_status dkv_trace_read_all(const char *path, dkv_trace_buf *b, dkv_err *err)
{
    dkv_trace_reader *r;
    dkv_status st = dkv_trace_reader_open(path, &r, err);
    if (st)
        return st;
    dkv_trace_event ev;
    bool got;
    while ((st = dkv_trace_reader_next(r, &ev, &got, err)) == DKV_OK && got)
        if ((st = dkv_trace_buf_push(b, &ev, err)))
            break;
    dkv_trace_reader_close(r);
    return st;
}
