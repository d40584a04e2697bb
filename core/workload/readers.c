/* readers.c - trace files: format names and detection, the CSV readers (Azure, Vidur, BurstGPT).
 * The Mooncake JSONL reader is in mooncake.c. */
#include "workload/workload_impl.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* ------------------------------------------------------------------ lines and fields */

char *dkv_wl_next_line(char **p)
{
    char *s = *p;
    if (*s == '\0') return NULL;
    char *eol = strchr(s, '\n');
    if (eol) {
        *eol = '\0';
        *p = eol + 1;
    } else {
        *p = s + strlen(s);
    }
    size_t n = strlen(s);
    if (n && s[n - 1] == '\r') s[n - 1] = '\0';
    return s;
}

static bool blank(const char *s)
{
    while (isspace((unsigned char)*s)) s++;
    return *s == '\0';
}

static char *trim(char *s)
{
    while (isspace((unsigned char)*s)) s++;
    char *e = s + strlen(s);
    while (e > s && isspace((unsigned char)e[-1])) *--e = '\0';
    return s;
}

#define MAX_FIELDS 32

/* Splits a CSV line in place.  Fields may be double-quoted ("" is a quote inside).  Returns the
 * field count, or -1 on an unterminated quote, -2 on more than MAX_FIELDS fields. */
static int split_csv(char *s, char **f)
{
    int n = 0;
    for (;;) {
        if (n == MAX_FIELDS) return -2;
        while (*s == ' ' || *s == '\t') s++;
        if (*s == '"') {
            char *w = ++s;
            f[n++] = w;
            for (;;) {
                if (*s == '\0') return -1;
                if (*s == '"') {
                    if (s[1] == '"') {
                        *w++ = '"';
                        s += 2;
                        continue;
                    }
                    s++;
                    break;
                }
                *w++ = *s++;
            }
            *w = '\0';
            while (*s == ' ' || *s == '\t') s++;
            if (*s == ',') {
                s++;
                continue;
            }
            if (*s == '\0') return n;
            return -1;
        }
        f[n++] = s;
        char *c = strchr(s, ',');
        if (!c) {
            trim(f[n - 1]);
            return n;
        }
        *c = '\0';
        trim(f[n - 1]);
        s = c + 1;
    }
}

/* ------------------------------------------------------------------ value parsers */

/* A non-negative integral count ("123", "123.0"); false otherwise. */
static bool parse_count(const char *s, uint32_t *out)
{
    if (!isdigit((unsigned char)*s)) return false;
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || v > UINT32_MAX) return false;
    if (*end == '.') {
        end++;
        while (*end == '0') end++;
    }
    if (*end != '\0') return false;
    *out = (uint32_t)v;
    return true;
}

static bool parse_seconds(const char *s, double *out)
{
    if (!(isdigit((unsigned char)*s) || *s == '.' || *s == '-' || *s == '+')) return false;
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (end == s || *end != '\0' || errno || !isfinite(v)) return false;
    *out = v;
    return true;
}

static int64_t days_from_civil(int64_t y, unsigned m, unsigned d)
{
    y -= m <= 2;
    int64_t era = (y >= 0 ? y : y - 399) / 400;
    unsigned yoe = (unsigned)(y - era * 400);
    unsigned doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
    unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + (int64_t)doe - 719468;
}

static bool digits(const char **p, int n, unsigned *out)
{
    unsigned v = 0;
    for (int i = 0; i < n; i++) {
        if (!isdigit((unsigned char)(*p)[i])) return false;
        v = v * 10 + (unsigned)((*p)[i] - '0');
    }
    *p += n;
    *out = v;
    return true;
}

/* "YYYY-MM-DD HH:MM:SS[.fraction]" (or 'T' between date and time) -> whole seconds since the
 * Unix epoch (UTC, no zone) and the fraction. */
