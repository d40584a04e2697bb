/* safetensors.c - the .safetensors reader: header JSON, validation, mapping, dtype conversion. */
#include "io/safetensors.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

typedef struct st_meta {
    char *key, *value;
} st_meta;

struct dkv_st {
    char          *path;
    const uint8_t *map;        /* whole file */
    size_t         map_len;
    const uint8_t *data;       /* data section */
    uint64_t       data_len;
    dkv_st_tensor *t;
    uint32_t       n, cap;
    st_meta       *meta;
    uint32_t       n_meta;
};

/* ------------------------------------------------------------------ header JSON */

typedef struct jcur {
    const char *p, *end, *start;
    const char *path;
    dkv_err    *err;
} jcur;

static dkv_status jfail(jcur *c, const char *what)
{
    return dkv_err_set(c->err, DKV_EFORMAT, "%s: header JSON: %s at header byte %ld", c->path, what,
                       (long)(c->p - c->start));
}

static void ws(jcur *c)
{
    while (c->p < c->end && (*c->p == ' ' || *c->p == '\t' || *c->p == '\n' || *c->p == '\r'))
        c->p++;
}

static int eat(jcur *c, char ch)
{
    ws(c);
    if (c->p < c->end && *c->p == ch) {
        c->p++;
        return 1;
    }
    return 0;
}

/* A JSON string into a new buffer (escapes decoded; \u kept as UTF-8).  *out is NULL on failure,
 * so a caller may free it either way. */
static dkv_status jstring(jcur *c, char **out)
{
    *out = NULL;
    ws(c);
    if (c->p >= c->end || *c->p != '"')
        return jfail(c, "expected a string");
    c->p++;
    size_t cap = 16, n = 0;
    char *s = malloc(cap);
    if (!s)
        return dkv_err_set(c->err, DKV_ENOMEM, "%s: out of memory", c->path);
    for (;;) {
        if (c->p >= c->end) {
            free(s);
            return jfail(c, "unterminated string");
        }
        unsigned char ch = (unsigned char)*c->p++;
        if (ch == '"')
            break;
        uint32_t cp = ch;
        if (ch == '\\') {
            if (c->p >= c->end) {
                free(s);
                return jfail(c, "unterminated escape");
            }
            char e = *c->p++;
            switch (e) {
            case '"': case '\\': case '/': cp = (uint32_t)e; break;
            case 'b': cp = '\b'; break;
            case 'f': cp = '\f'; break;
            case 'n': cp = '\n'; break;
            case 'r': cp = '\r'; break;
            case 't': cp = '\t'; break;
            case 'u': {
                if (c->end - c->p < 4) {
                    free(s);
                    return jfail(c, "short \\u escape");
                }
                char hex[5] = {c->p[0], c->p[1], c->p[2], c->p[3], 0};
                char *endp;
                cp = (uint32_t)strtoul(hex, &endp, 16);
                if (*endp) {
                    free(s);
                    return jfail(c, "bad \\u escape");
                }
                c->p += 4;
                break;
            }
            default:
                free(s);
                return jfail(c, "bad escape");
            }
        }
        if (n + 4 >= cap) {
            char *t = realloc(s, cap *= 2);
            if (!t) {
                free(s);
                return dkv_err_set(c->err, DKV_ENOMEM, "%s: out of memory", c->path);
            }
            s = t;
        }
        if (cp < 0x80 || ch != '\\')
            s[n++] = (char)cp;
        else if (cp < 0x800) {
            s[n++] = (char)(0xc0 | (cp >> 6));
            s[n++] = (char)(0x80 | (cp & 0x3f));
        } else {
            s[n++] = (char)(0xe0 | (cp >> 12));
            s[n++] = (char)(0x80 | ((cp >> 6) & 0x3f));
            s[n++] = (char)(0x80 | (cp & 0x3f));
        }
    }
    s[n] = 0;
    *out = s;
    return DKV_OK;
}

/* A non-negative integer (no sign, fraction or exponent). */
static int juint(jcur *c, uint64_t *out)
{
    ws(c);
    if (c->p >= c->end || *c->p < '0' || *c->p > '9')
        return 0;
    uint64_t v = 0;
    while (c->p < c->end && *c->p >= '0' && *c->p <= '9') {
        uint64_t d = (uint64_t)(*c->p++ - '0');
        if (v > (UINT64_MAX - d) / 10)
            return 0;
        v = v * 10 + d;
    }
    if (c->p < c->end && (*c->p == '.' || *c->p == 'e' || *c->p == 'E'))
        return 0;
    *out = v;
    return 1;
}

