/* ncu.c - reading `ncu --csv` output and classifying its kernels (ncu.h). */
#include "analysis/ncu.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include "util/file.h"

/* ------------------------------------------------------------------ CSV rows */

#define MAX_FIELDS 64

/* Splits a CSV line in place ("" quoting, "" inside quotes).  Returns the field count, or -1
 * for an unterminated quote, -2 for too many fields. */
static int split(char *line, char **f)
{
    int n = 0;
    char *p = line;
    for (;;) {
        if (n == MAX_FIELDS)
            return -2;
        if (*p == '"') {
            char *w = ++p;
            f[n++] = w;
            for (;;) {
                if (*p == '\0')
                    return -1;
                if (*p == '"') {
                    if (p[1] == '"') {
                        *w++ = '"';
                        p += 2;
                        continue;
                    }
                    p++;
                    break;
                }
                *w++ = *p++;
            }
            *w = '\0';
            while (*p == ' ')
                p++;
            if (*p == ',') {
                p++;
                continue;
            }
            return *p == '\0' ? n : -1;
        }
        f[n++] = p;
        char *c = strchr(p, ',');
        if (!c)
            return n;
        *c = '\0';
        p = c + 1;
    }
}

/* "1,234.5" -> 1234.5; "n/a" or "" -> NaN (*ok = 1); anything else -> *ok = 0. */
static double number(const char *s, int *ok)
{
    char buf[96];
    size_t n = 0;
    *ok = 1;
    while (*s == ' ')
        s++;
    if (*s == '\0' || strcasecmp(s, "n/a") == 0)
        return NAN;
    for (; *s && n + 1 < sizeof buf; s++)
        if (*s != ',')
            buf[n++] = *s;
    buf[n] = '\0';
    char *end;
    double v = strtod(buf, &end);
    while (*end == ' ')
        end++;
    if (end == buf || *end)
        *ok = 0;
    return v;
}

/* Multiplier of a unit to bytes (kind 'b') or seconds (kind 't'); 0 when unknown. */
static double unit_scale(const char *u, char kind)
{
    static const struct { const char *u; double s; char k; } units[] = {
        {"byte", 1, 'b'}, {"bytes", 1, 'b'}, {"B", 1, 'b'}, {"Kbyte", 1e3, 'b'}, {"KB", 1e3, 'b'},
        {"Mbyte", 1e6, 'b'}, {"MB", 1e6, 'b'}, {"Gbyte", 1e9, 'b'}, {"GB", 1e9, 'b'}, {"Tbyte", 1e12, 'b'},
        {"TB", 1e12, 'b'}, {"Kibyte", 1024.0, 'b'}, {"KiB", 1024.0, 'b'}, {"Mibyte", 1048576.0, 'b'},
        {"MiB", 1048576.0, 'b'}, {"Gibyte", 1073741824.0, 'b'}, {"GiB", 1073741824.0, 'b'},
        {"nsecond", 1e-9, 't'}, {"ns", 1e-9, 't'}, {"usecond", 1e-6, 't'}, {"us", 1e-6, 't'},
        {"msecond", 1e-3, 't'}, {"ms", 1e-3, 't'}, {"second", 1, 't'}, {"s", 1, 't'},
    };
    for (size_t i = 0; i < sizeof units / sizeof units[0]; i++)
        if (units[i].k == kind && strcmp(u, units[i].u) == 0)
            return units[i].s;
    return 0;
}

/* ------------------------------------------------------------------ names */

