/* ref_ops.c - the operations of the reference forward, one function each (see ref.h). */
#include "ref/ref.h"

#include "decode/score.h"

#include <assert.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

void dkv_ref_embedding(float *out, const uint32_t *tokens, const float *wte, uint32_t T, uint32_t C)
{
    for (uint32_t t = 0; t < T; t++)
        memcpy(out + (size_t)t * C, wte + (size_t)tokens[t] * C, C * sizeof(float));
}

void dkv_ref_rmsnorm(float *out, const float *in, const float *w, uint32_t T, uint32_t C, float eps)
{
    for (uint32_t t = 0; t < T; t++) {
        const float *x = in + (size_t)t * C;
        float *y = out + (size_t)t * C;
        double ss = 0;
        for (uint32_t i = 0; i < C; i++)
            ss += (double)x[i] * x[i];
        double r = 1.0 / sqrt(ss / C + eps);
        for (uint32_t i = 0; i < C; i++)
            y[i] = (float)(x[i] * r * w[i]);
    }
}

void dkv_ref_matmul(float *out, const float *in, const float *w, const float *bias, uint32_t T,
                    uint32_t C, uint32_t OC)
{
    for (uint32_t t = 0; t < T; t++) {
        const float *x = in + (size_t)t * C;
        float *y = out + (size_t)t * OC;
        for (uint32_t o = 0; o < OC; o++) {
            const float *wr = w + (size_t)o * C;
            double acc = bias ? bias[o] : 0.0;
            for (uint32_t i = 0; i < C; i++)
                acc += (double)x[i] * wr[i];
            y[o] = (float)acc;
        }
    }
}

void dkv_ref_rope(float *x, const uint32_t *pos, uint32_t T, uint32_t n_heads, uint32_t head_dim,
                  double theta)
{
    uint32_t half = head_dim / 2;
    for (uint32_t t = 0; t < T; t++) {
        double p = pos ? pos[t] : t;
        for (uint32_t i = 0; i < half; i++) {
            double a = p * pow(theta, -2.0 * i / head_dim);
            double c = cos(a), s = sin(a);
            for (uint32_t h = 0; h < n_heads; h++) {
                float *v = x + (size_t)t * n_heads * head_dim + (size_t)h * head_dim;
                double x1 = v[i], x2 = v[i + half];
                v[i] = (float)(x1 * c - x2 * s);
                v[i + half] = (float)(x2 * c + x1 * s);
            }
        }
    }
}

static double dot(const float *a, const float *b, uint32_t n)
{
    double s = 0;
    for (uint32_t i = 0; i < n; i++)
        s += (double)a[i] * b[i];
    return s;
}

/* max_j q.k_j * scale over the Tk keys of one head (strided rows). */
static double max_score(const float *q, const float *k, size_t ks, uint32_t Tk, uint32_t D, double scale)
{
    double m = -INFINITY;
    for (uint32_t j = 0; j < Tk; j++) {
        double s = dot(q, k + j * ks, D) * scale;
        if (s > m)
            m = s;
    }
    return m;
}

void dkv_ref_attention(float *out, const float *q, const float *k, const float *v, uint32_t Tq,
                       uint32_t Tk, uint32_t n_heads, uint32_t n_kv_heads, uint32_t head_dim)
{
    uint32_t D = head_dim, group = n_heads / n_kv_heads;
    size_t qs = (size_t)n_heads * D, ks = (size_t)n_kv_heads * D;
    double scale = 1.0 / sqrt((double)D);
    double acc[1024];   /* LLaDA/Dream: D = 128 */
    assert(D <= 1024 && n_heads % n_kv_heads == 0);
    for (uint32_t t = 0; t < Tq; t++)
        for (uint32_t h = 0; h < n_heads; h++) {
            const float *qh = q + t * qs + (size_t)h * D;
            const float *kh = k + (size_t)(h / group) * D, *vh = v + (size_t)(h / group) * D;
            double m = max_score(qh, kh, ks, Tk, D, scale), z = 0;
            for (uint32_t d = 0; d < D; d++)
                acc[d] = 0;
            for (uint32_t j = 0; j < Tk; j++) {   /* two passes: no scratch of Tk */
                double p = exp(dot(qh, kh + j * ks, D) * scale - m);
                z += p;
                for (uint32_t d = 0; d < D; d++)
                    acc[d] += p * vh[j * ks + d];
            }
            float *o = out + t * qs + (size_t)h * D;
            for (uint32_t d = 0; d < D; d++)
                o[d] = (float)(acc[d] / z);
        }
}