/* Skips any JSON value (for fields dkv does not use). */
static dkv_status jskip(jcur *c, int depth)
{
    ws(c);
    if (depth > 64 || c->p >= c->end)
        return jfail(c, "value expected");
    char ch = *c->p;
    if (ch == '"') {
        char *s;
        dkv_status st = jstring(c, &s);
        free(s);
        return st;
    }
    if (ch == '{' || ch == '[') {
        char close = ch == '{' ? '}' : ']';
        c->p++;
        if (eat(c, close))
            return DKV_OK;
        do {
            if (ch == '{') {
                char *k;
                dkv_status st = jstring(c, &k);
                free(k);
                if (st != DKV_OK)
                    return st;
                if (!eat(c, ':'))
                    return jfail(c, "expected ':'");
            }
            dkv_status st = jskip(c, depth + 1);
            if (st != DKV_OK)
                return st;
        } while (eat(c, ','));
        return eat(c, close) ? DKV_OK : jfail(c, "unterminated object or array");
    }
    const char *start = c->p;
    while (c->p < c->end && strchr(",}] \t\r\n", *c->p) == NULL)
        c->p++;
    return c->p > start ? DKV_OK : jfail(c, "value expected");
}

/* ------------------------------------------------------------------ tensors */

static const struct {
    const char  *name;
    uint32_t     bytes;
    dkv_st_dtype dt;
} DTYPES[] = {
    {"F32", 4, DKV_ST_F32},  {"F16", 2, DKV_ST_F16},  {"BF16", 2, DKV_ST_BF16},
    {"F64", 8, DKV_ST_OTHER}, {"I64", 8, DKV_ST_OTHER}, {"U64", 8, DKV_ST_OTHER},
    {"I32", 4, DKV_ST_OTHER}, {"U32", 4, DKV_ST_OTHER}, {"I16", 2, DKV_ST_OTHER},
    {"U16", 2, DKV_ST_OTHER}, {"I8", 1, DKV_ST_OTHER},  {"U8", 1, DKV_ST_OTHER},
    {"BOOL", 1, DKV_ST_OTHER}, {"F8_E4M3", 1, DKV_ST_OTHER}, {"F8_E5M2", 1, DKV_ST_OTHER},
};