void dkv_ncu_base_name(const char *full, char *out, size_t size)
{
    /* drop template and parameter lists (depth 0 text only), then take the last "::" part and
     * the last space-separated word (the return type "void" goes) */
    char tmp[512];
    size_t n = 0;
    int depth = 0;
    for (const char *p = full; *p && n + 1 < sizeof tmp; p++) {
        if (*p == '<' || *p == '(' || *p == '[')
            depth++;
        else if ((*p == '>' || *p == ')' || *p == ']') && depth > 0)
            depth--;
        else if (depth == 0)
            tmp[n++] = *p;
    }
    tmp[n] = '\0';
    while (n && tmp[n - 1] == ' ')
        tmp[--n] = '\0';
    const char *b = tmp;
    for (const char *p = tmp; *p; p++) {
        if (p[0] == ':' && p[1] == ':')
            b = p + 2;
        else if (*p == ' ')
            b = p + 1;
    }
    if (!*b)
        b = full;   /* e.g. an operator name: keep what ncu printed */
    snprintf(out, size, "%s", b);
}

/* Classes of dkv's own kernels, by function name (the .cu files of cuda/). */
static const struct { const char *name; int kind; } by_name[] = {
    {"flash_kernel", 1}, {"softmax_rows_kernel", 1},
    {"rope_store_kernel", 5}, {"kv_store_kernel", 5},
    {"rope_kernel", 8}, {"rmsnorm_kernel", 8}, {"swiglu_kernel", 8}, {"embedding_kernel", 8},
    {"reset_kernel", 8}, {"unmask_kernel", 8},
    {"gather_kernel", 6}, {"kv_pack_kernel", 6}, {"pack_paged_kernel", 6}, {"topk_kernel", 6},
    {"score_stats_kernel", 6}, {"score_sum_kernel", 6}, {"row_stats_kernel", 6}, {"col_sum_kernel", 6},
    {"kv_reorder_kernel", 7},
    {"bf16_to_f32_kernel", 9}, {"f32_to_bf16_kernel", 9}, {"cholinv_kernel", 9}, {"relerr_kernel", 9},
    {"argmax_conf_kernel", 4},
    {"fill_random_kernel", DKV_CMP_NCLASS + 1}, {"flush_kernel", DKV_CMP_NCLASS + 1},   /* setup: the weights' fill,
                                                                                     the L2 flush diagnostic */
};

static bool contains_ci(const char *s, const char *w)
{
    size_t n = strlen(w);
    for (; *s; s++)
        if (strncasecmp(s, w, n) == 0)
            return true;
    return false;
}

/* 1: a GEMM kernel; 2: a reduction cuBLAS runs after a split-K GEMM; 0: neither. */
static int gemm_kind(const char *full, const char *base)
{
    if (contains_ci(full, "splitKreduce") || (contains_ci(base, "reduce_kernel") && contains_ci(full, "cublas")))
        return 2;
    static const char *const pats[] = {"gemm", "gemv", "cutlass", "xmma", "nvjet", "cublasLt", NULL};
    for (int i = 0; pats[i]; i++)
        if (contains_ci(full, pats[i]))
            return 1;
    static const char *const prefixes[] = {"sm90_", "sm80_", "sm100_", "ampere_", "hopper_", "volta_", NULL};
    for (int i = 0; prefixes[i]; i++)
        if (strncmp(base, prefixes[i], strlen(prefixes[i])) == 0)
            return 1;
    return 0;
}

enum { C_QKV = 0, C_ATTN, C_O, C_FFN, C_LM, C_STORE, C_GATHER, C_REORDER, C_ELEM, C_COMPRESS, C_UNKNOWN, C_SETUP };