static bool parse_datetime(const char *s, int64_t *sec, double *frac)
{
    unsigned Y, M, D, h, m, S;
    const char *p = s;
    if (!digits(&p, 4, &Y) || *p++ != '-' || !digits(&p, 2, &M) || *p++ != '-' || !digits(&p, 2, &D)) return false;
    if (*p != ' ' && *p != 'T') return false;
    p++;
    if (!digits(&p, 2, &h) || *p++ != ':' || !digits(&p, 2, &m) || *p++ != ':' || !digits(&p, 2, &S)) return false;
    if (M < 1 || M > 12 || D < 1 || D > 31 || h > 23 || m > 59 || S > 60) return false;
    double f = 0;
    if (*p == '.') {
        double scale = 0.1;
        p++;
        if (!isdigit((unsigned char)*p)) return false;
        while (isdigit((unsigned char)*p)) {
            f += (*p++ - '0') * scale;
            scale *= 0.1;
        }
    }
    if (*p != '\0') return false;
    *sec = days_from_civil(Y, M, D) * 86400 + h * 3600 + m * 60 + S;
    *frac = f;
    return true;
}

/* ------------------------------------------------------------------ formats */

typedef enum { COL_TIME_DATETIME, COL_TIME_SECONDS, COL_PROMPT, COL_GEN } col_role;

typedef struct col_spec {
    const char *name;
    col_role    role;
} col_spec;

/* The trace readers: one entry per format, indexed by dkv_trace_format.  The name comes first, so
 * the table is also dkv_trace_format_names.  A CSV format is its three columns (time, prompt,
 * gen; read by dkv_wl_read_csv, recognised by its header under "auto"); another format brings its
 * read function and a sniff test for "auto" (mooncake.c).  A new reader: an entry here (and its
 * file when it is not a CSV); its value in workload.h's enum is optional. */
typedef dkv_status (*wl_read_fn)(dkv_workload *w, const char *path, char *buf, size_t len,
                                 const dkv_workload_opts *o, dkv_err *err);
typedef struct wl_reader {
    const char *name;
    col_spec    cols[3];                        /* CSV: required columns; cols[0].name NULL: not CSV */
    wl_read_fn  read;                           /* not CSV: its reader */
    bool      (*sniff)(const char *path, const char *text);   /* "auto": the file is this format */
} wl_reader;

static bool ends_with(const char *s, const char *suffix);
static bool sniff_json(const char *path, const char *text)
{
    return ends_with(path, ".jsonl") || ends_with(path, ".json") || *text == '{';
}

static const wl_reader readers[] = {
    [DKV_FMT_AUTO] = {"auto", {{NULL, 0}}, NULL, NULL},
    [DKV_FMT_AZURE] = {"azure", {{"TIMESTAMP", COL_TIME_DATETIME}, {"ContextTokens", COL_PROMPT},
                                 {"GeneratedTokens", COL_GEN}}, NULL, NULL},
    [DKV_FMT_MOONCAKE] = {"mooncake", {{NULL, 0}}, dkv_wl_read_mooncake, sniff_json},
    [DKV_FMT_VIDUR] = {"vidur", {{"arrived_at", COL_TIME_SECONDS}, {"num_prefill_tokens", COL_PROMPT},
                                 {"num_decode_tokens", COL_GEN}}, NULL, NULL},
    [DKV_FMT_BURSTGPT] = {"burstgpt", {{"Timestamp", COL_TIME_SECONDS}, {"Request tokens", COL_PROMPT},
                                       {"Response tokens", COL_GEN}}, NULL, NULL},
};
#define N_READERS ((int)(sizeof readers / sizeof readers[0]))
const dkv_names dkv_trace_format_names = DKV_NAMES_NOCASE("workload.format", readers);

const char *dkv_trace_format_name(dkv_trace_format f) { return dkv_names_at(&dkv_trace_format_names, (int)f); }

typedef wl_reader csv_format;

static const csv_format *csv_format_of(dkv_trace_format f)
{
    return (int)f >= 0 && (int)f < N_READERS && readers[f].cols[0].name ? &readers[f] : NULL;
}