void dkv_ref_attention_scores(float *score, const float *q, const float *k, uint32_t Tq, uint32_t Tk,
                              uint32_t n_heads, uint32_t n_kv_heads, uint32_t head_dim)
{
    uint32_t D = head_dim, group = n_heads / n_kv_heads;
    size_t qs = (size_t)n_heads * D, ks = (size_t)n_kv_heads * D;
    double scale = 1.0 / sqrt((double)D);
    for (uint32_t g = 0; g < n_kv_heads; g++) {
        const float *kh = k + (size_t)g * D;
        for (uint32_t j = 0; j < Tk; j++)
            score[(size_t)g * Tk + j] = 0;
        for (uint32_t t = 0; t < Tq; t++)
            for (uint32_t h = g * group; h < (g + 1) * group; h++) {
                const float *qh = q + t * qs + (size_t)h * D;
                double m = max_score(qh, kh, ks, Tk, D, scale), z = 0;
                for (uint32_t j = 0; j < Tk; j++)
                    z += exp(dot(qh, kh + j * ks, D) * scale - m);
                for (uint32_t j = 0; j < Tk; j++)
                    score[(size_t)g * Tk + j] += (float)(exp(dot(qh, kh + j * ks, D) * scale - m) / z);
            }
    }
}

void dkv_ref_swiglu(float *out, const float *gate, const float *up, uint32_t T, uint32_t F)
{
    for (size_t i = 0; i < (size_t)T * F; i++) {
        double g = gate[i];
        out[i] = (float)(g / (1.0 + exp(-g)) * up[i]);
    }
}

void dkv_ref_residual(float *x, const float *d, size_t n)
{
    for (size_t i = 0; i < n; i++)
        x[i] += d[i];
}

dkv_status dkv_ref_lm_head_argmax(uint32_t *argmax, float *conf, const float *in, const float *w,
                                  uint32_t T, uint32_t C, uint32_t V, uint32_t chunk_rows, dkv_err *err)
{
    if (T == 0)
        return DKV_OK;
    uint32_t chunk = chunk_rows == 0 || chunk_rows > T ? T : chunk_rows;
    float *logits = malloc((size_t)chunk * V * sizeof(float));
    if (!logits)
        return dkv_err_set(err, DKV_ENOMEM, "ref lm_head: cannot allocate %u x %u logits", chunk, V);
    for (uint32_t t0 = 0; t0 < T; t0 += chunk) {
        uint32_t n = T - t0 < chunk ? T - t0 : chunk;
        dkv_ref_matmul(logits, in + (size_t)t0 * C, w, NULL, n, C, V);
        for (uint32_t r = 0; r < n; r++)   /* first maximum, softmax probability of it (decode/score.h) */
            dkv_score_row(logits + (size_t)r * V, V, argmax ? &argmax[t0 + r] : NULL, conf ? &conf[t0 + r] : NULL,
                          NULL);
    }
    free(logits);
    return DKV_OK;
}

void dkv_ref_topk(uint32_t *idx, const float *score, uint32_t n, uint32_t k)
{
    /* Selection by rank: element i is in when fewer than k elements beat it (larger, or equal
     * with a lower index).  O(n^2), fine for reference sizes; output is in ascending order. */
    uint32_t m = 0;
    for (uint32_t i = 0; i < n && m < k; i++) {
        uint32_t beat = 0;
        for (uint32_t j = 0; j < n && beat < k; j++)
            if (score[j] > score[i] || (score[j] == score[i] && j < i))
                beat++;
        if (beat < k)
            idx[m++] = i;
    }
}

void dkv_ref_pack_heads(float *out, const float *src, const uint32_t *idx, uint32_t T, uint32_t n_kv_heads,
                        uint32_t D, uint32_t k, bool shared)
{
    (void)T;
    for (uint32_t g = 0; g < n_kv_heads; g++)
        for (uint32_t j = 0; j < k; j++) {
            uint32_t t = idx[(shared ? 0 : (size_t)g * k) + j];
            memcpy(out + ((size_t)g * k + j) * D, src + (size_t)t * n_kv_heads * D + (size_t)g * D,
                   D * sizeof(float));
        }
}