void dkv_ncu_classify(dkv_ncu_kernel *k, const char *const *full_names, size_t n)
{
    uint8_t *red = calloc(n ? n : 1, 1);   /* 1: a split-K reduction */
    for (size_t i = 0; i < n; i++) {
        const char *full = full_names ? full_names[i] : k[i].name;
        k[i].kind = C_UNKNOWN;
        k[i].rule = DKV_NCU_UNMATCHED;
        k[i].gemm = 0;
        for (size_t j = 0; j < sizeof by_name / sizeof by_name[0]; j++)
            if (strcmp(k[i].name, by_name[j].name) == 0) {
                k[i].kind = (uint32_t)by_name[j].kind;
                k[i].rule = DKV_NCU_BY_NAME;
            }
        if (k[i].rule == DKV_NCU_UNMATCHED) {
            int g = gemm_kind(full, k[i].name);
            k[i].gemm = g != 0;
            if (red)
                red[i] = g == 2;
        }
    }
    /* GEMMs by their neighbours (the order of cuda/backend_fwd.c's forward):
     *   the first non-GEMM kernel after its run of GEMMs is argmax_conf -> lm_head; a selection
     *   statistic -> kv_gather (scores, one GEMM per KV-head group); softmax_rows -> attn (dense
     *   scores); a compress kernel (or a compress GEMM) right before -> compress;
     *   else by the previous non-GEMM kernel: the attention-norm rmsnorm -> qkv, the FFN-norm
     *   rmsnorm (one after an attention kernel) -> ffn, swiglu -> ffn (down), flash -> o_proj,
     *   softmax_rows -> attn for the first GEMM after it (P.V), o_proj for the second;
     *   else a compress kernel right after -> compress.
     * A split-K reduction takes the class of the GEMM before it. */
    int prev = -1;            /* index of the previous non-GEMM kernel */
    int before = -1;          /* class of the kernel just before (GEMM or not; setup kernels skipped) */
    bool ffn_norm = false, attn_since_norm = false;
    int gemms_since = 0, last_gemm_kind = C_UNKNOWN;
    for (size_t i = 0; i < n; i++) {
        if (k[i].kind == C_SETUP)
            continue;
        if (!k[i].gemm) {
            if (strcmp(k[i].name, "rmsnorm_kernel") == 0) {
                ffn_norm = attn_since_norm;
                attn_since_norm = false;
            } else if (k[i].kind == C_ATTN)
                attn_since_norm = true;
            prev = (int)i;
            gemms_since = 0;
            before = (int)k[i].kind;
            continue;
        }
        if (red && red[i]) {
            k[i].kind = (uint32_t)last_gemm_kind;
            k[i].rule = last_gemm_kind == C_UNKNOWN ? DKV_NCU_UNMATCHED : DKV_NCU_BY_ORDER;
            continue;
        }
        size_t nx = i + 1;   /* the first non-GEMM kernel after this run of GEMMs */
        while (nx < n && (k[nx].gemm || k[nx].kind == C_SETUP))
            nx++;
        bool next_plain = nx < n;
        size_t im = i + 1;   /* the kernel right after (past this GEMM's reductions) */
        while (im < n && ((red && red[im]) || k[im].kind == C_SETUP))
            im++;
        bool imm_compress = im < n && !k[im].gemm && k[im].kind == C_COMPRESS;
        const char *next = next_plain ? k[nx].name : "";
        int next_kind = next_plain ? (int)k[nx].kind : -1;
        const char *pn = prev >= 0 ? k[prev].name : "";
        int c = C_UNKNOWN;
        if (strcmp(next, "argmax_conf_kernel") == 0)
            c = C_LM;
        else if (next_kind == C_GATHER && strcmp(next, "pack_paged_kernel") != 0 && strcmp(next, "gather_kernel") != 0)
            c = C_GATHER;
        else if (strcmp(next, "softmax_rows_kernel") == 0)
            c = C_ATTN;
        else if (before == C_COMPRESS)
            c = C_COMPRESS;
        else if (strcmp(pn, "rmsnorm_kernel") == 0)
            c = ffn_norm ? C_FFN : C_QKV;
        else if (strcmp(pn, "swiglu_kernel") == 0)
            c = C_FFN;
        else if (strcmp(pn, "flash_kernel") == 0)
            c = C_O;
        else if (strcmp(pn, "softmax_rows_kernel") == 0)
            c = gemms_since == 0 ? C_ATTN : C_O;
        else if (imm_compress)
            c = C_COMPRESS;
        gemms_since++;
        k[i].kind = (uint32_t)c;
        k[i].rule = c == C_UNKNOWN ? DKV_NCU_UNMATCHED : DKV_NCU_BY_ORDER;
        last_gemm_kind = before = c;
    }
    free(red);
}

