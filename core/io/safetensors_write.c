/* safetensors_write.c - number conversions (f32 <-> bf16 / f16) and the .safetensors writer. */
#include "io/safetensors.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------ number conversions */

float dkv_bf16_to_f32(uint16_t h)
{
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
}

uint16_t dkv_f32_to_bf16(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    if ((u & 0x7f800000u) == 0x7f800000u && (u & 0x007fffffu))
        return (uint16_t)((u >> 16) | 0x40);   /* quiet NaN */
    u += 0x7fffu + ((u >> 16) & 1u);           /* round to nearest even */
    return (uint16_t)(u >> 16);
}

float dkv_f16_to_f32(uint16_t h)
{
    uint32_t s = (uint32_t)(h >> 15) << 31, e = (h >> 10) & 0x1f, m = h & 0x3ff, u;
    if (e == 0x1f)
        u = s | 0x7f800000u | (m << 13);
    else if (e)
        u = s | ((e + 112) << 23) | (m << 13);
    else if (m) {   /* subnormal: normalise */
        e = 113;
        while (!(m & 0x400)) {
            m <<= 1;
            e--;
        }
        u = s | (e << 23) | ((m & 0x3ff) << 13);
    } else
        u = s;
    float f;
    memcpy(&f, &u, 4);
    return f;
}

uint16_t dkv_f32_to_f16(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    uint16_t s = (uint16_t)((u >> 16) & 0x8000);
    uint32_t a = u & 0x7fffffffu;
    if (a >= 0x7f800000u)
        return s | 0x7c00 | (a > 0x7f800000u ? 0x200 : 0);
    if (a >= 0x477ff000u)                      /* rounds to >= 65520: infinity */
        return s | 0x7c00;
    if (a < 0x38800000u) {                     /* below the smallest normal half: subnormal */
        float v;
        memcpy(&v, &a, 4);
        return s | (uint16_t)lrintf(v * 16777216.0f);   /* units of 2^-24, nearest even */
    }
    uint32_t e = (a >> 23) - 112, m = a & 0x7fffff;
    uint32_t r = (e << 10) | (m >> 13);
    uint32_t rest = m & 0x1fff;
    if (rest > 0x1000 || (rest == 0x1000 && (r & 1)))
        r++;
    return s | (uint16_t)r;
}

/* ------------------------------------------------------------------ writer */

typedef struct wt {
    char    *name;
    char     dtype[12];
    uint32_t ndim;
    uint64_t shape[DKV_ST_MAX_DIMS];
    uint8_t *bytes;
    size_t   nbytes;
} wt;

struct dkv_st_writer {
    wt      *t;
    uint32_t n;
    char   **meta;   /* key, value pairs */
    uint32_t n_meta;
};

dkv_status dkv_st_writer_new(dkv_st_writer **out, dkv_err *err)
{
    *out = calloc(1, sizeof **out);
    return *out ? DKV_OK : dkv_err_set(err, DKV_ENOMEM, "safetensors writer: out of memory");
}

void dkv_st_writer_free(dkv_st_writer *w)
{
    if (!w)
        return;
    for (uint32_t i = 0; i < w->n; i++) {
        free(w->t[i].name);
        free(w->t[i].bytes);
    }
    for (uint32_t i = 0; i < 2 * w->n_meta; i++)
        free(w->meta[i]);
    free(w->meta);
    free(w->t);
    free(w);
}

dkv_status dkv_st_writer_add_raw(dkv_st_writer *w, const char *name, const char *dtype_name, uint32_t ndim,
                                 const uint64_t *shape, const void *data, size_t nbytes, dkv_err *err)
{
    if (ndim > DKV_ST_MAX_DIMS || strlen(dtype_name) >= sizeof w->t->dtype || strchr(name, '"') ||
        strchr(name, '\\'))
        return dkv_err_set(err, DKV_EINVAL, "safetensors writer: tensor '%s': bad name, dtype or rank", name);
    wt *t = realloc(w->t, (w->n + 1) * sizeof *t);
    if (!t)
        return dkv_err_set(err, DKV_ENOMEM, "safetensors writer: out of memory");
    w->t = t;
    t = &w->t[w->n];
    memset(t, 0, sizeof *t);
    t->name = strdup(name);
    t->bytes = malloc(nbytes ? nbytes : 1);
    if (!t->name || !t->bytes) {
        free(t->name);
        free(t->bytes);
        return dkv_err_set(err, DKV_ENOMEM, "safetensors writer: out of memory");
    }
    snprintf(t->dtype, sizeof t->dtype, "%s", dtype_name);
    t->ndim = ndim;
    memcpy(t->shape, shape, ndim * sizeof *shape);
    if (nbytes)
        memcpy(t->bytes, data, nbytes);
    t->nbytes = nbytes;
    w->n++;
    return DKV_OK;
}