static int find_col(char **hdr, int nh, const char *name)
{
    for (int i = 0; i < nh; i++)
        if (strcasecmp(hdr[i], name) == 0) return i;
    return -1;
}

/* Which CSV format has all its columns in this header (Azure's TIMESTAMP and BurstGPT's
 * Timestamp differ only in case, so the token columns decide). */
static dkv_trace_format detect_csv(char **hdr, int nh)
{
    for (int i = 0; i < N_READERS; i++) {
        const csv_format *cf = &readers[i];
        if (cf->cols[0].name && find_col(hdr, nh, cf->cols[0].name) >= 0 && find_col(hdr, nh, cf->cols[1].name) >= 0 &&
            find_col(hdr, nh, cf->cols[2].name) >= 0)
            return (dkv_trace_format)i;
    }
    return DKV_FMT_AUTO;
}

dkv_status dkv_wl_read_csv(dkv_workload *w, dkv_trace_format fmt, const char *path, char *buf, size_t len,
                           const dkv_workload_opts *o, dkv_err *err)
{
    (void)len;
    char *p = buf, *line;
    unsigned long ln = 0;
    char *hdr[MAX_FIELDS];
    int nh = 0;
    while ((line = dkv_wl_next_line(&p)) != NULL) {
        ln++;
        if (!blank(line)) break;
    }
    if (!line) return dkv_err_set(err, DKV_EFORMAT, "%s: empty file (no header line)", path);
    if (ln == 1 && (unsigned char)line[0] == 0xEF && (unsigned char)line[1] == 0xBB && (unsigned char)line[2] == 0xBF)
        line += 3; /* UTF-8 byte-order mark */
    nh = split_csv(line, hdr);
    if (nh < 0) return dkv_err_set(err, DKV_EFORMAT, "%s:%lu: malformed header line (field header)", path, ln);
    if (fmt == DKV_FMT_AUTO) {
        fmt = detect_csv(hdr, nh);
        if (fmt == DKV_FMT_AUTO)
            return dkv_err_set(err, DKV_EFORMAT,
                               "%s:%lu: unrecognised CSV header (expected Azure TIMESTAMP,ContextTokens,GeneratedTokens; "
                               "Vidur arrived_at,num_prefill_tokens,num_decode_tokens; or BurstGPT Timestamp,...,"
                               "Request tokens,Response tokens,...) (field header)",
                               path, ln);
    }
    const csv_format *cf = csv_format_of(fmt);
    if (!cf) return dkv_err_set(err, DKV_EINVAL, "%s: format %s is not a CSV format", path, dkv_trace_format_name(fmt));
    int idx[3];
    for (int c = 0; c < 3; c++) {
        idx[c] = find_col(hdr, nh, cf->cols[c].name);
        if (idx[c] < 0)
            return dkv_err_set(err, DKV_EFORMAT, "%s:%lu: %s header lacks column '%s' (field %s)", path, ln,
                               dkv_trace_format_name(fmt), cf->cols[c].name, cf->cols[c].name);
    }
    const char *tname = cf->cols[0].name;
    const uint32_t limit = o->first_n;
    int64_t sec0 = 0;
    bool have0 = false;
    char *f[MAX_FIELDS];
    uint64_t row = 0;
    while ((line = dkv_wl_next_line(&p)) != NULL) {
        ln++;
        if (blank(line)) continue;
        if (limit && w->n >= limit) break;
        const char *why = NULL, *field = NULL;
        char bad[48] = "", whybuf[64];
        int nf = split_csv(line, f);
        double t = 0;
        uint32_t P = 0, G = 0;
        if (nf < 0) {
            why = nf == -1 ? "unterminated or misplaced quote" : "too many fields";
            field = tname;
        } else if (nf != nh) {
            snprintf(bad, sizeof bad, "%d", nf);
            snprintf(whybuf, sizeof whybuf, "expected %d fields", nh);
            why = whybuf;
            field = nf < nh ? hdr[nf] : hdr[nh - 1];
        } else {
            const char *ts = f[idx[0]];
            if (cf->cols[0].role == COL_TIME_DATETIME) {
                int64_t s;
                double fr;
                if (!parse_datetime(ts, &s, &fr)) {
                    why = "bad timestamp (expected YYYY-MM-DD HH:MM:SS[.fraction])";
                    field = tname;
                } else {
                    if (!have0) {
                        sec0 = s;
                        have0 = true;
                    }
                    t = (double)(s - sec0) + fr;
                }
            } else if (!parse_seconds(ts, &t)) {
                why = "bad number of seconds";
                field = tname;
            }
            if (!why && !parse_count(f[idx[1]], &P)) {
                why = "expected a non-negative integer";
                field = cf->cols[1].name;
            }
            if (!why && !parse_count(f[idx[2]], &G)) {
                why = "expected a non-negative integer";
                field = cf->cols[2].name;
            }
            if (why) {
                const char *v = field == tname ? ts : field == cf->cols[1].name ? f[idx[1]] : f[idx[2]];
                snprintf(bad, sizeof bad, "'%.40s'", v);
            }
        }
        if (why) {
            if (o->lenient) {
                dkv_workload__skip(w, ln);
                continue;
            }
            return dkv_err_set(err, DKV_EFORMAT, "%s:%lu: %s%s%s (field %s)", path, ln, why, bad[0] ? ", got " : "",
                               bad, field);
        }
        dkv_request *r = dkv_wl_push(w);
        if (!r) return dkv_err_set(err, DKV_ENOMEM, "%s: out of memory at line %lu", path, ln);
        r->id = row++;
        r->arrival_s = t;
        r->prompt_tokens = P;
        r->gen_tokens = G;
    }
    return DKV_OK;
}