static dkv_status tensor_entry(dkv_st *st, jcur *c, char *name)
{
    dkv_err *err = c->err;
    if (st->n == st->cap) {
        uint32_t cap = st->cap ? st->cap * 2 : 64;
        dkv_st_tensor *t = realloc(st->t, cap * sizeof *t);
        if (!t) {
            free(name);
            return dkv_err_set(err, DKV_ENOMEM, "%s: out of memory", st->path);
        }
        st->t = t, st->cap = cap;
    }
    dkv_st_tensor *t = &st->t[st->n++];
    memset(t, 0, sizeof *t);
    t->name = name;
    int have_dtype = 0, have_shape = 0, have_off = 0;
    if (!eat(c, '{'))
        return dkv_err_set(err, DKV_EFORMAT, "%s: tensor '%s': expected an object", st->path, name);
    if (!eat(c, '}')) {
        do {
            char *key;
            dkv_status s = jstring(c, &key);
            if (s != DKV_OK)
                return s;
            if (!eat(c, ':')) {
                free(key);
                return jfail(c, "expected ':'");
            }
            if (strcmp(key, "dtype") == 0) {
                char *v;
                if ((s = jstring(c, &v)) != DKV_OK) {
                    free(key);
                    return s;
                }
                size_t i = 0, nd = sizeof DTYPES / sizeof DTYPES[0];
                while (i < nd && strcmp(DTYPES[i].name, v) != 0)
                    i++;
                if (i == nd) {
                    dkv_err_set(err, DKV_EFORMAT, "%s: tensor '%s': field 'dtype': unknown dtype '%s'", st->path,
                                name, v);
                    free(v);
                    free(key);
                    return DKV_EFORMAT;
                }
                snprintf(t->dtype_name, sizeof t->dtype_name, "%s", v);
                t->dtype = DTYPES[i].dt, t->elem_bytes = DTYPES[i].bytes;
                free(v);
                have_dtype = 1;
            } else if (strcmp(key, "shape") == 0 || strcmp(key, "data_offsets") == 0) {
                int is_shape = key[0] == 's';
                uint64_t vals[DKV_ST_MAX_DIMS];
                uint32_t nv = 0;
                if (!eat(c, '[')) {
                    dkv_err_set(err, DKV_EFORMAT, "%s: tensor '%s': field '%s': expected an array", st->path,
                                name, key);
                    free(key);
                    return DKV_EFORMAT;
                }
                if (!eat(c, ']')) {
                    do {
                        uint64_t v;
                        if (nv == DKV_ST_MAX_DIMS || !juint(c, &v)) {
                            dkv_err_set(err, DKV_EFORMAT, "%s: tensor '%s': field '%s': expected at most %d "
                                        "non-negative integers", st->path, name, key, DKV_ST_MAX_DIMS);
                            free(key);
                            return DKV_EFORMAT;
                        }
                        vals[nv++] = v;
                    } while (eat(c, ','));
                    if (!eat(c, ']')) {
                        free(key);
                        return jfail(c, "expected ']'");
                    }
                }
                if (is_shape) {
                    t->ndim = nv;
                    memcpy(t->shape, vals, nv * sizeof vals[0]);
                    have_shape = 1;
                } else {
                    if (nv != 2) {
                        dkv_err_set(err, DKV_EFORMAT, "%s: tensor '%s': field 'data_offsets': expected "
                                    "[begin, end], got %u numbers", st->path, name, nv);
                        free(key);
                        return DKV_EFORMAT;
                    }
                    t->begin = vals[0], t->end = vals[1];
                    have_off = 1;
                }
            } else if ((s = jskip(c, 0)) != DKV_OK) {
                free(key);
                return s;
            }
            free(key);
        } while (eat(c, ','));
        if (!eat(c, '}'))
            return jfail(c, "expected '}' after a tensor entry");
    }
    const char *missing = !have_dtype ? "dtype" : !have_shape ? "shape" : !have_off ? "data_offsets" : NULL;
    if (missing)
        return dkv_err_set(err, DKV_EFORMAT, "%s: tensor '%s': field '%s' is missing", st->path, name, missing);
    uint64_t numel = 1;
    for (uint32_t i = 0; i < t->ndim; i++) {
        if (t->shape[i] && numel > UINT64_MAX / t->shape[i])
            return dkv_err_set(err, DKV_EFORMAT, "%s: tensor '%s': field 'shape' overflows", st->path, name);
        numel *= t->shape[i];
    }
    t->numel = numel;
    if (t->end < t->begin)
        return dkv_err_set(err, DKV_EFORMAT, "%s: tensor '%s': field 'data_offsets': end %llu < begin %llu",
                           st->path, name, (unsigned long long)t->end, (unsigned long long)t->begin);
    if (numel > UINT64_MAX / t->elem_bytes || t->end - t->begin != numel * t->elem_bytes)
        return dkv_err_set(err, DKV_EFORMAT, "%s: tensor '%s': field 'data_offsets': [%llu, %llu) holds %llu "
                           "bytes but shape x %s needs %llu", st->path, name, (unsigned long long)t->begin,
                           (unsigned long long)t->end, (unsigned long long)(t->end - t->begin), t->dtype_name,
                           (unsigned long long)(numel * t->elem_bytes));
    return DKV_OK;
}

static dkv_status metadata(dkv_st *st, jcur *c)
{
    if (!eat(c, '{'))
        return dkv_err_set(c->err, DKV_EFORMAT, "%s: '__metadata__' must be an object", st->path);
    if (eat(c, '}'))
        return DKV_OK;
    do {
        char *k, *v;
        dkv_status s = jstring(c, &k);
        if (s != DKV_OK)
            return s;
        if (!eat(c, ':')) {
            free(k);
            return jfail(c, "expected ':'");
        }
        if ((s = jstring(c, &v)) != DKV_OK) {
            dkv_err_prefix(c->err, "'__metadata__' value of '%s' must be a string", k);
            free(k);
            return s;
        }
        st_meta *m = realloc(st->meta, (st->n_meta + 1) * sizeof *m);
        if (!m) {
            free(k);
            free(v);
            return dkv_err_set(c->err, DKV_ENOMEM, "%s: out of memory", st->path);
        }
        st->meta = m;
        st->meta[st->n_meta].key = k;
        st->meta[st->n_meta++].value = v;
    } while (eat(c, ','));
    return eat(c, '}') ? DKV_OK : jfail(c, "expected '}' after '__metadata__'");
}

