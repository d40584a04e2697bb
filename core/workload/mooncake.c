/* mooncake.c - the Mooncake FAST'25 trace (JSONL): one JSON object per line,
 *     {"timestamp": 27482, "input_length": 6955, "output_length": 52, "hash_ids": [46, 47, 48]}
 * timestamp in milliseconds; hash_ids name 512-token prefix blocks (kept for prefix sharing).
 *
 * A small strict JSON parser for one object per line: RFC 8259 syntax (strings with escapes,
 * numbers, true/false/null, nested arrays and objects up to a depth of 32).  Known keys are
 * type-checked; unknown keys are parsed and ignored; a duplicate known key is an error. */
#include "workload/workload_impl.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct jp {
    const char *s;      /* cursor */
    const char *why;    /* first error */
    const char *field;  /* field the error is about (may point at keybuf) */
    char keybuf[32];    /* the key being parsed; outlives parse_line for the message */
} jp;

static void ws(jp *p)
{
    while (*p->s == ' ' || *p->s == '\t' || *p->s == '\r' || *p->s == '\n') p->s++;
}

static bool fail(jp *p, const char *why, const char *field)
{
    if (!p->why) {
        p->why = why;
        p->field = field;
    }
    return false;
}

/* A string; its unescaped text (up to cap-1 bytes, longer keys are truncated but still parsed)
 * goes to out when out != NULL. */
static bool jstring(jp *p, char *out, size_t cap, const char *field)
{
    if (*p->s != '"') return fail(p, "expected a string", field);
    p->s++;
    size_t n = 0;
    for (;;) {
        unsigned char c = (unsigned char)*p->s;
        if (c == '\0') return fail(p, "unterminated string", field);
        if (c < 0x20) return fail(p, "control character in a string", field);
        p->s++;
        if (c == '"') break;
        if (c == '\\') {
            char e = *p->s++;
            switch (e) {
            case '"': case '\\': case '/': c = (unsigned char)e; break;
            case 'b': c = '\b'; break;
            case 'f': c = '\f'; break;
            case 'n': c = '\n'; break;
            case 'r': c = '\r'; break;
            case 't': c = '\t'; break;
            case 'u':
                for (int i = 0; i < 4; i++)
                    if (!isxdigit((unsigned char)p->s[i])) return fail(p, "bad \\u escape", field);
                p->s += 4;
                c = '?'; /* key names we look for are ASCII; the code point itself is not needed */
                break;
            default: return fail(p, "bad escape in a string", field);
            }
        }
        if (out && n + 1 < cap) out[n++] = (char)c;
    }
    if (out) out[n] = '\0';
    return true;
}

/* A JSON number; its span is [*b, p->s). */
static bool jnumber(jp *p, const char **b, bool *integral, const char *field)
{
    const char *s = p->s;
    *b = s;
    *integral = true;
    if (*s == '-') s++;
    if (*s == '0') s++;
    else if (isdigit((unsigned char)*s)) while (isdigit((unsigned char)*s)) s++;
    else return fail(p, "expected a number", field);
    if (*s == '.') {
        *integral = false;
        s++;
        if (!isdigit((unsigned char)*s)) return fail(p, "bad number", field);
        while (isdigit((unsigned char)*s)) s++;
    }
    if (*s == 'e' || *s == 'E') {
        *integral = false;
        s++;
        if (*s == '+' || *s == '-') s++;
        if (!isdigit((unsigned char)*s)) return fail(p, "bad number", field);
        while (isdigit((unsigned char)*s)) s++;
    }
    if (isalnum((unsigned char)*s) || *s == '.') return fail(p, "bad number", field);
    p->s = s;
    return true;
}

static bool jvalue_skip(jp *p, int depth, const char *field);

static bool jcontainer_skip(jp *p, int depth, const char *field)
{
    char close = *p->s == '{' ? '}' : ']';
    bool obj = close == '}';
    if (depth > 32) return fail(p, "nesting too deep", field);
    p->s++;
    ws(p);
    if (*p->s == close) {
        p->s++;
        return true;
    }
    for (;;) {
        if (obj) {
            if (!jstring(p, NULL, 0, field)) return false;
            ws(p);
            if (*p->s++ != ':') return fail(p, "expected ':'", field);
            ws(p);
        }
        if (!jvalue_skip(p, depth + 1, field)) return false;
        ws(p);
        if (*p->s == ',') {
            p->s++;
            ws(p);
            continue;
        }
        if (*p->s == close) {
            p->s++;
            return true;
        }
        return fail(p, obj ? "expected ',' or '}'" : "expected ',' or ']'", field);
    }
}

static bool jvalue_skip(jp *p, int depth, const char *field)
{
    const char *b;
    bool integral;
    switch (*p->s) {
    case '"': return jstring(p, NULL, 0, field);
    case '{': case '[': return jcontainer_skip(p, depth, field);
    case 't': if (strncmp(p->s, "true", 4) == 0) { p->s += 4; return true; } break;
    case 'f': if (strncmp(p->s, "false", 5) == 0) { p->s += 5; return true; } break;
    case 'n': if (strncmp(p->s, "null", 4) == 0) { p->s += 4; return true; } break;
    default: return jnumber(p, &b, &integral, field);
    }
    return fail(p, "bad literal", field);
}

