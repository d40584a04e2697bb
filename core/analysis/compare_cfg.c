/* compare_cfg.c - configuration literals (the `config` provenance attribute) flattened to
 * key/value leaves, configuration fingerprints, and the kernel class names (compare.h). */
#include "analysis/compare_impl.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *dkv_cmp_class_name(uint32_t kind)
{
    static const char *const names[DKV_CMP_NCLASS + 2] = {
        "qkv", "attn", "o_proj", "ffn", "lm_head", "kv_store", "kv_gather", "reorder", "elementwise", "compress",
        "unknown", "setup",
    };
    return kind < DKV_CMP_NCLASS + 2 ? names[kind] : "?";
}

/* ------------------------------------------------------------------ the parser */

typedef struct lit {
    const char *s, *p;
    dkv_cfg_kv *kv;
    size_t n, cap;
    char path[512];
    dkv_err *err;
    dkv_status st;
} lit;

static void ws(lit *l)
{
    while (*l->p == ' ' || *l->p == '\n' || *l->p == '\t' || *l->p == '\r')
        l->p++;
}

static dkv_status fail(lit *l, const char *what)
{
    if (l->st == DKV_OK)
        l->st = dkv_err_set(l->err, DKV_EFORMAT, "config literal: %s at byte %td (near '%.12s')", what,
                            l->p - l->s, l->p);
    return l->st;
}

static dkv_status add(lit *l, const char *text, size_t len, bool is_num, double num)
{
    if (l->n == l->cap) {
        size_t cap = l->cap ? 2 * l->cap : 64;
        dkv_cfg_kv *nk = realloc(l->kv, cap * sizeof *nk);
        if (!nk)
            return l->st = dkv_err_set(l->err, DKV_ENOMEM, "config literal: out of memory");
        l->kv = nk;
        l->cap = cap;
    }
    dkv_cfg_kv *e = &l->kv[l->n];
    e->key = strdup(l->path);
    e->value = malloc(len + 1);
    if (!e->key || !e->value) {
        free(e->key);
        free(e->value);
        return l->st = dkv_err_set(l->err, DKV_ENOMEM, "config literal: out of memory");
    }
    memcpy(e->value, text, len);
    e->value[len] = '\0';
    e->is_num = is_num;
    e->num = num;
    l->n++;
    return DKV_OK;
}

/* A quoted string at l->p into a malloc'd buffer (escapes decoded). */
static char *string(lit *l, size_t *len)
{
    const char *p = l->p + 1;
    size_t cap = 32, n = 0;
    char *b = malloc(cap);
    if (!b) {
        l->st = dkv_err_set(l->err, DKV_ENOMEM, "config literal: out of memory");
        return NULL;
    }
    while (*p && *p != '"') {
        char c = *p++;
        if (c == '\\') {
            if (*p == 'n')
                c = '\n', p++;
            else if (*p >= '0' && *p <= '9') {
                int v = 0;
                for (int k = 0; k < 3 && *p >= '0' && *p <= '9'; k++)
                    v = 10 * v + (*p++ - '0');
                c = (char)v;
            } else if (*p)
                c = *p++;
        }
        if (n + 2 > cap) {
            char *nb = realloc(b, cap *= 2);
            if (!nb) {
                free(b);
                l->st = dkv_err_set(l->err, DKV_ENOMEM, "config literal: out of memory");
                return NULL;
            }
            b = nb;
        }
        b[n++] = c;
    }
    if (*p != '"') {
        free(b);
        fail(l, "unterminated string");
        return NULL;
    }
    b[n] = '\0';
    l->p = p + 1;
    *len = n;
    return b;
}

static dkv_status value(lit *l, int depth);