static int by_begin(const void *a, const void *b)
{
    const dkv_st_tensor *x = *(dkv_st_tensor *const *)a, *y = *(dkv_st_tensor *const *)b;
    return x->begin < y->begin ? -1 : x->begin > y->begin ? 1 : (x->end > y->end) - (x->end < y->end);
}

static dkv_status check_layout(dkv_st *st, dkv_err *err)
{
    for (uint32_t i = 0; i < st->n; i++) {
        const dkv_st_tensor *t = &st->t[i];
        if (t->end > st->data_len)
            return dkv_err_set(err, DKV_EFORMAT, "%s: tensor '%s': field 'data_offsets': [%llu, %llu) runs past "
                               "the end of the data (%llu bytes): file truncated?", st->path, t->name,
                               (unsigned long long)t->begin, (unsigned long long)t->end,
                               (unsigned long long)st->data_len);
        for (uint32_t j = 0; j < i; j++)
            if (strcmp(st->t[j].name, t->name) == 0)
                return dkv_err_set(err, DKV_EFORMAT, "%s: tensor '%s' appears twice in the header", st->path,
                                   t->name);
    }
    if (st->n < 2)
        return DKV_OK;
    dkv_st_tensor **ord = malloc(st->n * sizeof *ord);
    if (!ord)
        return dkv_err_set(err, DKV_ENOMEM, "%s: out of memory", st->path);
    for (uint32_t i = 0; i < st->n; i++)
        ord[i] = &st->t[i];
    qsort(ord, st->n, sizeof *ord, by_begin);
    dkv_status s = DKV_OK;
    for (uint32_t i = 1; i < st->n && s == DKV_OK; i++)
        if (ord[i]->begin < ord[i - 1]->end && ord[i]->end > ord[i]->begin)
            s = dkv_err_set(err, DKV_EFORMAT, "%s: tensors '%s' [%llu, %llu) and '%s' [%llu, %llu) overlap",
                            st->path, ord[i - 1]->name, (unsigned long long)ord[i - 1]->begin,
                            (unsigned long long)ord[i - 1]->end, ord[i]->name, (unsigned long long)ord[i]->begin,
                            (unsigned long long)ord[i]->end);
    free(ord);
    return s;
}

static dkv_status parse_header(dkv_st *st, const char *hdr, uint64_t len, dkv_err *err)
{
    jcur c = {hdr, hdr + len, hdr, st->path, err};
    if (!eat(&c, '{'))
        return dkv_err_set(err, DKV_EFORMAT, "%s: header is not a JSON object", st->path);
    if (!eat(&c, '}')) {
        do {
            char *key;
            dkv_status s = jstring(&c, &key);
            if (s != DKV_OK)
                return s;
            if (!eat(&c, ':')) {
                free(key);
                return jfail(&c, "expected ':'");
            }
            if (strcmp(key, "__metadata__") == 0) {
                free(key);
                s = metadata(st, &c);
            } else {
                s = tensor_entry(st, &c, key);   /* takes key */
            }
            if (s != DKV_OK)
                return s;
        } while (eat(&c, ','));
        if (!eat(&c, '}'))
            return jfail(&c, "expected '}' at the end of the header");
    }
    ws(&c);
    if (c.p != c.end)
        return jfail(&c, "trailing bytes after the header object");
    return check_layout(st, err);
}

/* ------------------------------------------------------------------ open / close / access */