/* A non-negative integer that fits uint64 (and, for counts, uint32). */
static bool jcount(jp *p, uint64_t max, uint64_t *out, const char *field)
{
    const char *b;
    bool integral;
    if (!jnumber(p, &b, &integral, field)) return false;
    if (*b == '-') return fail(p, "expected a non-negative integer", field);
    if (!integral) {
        /* 123.0 and 1e3 are integral in value; accept them when exact */
        double v = strtod(b, NULL);
        if (!(v >= 0) || v != floor(v) || v > (double)max || v >= 9007199254740992.0)
            return fail(p, "expected a non-negative integer", field);
        *out = (uint64_t)v;
        return true;
    }
    errno = 0;
    unsigned long long v = strtoull(b, NULL, 10);
    if (errno || v > max) return fail(p, "integer out of range", field);
    *out = v;
    return true;
}

/* ------------------------------------------------------------------ one line */

enum { K_TS = 1, K_IN = 2, K_OUT = 4, K_HASH = 8 };

static bool parse_line(jp *p, dkv_workload *w, dkv_request *r, dkv_err *err)
{
    unsigned seen = 0;
    ws(p);
    if (*p->s != '{') return fail(p, "expected a JSON object '{'", "line");
    p->s++;
    ws(p);
    bool first = true;
    while (*p->s != '}' || !first) {
        if (!first) {
            ws(p);
            if (*p->s == '}') break;
            if (*p->s != ',') return fail(p, "expected ',' or '}'", "object");
            p->s++;
            ws(p);
        }
        first = false;
        char *key = p->keybuf;
        if (!jstring(p, key, sizeof p->keybuf, "key")) return false;
        ws(p);
        if (*p->s++ != ':') return fail(p, "expected ':' after a key", "key");
        ws(p);
        unsigned k = strcmp(key, "timestamp") == 0       ? K_TS
                     : strcmp(key, "input_length") == 0  ? K_IN
                     : strcmp(key, "output_length") == 0 ? K_OUT
                     : strcmp(key, "hash_ids") == 0      ? K_HASH
                                                         : 0;
        static const char *const names[] = {"", "timestamp", "input_length", "", "output_length",
                                            "", "", "", "hash_ids"};
        if (k && (seen & k)) return fail(p, "duplicate key", names[k]);
        seen |= k;
        uint64_t v;
        const char *b;
        bool integral;
        switch (k) {
        case K_TS:
            if (!jnumber(p, &b, &integral, "timestamp")) return false;
            r->arrival_s = strtod(b, NULL) / 1000.0;
            if (!isfinite(r->arrival_s)) return fail(p, "timestamp out of range", "timestamp");
            break;
        case K_IN:
            if (!jcount(p, UINT32_MAX, &v, "input_length")) return false;
            r->prompt_tokens = (uint32_t)v;
            break;
        case K_OUT:
            if (!jcount(p, UINT32_MAX, &v, "output_length")) return false;
            r->gen_tokens = (uint32_t)v;
            break;
        case K_HASH:
            if (*p->s != '[') return fail(p, "expected an array of integers", "hash_ids");
            p->s++;
            ws(p);
            if (*p->s == ']') {
                p->s++;
                break;
            }
            for (;;) {
                if (!jcount(p, UINT64_MAX, &v, "hash_ids")) return false;
                if (dkv_wl_push_hash(w, v, err) != DKV_OK) return fail(p, "out of memory", "hash_ids");
                ws(p);
                if (*p->s == ',') {
                    p->s++;
                    ws(p);
                    continue;
                }
                if (*p->s == ']') {
                    p->s++;
                    break;
                }
                return fail(p, "expected ',' or ']'", "hash_ids");
            }
            break;
        default:
            if (!jvalue_skip(p, 1, key)) return false;
        }
    }
    p->s++; /* '}' */
    ws(p);
    if (*p->s != '\0') return fail(p, "trailing characters after the object", "line");
    if (!(seen & K_TS)) return fail(p, "missing key", "timestamp");
    if (!(seen & K_IN)) return fail(p, "missing key", "input_length");
    if (!(seen & K_OUT)) return fail(p, "missing key", "output_length");
    return true;
}

dkv_status dkv_wl_read_mooncake(dkv_workload *w, const char *path, char *buf, size_t len,
                                const dkv_workload_opts *o, dkv_err *err)
{
    (void)len;
    char *cur = buf, *line;
    unsigned long ln = 0;
    uint64_t row = 0;
    while ((line = dkv_wl_next_line(&cur)) != NULL) {
        ln++;
        const char *s = line;
        while (isspace((unsigned char)*s)) s++;
        if (*s == '\0') continue;
        if (o->first_n && w->n >= o->first_n) break;
        dkv_request *r = dkv_wl_push(w);
        if (!r) return dkv_err_set(err, DKV_ENOMEM, "%s: out of memory at line %lu", path, ln);
        r->id = row;
        jp p = {.s = s};
        if (!parse_line(&p, w, r, err)) {
            dkv_wl_pop(w);
            if (err && err->code == DKV_ENOMEM) return DKV_ENOMEM;
            if (o->lenient) {
                dkv_workload__skip(w, ln);
                continue;
            }
            if (strcmp(p.why, "missing key") == 0)
                return dkv_err_set(err, DKV_EFORMAT, "%s:%lu: missing key '%s' (field %s)", path, ln, p.field,
                                   p.field);
            return dkv_err_set(err, DKV_EFORMAT, "%s:%lu: %s at column %ld (field %s)", path, ln, p.why,
                               (long)(p.s - line) + 1, p.field);
        }
        row++;
    }
    return DKV_OK;
}