dkv_status dkv_st_writer_add_f32(dkv_st_writer *w, const char *name, dkv_st_dtype dtype, uint32_t ndim,
                                 const uint64_t *shape, const float *data, dkv_err *err)
{
    uint64_t n = 1;
    for (uint32_t i = 0; i < ndim && i < DKV_ST_MAX_DIMS; i++)
        n *= shape[i];
    if (dtype == DKV_ST_F32)
        return dkv_st_writer_add_raw(w, name, "F32", ndim, shape, data, n * 4, err);
    if (dtype != DKV_ST_BF16 && dtype != DKV_ST_F16)
        return dkv_err_set(err, DKV_EINVAL, "safetensors writer: tensor '%s': dtype must be F32, F16 or BF16", name);
    uint8_t *b = malloc(n * 2 + 1);
    if (!b)
        return dkv_err_set(err, DKV_ENOMEM, "safetensors writer: out of memory");
    for (uint64_t i = 0; i < n; i++) {
        uint16_t h = dtype == DKV_ST_BF16 ? dkv_f32_to_bf16(data[i]) : dkv_f32_to_f16(data[i]);
        b[2 * i] = (uint8_t)(h & 0xff);
        b[2 * i + 1] = (uint8_t)(h >> 8);
    }
    dkv_status s = dkv_st_writer_add_raw(w, name, dtype == DKV_ST_BF16 ? "BF16" : "F16", ndim, shape, b, n * 2, err);
    free(b);
    return s;
}

dkv_status dkv_st_writer_meta(dkv_st_writer *w, const char *key, const char *value, dkv_err *err)
{
    if (strpbrk(key, "\"\\") || strpbrk(value, "\"\\"))
        return dkv_err_set(err, DKV_EINVAL, "safetensors writer: metadata '%s': quotes and backslashes unsupported",
                           key);
    char **m = realloc(w->meta, 2 * (w->n_meta + 1) * sizeof *m);
    if (!m)
        return dkv_err_set(err, DKV_ENOMEM, "safetensors writer: out of memory");
    w->meta = m;
    m[2 * w->n_meta] = strdup(key);
    m[2 * w->n_meta + 1] = strdup(value);
    w->n_meta++;
    return m[2 * w->n_meta - 2] && m[2 * w->n_meta - 1] ? DKV_OK
                                                         : dkv_err_set(err, DKV_ENOMEM, "safetensors writer: out of memory");
}

dkv_status dkv_st_writer_write(const dkv_st_writer *w, const char *path, dkv_err *err)
{
    char *hdr = NULL;
    size_t hlen = 0;
    FILE *ms = open_memstream(&hdr, &hlen);
    if (!ms)
        return dkv_err_set(err, DKV_ENOMEM, "safetensors writer: out of memory");
    fputc('{', ms);
    int first = 1;
    if (w->n_meta) {
        fputs("\"__metadata__\":{", ms);
        for (uint32_t i = 0; i < w->n_meta; i++)
            fprintf(ms, "%s\"%s\":\"%s\"", i ? "," : "", w->meta[2 * i], w->meta[2 * i + 1]);
        fputc('}', ms);
        first = 0;
    }
    uint64_t off = 0;
    for (uint32_t i = 0; i < w->n; i++) {
        const wt *t = &w->t[i];
        fprintf(ms, "%s\"%s\":{\"dtype\":\"%s\",\"shape\":[", first ? "" : ",", t->name, t->dtype);
        for (uint32_t d = 0; d < t->ndim; d++)
            fprintf(ms, "%s%llu", d ? "," : "", (unsigned long long)t->shape[d]);
        fprintf(ms, "],\"data_offsets\":[%llu,%llu]}", (unsigned long long)off,
                (unsigned long long)(off + t->nbytes));
        off += t->nbytes;
        first = 0;
    }
    fputc('}', ms);
    while ((ftell(ms) + 8) % 8)   /* data starts 8-byte aligned, as the reference writer does */
        fputc(' ', ms);
    fclose(ms);
    dkv_status s = DKV_OK;
    FILE *f = fopen(path, "wb");
    if (!f) {
        s = dkv_err_set(err, DKV_EIO, "%s: cannot create: %s", path, strerror(errno));
        goto out;
    }
    uint8_t len[8];
    for (int i = 0; i < 8; i++)
        len[i] = (uint8_t)((uint64_t)hlen >> (8 * i));
    int ok = fwrite(len, 1, 8, f) == 8 && fwrite(hdr, 1, hlen, f) == hlen;
    for (uint32_t i = 0; ok && i < w->n; i++)
        ok = fwrite(w->t[i].bytes, 1, w->t[i].nbytes, f) == w->t[i].nbytes;
    if (fclose(f) != 0 || !ok)
        s = dkv_err_set(err, DKV_EIO, "%s: write failed: %s", path, strerror(errno));
out:
    free(hdr);
    return s;
}
