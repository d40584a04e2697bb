/* prompts.c - prompts files (JSONL): one request per line with its prompt text or token ids.
 *
 *     {"text": "Once upon a time", "gen": 64}
 *     {"tokens": [101, 2023, 2003]}
 *
 * A small strict JSON parser for one flat object per line (RFC 8259 strings with every escape,
 * \u surrogate pairs decoded to UTF-8; integers; arrays of integers).  Known keys only; a
 * duplicate key is an error.  Errors are "path:line: reason (field NAME)". */
#include "workload/tokenizer.h"
#include "workload/workload_impl.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct pline {
    const char *s;       /* cursor */
    const char *why;     /* first error */
    const char *field;   /* the field it is about, or NULL */
    char       *text;    /* "text", unescaped (malloc) */
    size_t      text_len;
    uint32_t   *ids;     /* "tokens" (malloc) */
    size_t      n_ids, cap_ids;
    int64_t     gen;     /* "gen", -1 when absent */
    bool        has_text, has_tokens, bad_alloc;
} pline;

static bool fail(pline *p, const char *why, const char *field)
{
    if (!p->why) {
        p->why = why;
        p->field = field;
    }
    return false;
}

static void ws(pline *p)
{
    while (*p->s == ' ' || *p->s == '\t' || *p->s == '\r' || *p->s == '\n') p->s++;
}

static bool hex4(pline *p, unsigned *v, const char *field)
{
    *v = 0;
    for (int i = 0; i < 4; i++) {
        char c = p->s[i];
        if (!isxdigit((unsigned char)c)) return fail(p, "bad \\u escape", field);
        *v = *v * 16 + (unsigned)(isdigit((unsigned char)c) ? c - '0' : (tolower((unsigned char)c) - 'a' + 10));
    }
    p->s += 4;
    return true;
}