static dkv_status table(lit *l, int depth)
{
    if (depth > 32)
        return fail(l, "tables nested too deep");
    l->p++;   /* '{' */
    size_t base = strlen(l->path);
    long pos = 1;
    for (;;) {
        ws(l);
        if (*l->p == '}') {
            l->p++;
            l->path[base] = '\0';
            return DKV_OK;
        }
        char key[160];
        const char *q = l->p;
        bool named = false;
        if (*q == '[') {   /* [n] = or ["s"] = */
            l->p++;
            ws(l);
            if (*l->p == '"') {
                size_t len;
                char *s = string(l, &len);
                if (!s)
                    return l->st;
                snprintf(key, sizeof key, ".%s", s);
                free(s);
            } else {
                char *end;
                long long k = strtoll(l->p, &end, 10);
                if (end == l->p)
                    return fail(l, "expected a key inside [ ]");
                snprintf(key, sizeof key, "[%lld]", k);
                l->p = end;
            }
            ws(l);
            if (*l->p != ']')
                return fail(l, "expected ']'");
            l->p++;
            ws(l);
            if (*l->p != '=')
                return fail(l, "expected '=' after a [key]");
            l->p++;
            named = true;
        } else if ((*q >= 'a' && *q <= 'z') || (*q >= 'A' && *q <= 'Z') || *q == '_') {
            const char *e = q;
            while ((*e >= 'a' && *e <= 'z') || (*e >= 'A' && *e <= 'Z') || (*e >= '0' && *e <= '9') || *e == '_')
                e++;
            const char *after = e;
            while (*after == ' ')
                after++;
            if (*after == '=' && after[1] != '=') {
                snprintf(key, sizeof key, ".%.*s", (int)(e - q), q);
                l->p = after + 1;
                named = true;
            }
        }
        if (!named)
            snprintf(key, sizeof key, "[%ld]", pos++);
        const char *k = key;
        if (base == 0 && key[0] == '.')
            k++;   /* no leading dot at the top level */
        if (base + strlen(k) + 1 > sizeof l->path)
            return fail(l, "key path too long");
        strcpy(l->path + base, k);
        ws(l);
        if (value(l, depth + 1) != DKV_OK)
            return l->st;
        l->path[base] = '\0';
        ws(l);
        if (*l->p == ',' || *l->p == ';')
            l->p++;
        else if (*l->p != '}')
            return fail(l, "expected ',' or '}'");
    }
}

static dkv_status value(lit *l, int depth)
{
    const char *p = l->p;
    if (*p == '{')
        return table(l, depth);
    if (*p == '"') {
        size_t len;
        char *s = string(l, &len);
        if (!s)
            return l->st;
        dkv_status st = add(l, s, len, false, 0);
        free(s);
        return st;
    }
    static const struct { const char *text; double v; bool num; } words[] = {
        {"true", 1, false}, {"false", 0, false}, {"nil", 0, false},
        {"(0/0)", NAN, true}, {"-math.huge", -HUGE_VAL, true}, {"math.huge", HUGE_VAL, true},
    };
    for (size_t i = 0; i < sizeof words / sizeof words[0]; i++) {
        size_t n = strlen(words[i].text);
        if (strncmp(p, words[i].text, n) == 0) {
            l->p += n;
            return add(l, p, n, words[i].num, words[i].v);
        }
    }
    char *end;
    double v = strtod(p, &end);
    if (end == p)
        return fail(l, "expected a value");
    l->p = end;
    return add(l, p, (size_t)(end - p), true, v);
}

dkv_status dkv_cfg_flatten(const char *literal, dkv_cfg_kv **out, size_t *n, dkv_err *err)
{
    *out = NULL;
    *n = 0;
    lit l = {.s = literal ? literal : "", .err = err};
    l.p = l.s;
    ws(&l);
    if (*l.p != '{')
        return fail(&l, "expected '{'");
    if (table(&l, 0) == DKV_OK) {
        ws(&l);
        if (*l.p)
            fail(&l, "text after the table");
    }
    if (l.st != DKV_OK) {
        dkv_cfg_kv_free(l.kv, l.n);
        return l.st;
    }
    *out = l.kv;
    *n = l.n;
    return DKV_OK;
}

void dkv_cfg_kv_free(dkv_cfg_kv *kv, size_t n)
{
    if (!kv)
        return;
    for (size_t i = 0; i < n; i++) {
        free(kv[i].key);
        free(kv[i].value);
    }
    free(kv);
}

static bool has_prefix(const char *key, const char *p)
{
    size_t n = strlen(p);
    return strncmp(key, p, n) == 0 && (key[n] == '\0' || key[n] == '.' || key[n] == '[');
}

/* Keys that model the hardware rather than configure the run do not matter: the GPU preset, the
 * simulator's options, what is recorded, and the host-time model (scheduler.step_host_s,
 * step_release_s, handover_s: a simulated run models host time, from its GPU's profile when it has
 * one ("profile"), while an executed run spends it for real and refuses them). */
bool dkv_cfg_key_matters(const char *key)
{
    return !(has_prefix(key, "gpu") || has_prefix(key, "sim") || has_prefix(key, "record") ||
             has_prefix(key, "cost_per_hour") || has_prefix(key, "scheduler.step_host_s") ||
             has_prefix(key, "scheduler.step_release_s") || has_prefix(key, "scheduler.handover_s"));
}

/* ------------------------------------------------------------------ fingerprints */

static uint64_t fnv(uint64_t h, const char *s)
{
    for (; *s; s++) {
        h ^= (unsigned char)*s;
        h *= 0x100000001b3ull;
    }
    return h;
}