void dkv_ncu_totals(const dkv_ncu_kernel *k, size_t n, dkv_ncu_class_total tot[DKV_NCU_NTOTALS])
{
    for (uint32_t c = 0; c < DKV_NCU_NTOTALS; c++)
        tot[c] = (dkv_ncu_class_total){.kind = c};
    for (size_t i = 0; i < n; i++) {
        if (k[i].kind >= DKV_NCU_NTOTALS)
            continue;
        dkv_ncu_class_total *t = &tot[k[i].kind];
        t->n_kernels++;
        if (isnan(k[i].read_bytes) || isnan(k[i].write_bytes) || isnan(k[i].time_s)) {
            t->n_incomplete++;
            continue;
        }
        t->read_bytes += k[i].read_bytes;
        t->write_bytes += k[i].write_bytes;
        t->time_s += k[i].time_s;
    }
}

/* ------------------------------------------------------------------ reading the file */

typedef struct reader {
    dkv_ncu_kernel *k;
    char **full;
    size_t n, cap;
} reader;

static void reader_free(reader *r)
{
    for (size_t i = 0; i < r->n; i++)
        free(r->full[i]);
    free(r->full);
    free(r->k);
}

/* The kernel with ncu ID id: the last one, or a new one (IDs grow), or an earlier one. */
static dkv_ncu_kernel *kernel_for(reader *r, uint64_t id, const char *full, dkv_err *err)
{
    for (size_t i = r->n; i-- > 0;) {
        if (r->k[i].id == id)
            return &r->k[i];
        if (r->k[i].id < id)
            break;
    }
    if (r->n == r->cap) {
        size_t cap = r->cap ? 2 * r->cap : 256;
        dkv_ncu_kernel *nk = realloc(r->k, cap * sizeof *nk);
        char **nf = nk ? realloc(r->full, cap * sizeof *nf) : NULL;
        if (nk)
            r->k = nk;
        if (!nk || !nf) {
            dkv_err_set(err, DKV_ENOMEM, "ncu: out of memory");
            return NULL;
        }
        r->full = nf;
        r->cap = cap;
    }
    size_t i = r->n;   /* keep the array sorted by id */
    while (i > 0 && r->k[i - 1].id > id)
        i--;
    char *f = strdup(full);
    if (!f) {
        dkv_err_set(err, DKV_ENOMEM, "ncu: out of memory");
        return NULL;
    }
    memmove(&r->k[i + 1], &r->k[i], (r->n - i) * sizeof *r->k);
    memmove(&r->full[i + 1], &r->full[i], (r->n - i) * sizeof *r->full);
    r->n++;
    dkv_ncu_kernel *k = &r->k[i];
    memset(k, 0, sizeof *k);
    k->id = id;
    k->read_bytes = k->write_bytes = k->time_s = NAN;
    dkv_ncu_base_name(full, k->name, sizeof k->name);
    r->full[i] = f;
    return k;
}

static int column_of(char **f, int n, const char *name)
{
    for (int i = 0; i < n; i++)
        if (strcmp(f[i], name) == 0)
            return i;
    return -1;
}