/* Appends code point cp as UTF-8 to out (room for 4 more bytes is guaranteed by the caller). */
static size_t utf8(char *out, unsigned cp)
{
    if (cp < 0x80) { out[0] = (char)cp; return 1; }
    if (cp < 0x800) { out[0] = (char)(0xC0 | cp >> 6); out[1] = (char)(0x80 | (cp & 0x3F)); return 2; }
    if (cp < 0x10000) {
        out[0] = (char)(0xE0 | cp >> 12); out[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
        out[2] = (char)(0x80 | (cp & 0x3F));
        return 3;
    }
    out[0] = (char)(0xF0 | cp >> 18); out[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
    out[2] = (char)(0x80 | ((cp >> 6) & 0x3F)); out[3] = (char)(0x80 | (cp & 0x3F));
    return 4;
}

/* A \u escape (after the "\u"), a surrogate pair joined; appends its UTF-8 at out. */
static bool uescape(pline *p, char *out, size_t *n, const char *field)
{
    unsigned cp;
    if (!hex4(p, &cp, field)) return false;
    if (cp >= 0xD800 && cp < 0xDC00) {
        unsigned lo;
        if (p->s[0] != '\\' || p->s[1] != 'u') return fail(p, "lone high surrogate in a \\u escape", field);
        p->s += 2;
        if (!hex4(p, &lo, field)) return false;
        if (lo < 0xDC00 || lo >= 0xE000) return fail(p, "bad low surrogate in a \\u escape", field);
        cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
    } else if (cp >= 0xDC00 && cp < 0xE000) {
        return fail(p, "lone low surrogate in a \\u escape", field);
    }
    *n += utf8(out + *n, cp);
    return true;
}

/* A string.  out (malloc'd here, at most as long as the escaped source) gets the text. */
static bool jstring(pline *p, char **out, size_t *len, const char *field)
{
    if (*p->s != '"') return fail(p, "expected a string", field);
    const char *end = p->s + 1;
    while (*end && *end != '"') end += (*end == '\\' && end[1]) ? 2 : 1;
    char *buf = malloc((size_t)(end - p->s) + 4);
    if (!buf) { p->bad_alloc = true; return fail(p, "out of memory", field); }
    size_t n = 0;
    p->s++;
    for (;;) {
        unsigned char c = (unsigned char)*p->s;
        if (c == '\0') { free(buf); return fail(p, "unterminated string", field); }
        if (c < 0x20) { free(buf); return fail(p, "control character in a string (escape it)", field); }
        p->s++;
        if (c == '"') break;
        if (c != '\\') { buf[n++] = (char)c; continue; }
        char e = *p->s++;
        switch (e) {
        case '"': case '\\': case '/': buf[n++] = e; break;
        case 'b': buf[n++] = '\b'; break;
        case 'f': buf[n++] = '\f'; break;
        case 'n': buf[n++] = '\n'; break;
        case 'r': buf[n++] = '\r'; break;
        case 't': buf[n++] = '\t'; break;
        case 'u':
            if (!uescape(p, buf, &n, field)) { free(buf); return false; }
            break;
        default: free(buf); return fail(p, "bad escape in a string", field);
        }
    }
    buf[n] = '\0';
    *out = buf;
    *len = n;
    return true;
}

/* A non-negative integer that fits in u32 (no fraction, no exponent). */
static bool juint(pline *p, uint32_t *v, const char *field)
{
    const char *s = p->s;
    if (*s == '-') return fail(p, "expected a non-negative integer", field);
    if (!isdigit((unsigned char)*s)) return fail(p, "expected an integer", field);
    if (*s == '0' && isdigit((unsigned char)s[1])) return fail(p, "leading zero in a number", field);
    uint64_t x = 0;
    while (isdigit((unsigned char)*s)) {
        x = x * 10 + (uint64_t)(*s++ - '0');
        if (x > UINT32_MAX) return fail(p, "integer out of range", field);
    }
    if (*s == '.' || *s == 'e' || *s == 'E') return fail(p, "expected an integer", field);
    p->s = s;
    *v = (uint32_t)x;
    return true;
}

static bool push_id(pline *p, uint32_t v)
{
    if (p->n_ids == p->cap_ids) {
        size_t cap = p->cap_ids ? p->cap_ids * 2 : 256;
        uint32_t *a = realloc(p->ids, cap * sizeof *a);
        if (!a) { p->bad_alloc = true; return fail(p, "out of memory", "tokens"); }
        p->ids = a;
        p->cap_ids = cap;
    }
    p->ids[p->n_ids++] = v;
    return true;
}

static bool jids(pline *p)
{
    if (*p->s != '[') return fail(p, "expected an array of token ids", "tokens");
    p->s++;
    ws(p);
    if (*p->s == ']') { p->s++; return true; }
    for (;;) {
        uint32_t v;
        ws(p);
        if (!juint(p, &v, "tokens") || !push_id(p, v)) return false;
        ws(p);
        if (*p->s == ',') { p->s++; continue; }
        if (*p->s == ']') { p->s++; return true; }
        return fail(p, "expected ',' or ']' in the token array", "tokens");
    }
}

static bool member(pline *p)
{
    char *key = NULL;
    size_t klen;
    if (!jstring(p, &key, &klen, NULL)) return false;
    ws(p);
    if (*p->s != ':') { free(key); return fail(p, "expected ':' after a key", NULL); }
    p->s++;
    ws(p);
    bool ok;
    if (strcmp(key, "text") == 0) {
        ok = p->has_text ? fail(p, "duplicate key", "text") : jstring(p, &p->text, &p->text_len, "text");
        p->has_text = true;
    } else if (strcmp(key, "tokens") == 0) {
        ok = p->has_tokens ? fail(p, "duplicate key", "tokens") : jids(p);
        p->has_tokens = true;
    } else if (strcmp(key, "gen") == 0) {
        uint32_t g = 0;
        ok = p->gen >= 0 ? fail(p, "duplicate key", "gen") : juint(p, &g, "gen");
        if (ok && g == 0) ok = fail(p, "must be >= 1", "gen");
        p->gen = g;
    } else {
        ok = fail(p, "unknown key (known: text, tokens, gen)", NULL);
    }
    free(key);
    return ok;
}

static bool parse_line(pline *p)
{
    ws(p);
    if (*p->s != '{') return fail(p, "expected a JSON object", NULL);
    p->s++;
    ws(p);
    if (*p->s != '}')
        for (;;) {
            ws(p);
            if (!member(p)) return false;
            ws(p);
            if (*p->s == ',') { p->s++; continue; }
            if (*p->s == '}') break;
            return fail(p, "expected ',' or '}'", NULL);
        }
    p->s++;
    ws(p);
    if (*p->s) return fail(p, "trailing characters after the object", NULL);
    if (p->has_text == p->has_tokens)
        return fail(p, p->has_text ? "give either 'text' or 'tokens', not both" : "needs 'text' or 'tokens'", NULL);
    return true;
}

/* One parsed line into a request (tokens encoded from text when needed). */
static dkv_status add_request(dkv_workload *w, pline *pl, const dkv_prompts_cfg *c, const char *path, size_t line,
                              dkv_err *err)
{
    if (pl->has_text) {
        if (!c->tok || c->tok->kind == DKV_TOKENIZER_NONE)
            return dkv_err_set(err, DKV_EFORMAT, "%s:%zu: the model has no tokenizer dkv knows: give token ids "
                               "(field tokens) instead (field text)", path, line);
        pl->cap_ids = pl->text_len ? pl->text_len : 1;
        pl->ids = malloc(pl->cap_ids * sizeof *pl->ids);
        if (!pl->ids) return dkv_err_set(err, DKV_ENOMEM, "%s:%zu: out of memory", path, line);
        dkv_err e = {0};
        if (dkv_tok_encode(c->tok, pl->text, pl->text_len, pl->ids, pl->cap_ids, &pl->n_ids, &e) != DKV_OK)
            return dkv_err_set(err, DKV_EFORMAT, "%s:%zu: %s (field text)", path, line, e.msg);
    }
    const char *f = pl->has_text ? "text" : "tokens";
    if (pl->n_ids == 0) return dkv_err_set(err, DKV_EFORMAT, "%s:%zu: the prompt is empty (field %s)", path, line, f);
    if (pl->n_ids > UINT32_MAX)
        return dkv_err_set(err, DKV_EFORMAT, "%s:%zu: the prompt is too long (field %s)", path, line, f);
    for (size_t i = 0; i < pl->n_ids; i++)
        if (pl->ids[i] >= c->vocab)
            return dkv_err_set(err, DKV_EFORMAT, "%s:%zu: token %zu is %u, not below the model's vocabulary of %u "
                               "(field tokens)", path, line, i, pl->ids[i], c->vocab);
    dkv_request *r = dkv_wl_push(w);
    if (!r) return dkv_err_set(err, DKV_ENOMEM, "%s: out of memory", path);
    r->id = w->n - 1;
    r->arrival_s = (double)(w->n - 1) * c->interval_s;
    r->prompt_tokens = (uint32_t)pl->n_ids;
    r->gen_tokens = pl->gen > 0 ? (uint32_t)pl->gen : c->gen;
    return dkv_wl_push_tokens(w, pl->ids, pl->n_ids, err);
}

static dkv_status read_lines(dkv_workload *w, const char *path, char *buf, const dkv_prompts_cfg *c,
                             const dkv_workload_opts *o, dkv_err *err)
{
    char *cur = buf, *line;
    size_t lineno = 0;
    while ((line = dkv_wl_next_line(&cur)) != NULL) {
        lineno++;
        const char *s = line;
        while (isspace((unsigned char)*s)) s++;
        if (!*s) continue;
        if (o->first_n && w->n >= o->first_n) break;
        pline pl = {.s = line, .gen = -1};
        dkv_status rc = DKV_OK;
        if (!parse_line(&pl))
            rc = dkv_err_set(err, pl.bad_alloc ? DKV_ENOMEM : DKV_EFORMAT, "%s:%zu: %s%s%s%s", path, lineno, pl.why,
                             pl.field ? " (field " : "", pl.field ? pl.field : "", pl.field ? ")" : "");
        else
            rc = add_request(w, &pl, c, path, lineno, err);
        free(pl.text);
        free(pl.ids);
        if (rc != DKV_OK) return rc;
    }
    return DKV_OK;
}

dkv_status dkv_workload_prompts(const char *path, const dkv_prompts_cfg *cfg, const dkv_workload_opts *opts,
                                dkv_workload **out, dkv_err *err)
{
    *out = NULL;
    dkv_workload_opts def;
    if (!opts) {
        dkv_workload_opts_default(&def);
        opts = &def;
    }
    if (cfg->vocab == 0 || cfg->gen == 0 || !(cfg->interval_s >= 0))
        return dkv_err_set(err, DKV_EINVAL, "%s: prompts: vocab and gen must be > 0 and interval_s >= 0", path);
    if (opts->lenient)
        return dkv_err_set(err, DKV_EINVAL, "%s: prompts: option 'lenient' does not apply (no prompt is skipped)", path);
    if (opts->prompt_min)
        return dkv_err_set(err, DKV_EINVAL, "%s: prompts: option 'prompt_min' does not apply (it cannot add tokens)",
                           path);
    dkv_status rc = dkv_wl_opts_validate(opts, err);
    if (rc != DKV_OK) return rc;
    char *buf;
    size_t len;
    rc = dkv_wl_slurp(path, opts->max_file_bytes, &buf, &len, err);
    if (rc != DKV_OK) return rc;
    char src[256];
    snprintf(src, sizeof src, "prompts:%s", path);
    dkv_workload *w = dkv_wl_new(src);
    if (!w) {
        free(buf);
        return dkv_err_set(err, DKV_ENOMEM, "%s: out of memory", path);
    }
    rc = read_lines(w, path, buf, cfg, opts, err);
    free(buf);
    if (rc == DKV_OK && w->n == 0) rc = dkv_err_set(err, DKV_EFORMAT, "%s: no prompts in the file", path);
    if (rc == DKV_OK) rc = dkv_wl_finish(w, opts, false, err);
    if (rc != DKV_OK) {
        dkv_workload_free(w);
        return rc;
    }
    *out = w;
    return DKV_OK;
}