static uint64_t fingerprint(const char *literal, bool workload_only)
{
    dkv_cfg_kv *kv;
    size_t n;
    if (!literal || dkv_cfg_flatten(literal, &kv, &n, NULL) != DKV_OK)
        return 0;
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < n; i++) {
        bool take = workload_only ? has_prefix(kv[i].key, "workload") && !has_prefix(kv[i].key, "workload.source")
                                  : dkv_cfg_key_matters(kv[i].key);
        if (!take)
            continue;
        h = fnv(fnv(fnv(h, kv[i].key), "="), kv[i].value);
        h = fnv(h, "\n");
    }
    dkv_cfg_kv_free(kv, n);
    return h ? h : 1;
}

uint64_t dkv_cmp_workload_fingerprint(const char *literal)
{
    return fingerprint(literal, true);
}

uint64_t dkv_cmp_config_fingerprint(const char *literal)
{
    return fingerprint(literal, false);
}

/* ------------------------------------------------------------------ configurations */

static int kv_cmp(const void *pa, const void *pb)
{
    return strcmp(((const dkv_cfg_kv *)pa)->key, ((const dkv_cfg_kv *)pb)->key);
}

static bool same_value(const dkv_cfg_kv *a, const dkv_cfg_kv *b)
{
    if (a->is_num && b->is_num) {
        if (isnan(a->num) && isnan(b->num))
            return true;
        double m = fmax(fabs(a->num), fabs(b->num));
        return a->num == b->num || fabs(a->num - b->num) <= 1e-12 * m;
    }
    return strcmp(a->value, b->value) == 0;
}

static dkv_status add_diff(dkv_cmp *c, const char *key, const char *r, const char *s, dkv_err *err)
{
    dkv_cmp_diff *nd = realloc(c->d, (c->nd + 1) * sizeof *nd);
    if (!nd)
        return dkv_err_set(err, DKV_ENOMEM, "compare: out of memory");
    c->d = nd;
    dkv_cmp_diff *d = &c->d[c->nd];
    d->key = strdup(key);
    d->real = strdup(r);
    d->sim = strdup(s);
    d->matters = dkv_cfg_key_matters(key);
    if (!d->key || !d->real || !d->sim) {
        free((char *)d->key);
        free((char *)d->real);
        free((char *)d->sim);
        return dkv_err_set(err, DKV_ENOMEM, "compare: out of memory");
    }
    c->nd++;
    c->info.n_diffs_matter += d->matters;
    return DKV_OK;
}

dkv_status dkv_cmp__config(dkv_cmp *c, const char *rfile, const char *rname, const char *rcfg, const char *sfile,
                          const char *sname, const char *scfg, dkv_err *err)
{
    if (!rcfg || !scfg)
        return add_diff(c, "config", rcfg ? "(present)" : "(absent)", scfg ? "(present)" : "(absent)", err);
    c->info.real_workload_fp = dkv_cmp_workload_fingerprint(rcfg);
    c->info.sim_workload_fp = dkv_cmp_workload_fingerprint(scfg);
    c->info.real_config_fp = dkv_cmp_config_fingerprint(rcfg);
    c->info.sim_config_fp = dkv_cmp_config_fingerprint(scfg);
    dkv_cfg_kv *a = NULL, *b = NULL;
    size_t na = 0, nb = 0;
    dkv_status st = dkv_cfg_flatten(rcfg, &a, &na, err);
    if (st != DKV_OK) {
        dkv_err_prefix(err, "%s: run '%s'", rfile, rname);
        return st;
    }
    if ((st = dkv_cfg_flatten(scfg, &b, &nb, err)) != DKV_OK) {
        dkv_cfg_kv_free(a, na);
        dkv_err_prefix(err, "%s: run '%s'", sfile, sname);
        return st;
    }
    qsort(a, na, sizeof *a, kv_cmp);
    qsort(b, nb, sizeof *b, kv_cmp);
    size_t i = 0, j = 0;
    while (st == DKV_OK && (i < na || j < nb)) {
        int o = i >= na ? 1 : j >= nb ? -1 : strcmp(a[i].key, b[j].key);
        if (o < 0)
            st = add_diff(c, a[i].key, a[i].value, "(absent)", err), i++;
        else if (o > 0)
            st = add_diff(c, b[j].key, "(absent)", b[j].value, err), j++;
        else {
            if (!same_value(&a[i], &b[j]))
                st = add_diff(c, a[i].key, a[i].value, b[j].value, err);
            i++, j++;
        }
    }
    dkv_cfg_kv_free(a, na);
    dkv_cfg_kv_free(b, nb);
    return st;
}