dkv_status dkv_ncu_read(const char *path, dkv_ncu_kernel **out, size_t *n, dkv_err *err)
{
    *out = NULL;
    *n = 0;
    FILE *fp;
    dkv_status ost = dkv_fopen_input(path, &fp, err);
    if (ost != DKV_OK)
        return ost;
    reader r = {0};
    char *line = NULL, *f[MAX_FIELDS];
    size_t cap = 0;
    ssize_t len;
    long lineno = 0;
    int nhead = 0, c_id = -1, c_name = -1, c_metric = -1, c_unit = -1, c_value = -1;
    dkv_status st = DKV_OK;
    while (st == DKV_OK && (len = getline(&line, &cap, fp)) >= 0) {
        lineno++;
        while (len > 0 && (line[len - 1] == '\n' || line[len - 1] == '\r'))
            line[--len] = '\0';
        if (nhead == 0) {   /* before the header: the program's output, ==PROF== lines */
            if (strncmp(line, "\"ID\"", 4) != 0)
                continue;
            int m = split(line, f);
            if (m < 0)
                continue;
            c_id = column_of(f, m, "ID"), c_name = column_of(f, m, "Kernel Name");
            c_metric = column_of(f, m, "Metric Name"), c_unit = column_of(f, m, "Metric Unit");
            c_value = column_of(f, m, "Metric Value");
            if (c_id < 0 || c_name < 0 || c_metric < 0 || c_unit < 0 || c_value < 0)
                st = dkv_err_set(err, DKV_EFORMAT, "%s:%ld: CSV header without %s (print it with ncu --csv, the "
                                 "default --page details)", path, lineno,
                                 c_id < 0 ? "\"ID\"" : c_name < 0 ? "\"Kernel Name\"" : c_metric < 0 ? "\"Metric Name\""
                                 : c_unit < 0 ? "\"Metric Unit\"" : "\"Metric Value\"");
            nhead = m;
            continue;
        }
        if (len == 0 || strncmp(line, "==", 2) == 0)
            continue;   /* blank, or ==PROF== / ==WARNING== from ncu */
        int m = split(line, f);
        if (m == -1) {
            st = dkv_err_set(err, DKV_EFORMAT, "%s:%ld: unterminated or malformed quoted field", path, lineno);
            break;
        }
        if (m != nhead) {
            st = dkv_err_set(err, DKV_EFORMAT, "%s:%ld: %d fields, the header has %d", path, lineno, m < 0 ? MAX_FIELDS : m,
                             nhead);
            break;
        }
        int ok;
        double idv = number(f[c_id], &ok);
        if (!ok || isnan(idv) || idv < 0 || idv != floor(idv) || idv >= 0x1p63) {  /* fits uint64 and int64 */
            st = dkv_err_set(err, DKV_EFORMAT, "%s:%ld: ID '%s' is not a launch number", path, lineno, f[c_id]);
            break;
        }
        int which = strcmp(f[c_metric], "dram__bytes_read.sum") == 0    ? 0
                    : strcmp(f[c_metric], "dram__bytes_write.sum") == 0 ? 1
                    : strcmp(f[c_metric], "gpu__time_duration.sum") == 0 ? 2
                                                                          : -1;
        dkv_ncu_kernel *k = kernel_for(&r, (uint64_t)idv, f[c_name], err);
        if (!k) {
            st = DKV_ENOMEM;
            break;
        }
        if (which < 0)
            continue;
        double v = number(f[c_value], &ok);
        if (!ok) {
            st = dkv_err_set(err, DKV_EFORMAT, "%s:%ld: %s value '%s' is not a number", path, lineno, f[c_metric],
                             f[c_value]);
            break;
        }
        double s = unit_scale(f[c_unit], which == 2 ? 't' : 'b');
        if (s == 0 && !isnan(v)) {
            st = dkv_err_set(err, DKV_EFORMAT, "%s:%ld: unknown unit '%s' of %s (expected %s)", path, lineno,
                             f[c_unit], f[c_metric], which == 2 ? "nsecond, usecond, msecond or second"
                                                                : "byte, Kbyte, Mbyte or Gbyte");
            break;
        }
        double *dst = which == 0 ? &k->read_bytes : which == 1 ? &k->write_bytes : &k->time_s;
        *dst = v * s;
    }
    free(line);
    fclose(fp);
    if (st == DKV_OK && nhead == 0)
        st = dkv_err_set(err, DKV_EFORMAT, "%s: no ncu CSV header (a line starting \"ID\",...: run ncu with --csv)",
                         path);
    if (st == DKV_OK) {
        dkv_ncu_classify(r.k, (const char *const *)r.full, r.n);
        for (size_t i = 0; i < r.n; i++)
            free(r.full[i]);
        free(r.full);
        *out = r.k;
        *n = r.n;
        return DKV_OK;
    }
    reader_free(&r);
    return st;
}