dkv_status dkv_st_open(const char *path, dkv_st **out, dkv_err *err)
{
    *out = NULL;
    dkv_st *st = calloc(1, sizeof *st);
    if (!st || !(st->path = strdup(path))) {
        free(st);
        return dkv_err_set(err, DKV_ENOMEM, "%s: out of memory", path);
    }
    dkv_status s = DKV_OK;
    int fd = open(path, O_RDONLY);
    struct stat sb;
    if (fd < 0 || fstat(fd, &sb) != 0) {
        s = dkv_err_set(err, errno == ENOENT ? DKV_ENOENT : DKV_EIO, "%s: cannot open: %s", path, strerror(errno));
        goto done;
    }
    if (sb.st_size < 8) {
        s = dkv_err_set(err, DKV_EFORMAT, "%s: %lld bytes: too short for a safetensors file (truncated?)", path,
                        (long long)sb.st_size);
        goto done;
    }
    st->map_len = (size_t)sb.st_size;
    void *m = mmap(NULL, st->map_len, PROT_READ, MAP_PRIVATE, fd, 0);
    if (m == MAP_FAILED) {
        s = dkv_err_set(err, DKV_EIO, "%s: mmap failed: %s", path, strerror(errno));
        st->map_len = 0;
        goto done;
    }
    st->map = m;
    uint64_t n = 0;
    for (int i = 7; i >= 0; i--)
        n = (n << 8) | st->map[i];
    if (n > DKV_ST_MAX_HEADER || n > st->map_len - 8) {
        s = dkv_err_set(err, DKV_EFORMAT, "%s: header length %llu does not fit the file (%zu bytes after the "
                        "length field%s)", path, (unsigned long long)n, st->map_len - 8,
                        n > DKV_ST_MAX_HEADER ? "; limit 100 MiB" : "; truncated?");
        goto done;
    }
    st->data = st->map + 8 + n;
    st->data_len = st->map_len - 8 - n;
    s = parse_header(st, (const char *)st->map + 8, n, err);
done:
    if (fd >= 0)
        close(fd);
    if (s != DKV_OK)
        dkv_st_close(st);
    else
        *out = st;
    return s;
}

void dkv_st_close(dkv_st *st)
{
    if (!st)
        return;
    if (st->map)
        munmap((void *)st->map, st->map_len);
    for (uint32_t i = 0; i < st->n; i++)
        free((char *)st->t[i].name);
    for (uint32_t i = 0; i < st->n_meta; i++) {
        free(st->meta[i].key);
        free(st->meta[i].value);
    }
    free(st->meta);
    free(st->t);
    free(st->path);
    free(st);
}

uint32_t dkv_st_count(const dkv_st *st) { return st->n; }

const dkv_st_tensor *dkv_st_at(const dkv_st *st, uint32_t i) { return i < st->n ? &st->t[i] : NULL; }

const dkv_st_tensor *dkv_st_find(const dkv_st *st, const char *name)
{
    for (uint32_t i = 0; i < st->n; i++)
        if (strcmp(st->t[i].name, name) == 0)
            return &st->t[i];
    return NULL;
}

const char *dkv_st_metadata(const dkv_st *st, const char *key)
{
    for (uint32_t i = 0; i < st->n_meta; i++)
        if (strcmp(st->meta[i].key, key) == 0)
            return st->meta[i].value;
    return NULL;
}

const void *dkv_st_data(const dkv_st *st, const dkv_st_tensor *t) { return st->data + t->begin; }

dkv_status dkv_st_read_f32(const dkv_st *st, const dkv_st_tensor *t, float *out, uint64_t n, dkv_err *err)
{
    if (n != t->numel) {
        char shape[160] = "";
        for (uint32_t i = 0, o = 0; i < t->ndim && o < sizeof shape - 24; i++)
            o += (uint32_t)snprintf(shape + o, sizeof shape - o, "%s%llu", i ? ", " : "",
                                    (unsigned long long)t->shape[i]);
        return dkv_err_set(err, DKV_EINVAL, "%s: tensor '%s': shape [%s] has %llu elements, expected %llu",
                           st->path, t->name, shape, (unsigned long long)t->numel, (unsigned long long)n);
    }
    const uint8_t *p = st->data + t->begin;
    switch (t->dtype) {
    case DKV_ST_F32:   /* little-endian host (x86-64, the only target) */
        memcpy(out, p, n * 4);
        return DKV_OK;
    case DKV_ST_BF16:
    case DKV_ST_F16:
        for (uint64_t i = 0; i < n; i++) {
            uint16_t h = (uint16_t)(p[2 * i] | (p[2 * i + 1] << 8));
            out[i] = t->dtype == DKV_ST_BF16 ? dkv_bf16_to_f32(h) : dkv_f16_to_f32(h);
        }
        return DKV_OK;
    case DKV_ST_OTHER:
        break;
    }
    return dkv_err_set(err, DKV_EUNSUPPORTED, "%s: tensor '%s': dtype %s cannot be read as float32 (F32, F16, "
                       "BF16 only)", st->path, t->name, t->dtype_name);
}