/* ------------------------------------------------------------------ entry point */

static bool ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && strcasecmp(s + n - m, suffix) == 0;
}

dkv_status dkv_workload_read(const char *path, dkv_trace_format fmt, const dkv_workload_opts *opts,
                             dkv_workload **out, dkv_err *err)
{
    *out = NULL;
    dkv_workload_opts def;
    if (!opts) {
        dkv_workload_opts_default(&def);
        opts = &def;
    }
    dkv_status rc = dkv_wl_opts_validate(opts, err);
    if (rc != DKV_OK) return rc;
    if ((int)fmt < 0 || (int)fmt >= N_READERS)
        return dkv_err_set(err, DKV_EINVAL, "%s: unknown trace format %d", path, fmt);
    char *buf;
    size_t len;
    rc = dkv_wl_slurp(path, opts->max_file_bytes, &buf, &len, err);
    if (rc != DKV_OK) return rc;
    if (fmt == DKV_FMT_AUTO) {   /* a reader that recognises the file; else a CSV, told by its header */
        const char *s = buf;
        while (isspace((unsigned char)*s)) s++;
        for (int i = 0; i < N_READERS && fmt == DKV_FMT_AUTO; i++)
            if (readers[i].sniff && readers[i].sniff(path, s)) fmt = (dkv_trace_format)i;
    }
    dkv_workload *w = dkv_wl_new(path);
    if (!w) {
        free(buf);
        return dkv_err_set(err, DKV_ENOMEM, "%s: out of memory", path);
    }
    if (readers[fmt].read)
        rc = readers[fmt].read(w, path, buf, len, opts, err);
    else
        rc = dkv_wl_read_csv(w, fmt, path, buf, len, opts, err);
    free(buf);
    if (rc == DKV_OK && w->n == 0)
        rc = dkv_err_set(err, DKV_EFORMAT, "%s: no requests in the file%s", path,
                         w->skipped ? " (every line was malformed)" : "");
    if (rc == DKV_OK) rc = dkv_wl_finish(w, opts, true, err);
    if (rc != DKV_OK) {
        dkv_workload_free(w);
        return rc;
    }
    *out = w;
    return DKV_OK;
}
