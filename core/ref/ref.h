/* ref.h - CPU float32 reference of the LLaDA / Dream dLLM forward (the golden model for cuda/).
 *
 * Small shapes, plain loops, no threads.  Storage is float32; every dot product and every
 * reduction accumulates in double, so the reference is more exact than any kernel it checks.
 *
 * Layouts (row-major, llm.c style):
 *   activations  (T, C)            one row per token
 *   q            (T, n_heads * D)  head h in columns [h*D, (h+1)*D)
 *   k, v         (T, n_kv_heads * D)
 *   weights      (out, in)         PyTorch nn.Linear layout: y = x W^T + b
 *   KV cache     per layer, per KV head: [head, token, feature] = (count, D) rows, each row
 *                tagged with the canvas position of its token
 *
 * The architecture (LLaDA-8B, checked against modeling_llada.py, LLaDALlamaBlock; Dream is the
 * same block with Qwen2 names and q/k/v biases):
 *   x = wte[token]
 *   per layer:  h = RMSNorm(x) * attn_norm
 *               q, k, v = h Wq^T (+bq), h Wk^T (+bk), h Wv^T (+bv)
 *               q, k = RoPE(q, pos), RoPE(k, pos)           rotate-half convention, see below
 *               x += Attention(q, k, v) Wo^T                bidirectional, no mask, GQA
 *               h = RMSNorm(x) * ffn_norm
 *               x += (SiLU(h Wgate^T) * (h Wup^T)) Wdown^T  LLaDA: ff_proj, up_proj, ff_out
 *   out = RMSNorm(x) * ln_f;  logits = out Whead^T
 *
 * RoPE (LLaDA / Llama "rotate half", not GPT-J interleaved): for head dim D and i < D/2,
 *   f_i = theta^(-2i/D), a = pos * f_i,
 *   y[i]       = x[i] cos a - x[i + D/2] sin a
 *   y[i + D/2] = x[i + D/2] cos a + x[i] sin a
 * Angles are computed in double here (LLaDA computes them in float32; the difference at
 * position 4096 is ~2e-4 rad, far below bf16 tolerance).
 *
 * GQA: query head h reads KV head h / (n_heads / n_kv_heads) (repeat_interleave in PyTorch).
 * Attention scale is 1/sqrt(D).
 *
 * Ownership: functions that take output pointers write into caller-owned memory of the stated
 * shape; nothing is retained.  Objects made by *_new are freed with the matching *_free, which
 * accepts NULL.
 */
#ifndef DKV_REF_REF_H
#define DKV_REF_REF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "decode/decode.h"
#include "model/model.h"
#include "util/status.h"

/* ------------------------------------------------------------------ operations */

/* out (T, C) = wte[tokens[t]] rows; wte (V, C).  Tokens must be < V (caller checks). */
void dkv_ref_embedding(float *out, const uint32_t *tokens, const float *wte, uint32_t T, uint32_t C);

/* out (T, C) = in / sqrt(mean(in^2) + eps) * w; w (C).  out may equal in. */
void dkv_ref_rmsnorm(float *out, const float *in, const float *w, uint32_t T, uint32_t C, float eps);

/* out (T, OC) = in (T, C) w^T + bias; w (OC, C); bias (OC) or NULL.  out must not alias in. */
void dkv_ref_matmul(float *out, const float *in, const float *w, const float *bias, uint32_t T,
                    uint32_t C, uint32_t OC);

/* In place on x (T, n_heads * head_dim): rotate-half RoPE at positions pos[t] (NULL: t). */
void dkv_ref_rope(float *x, const uint32_t *pos, uint32_t T, uint32_t n_heads, uint32_t head_dim,
                  double theta);

/* out (Tq, n_heads*D) = softmax(q k^T / sqrt(D)) v per head, bidirectional (no mask).
 * q (Tq, n_heads*D); k, v (Tk, n_kv_heads*D); n_heads a multiple of n_kv_heads. */
void dkv_ref_attention(float *out, const float *q, const float *k, const float *v, uint32_t Tq,
                       uint32_t Tk, uint32_t n_heads, uint32_t n_kv_heads, uint32_t head_dim);

/* Attention mass each key receives, per KV head: score (n_kv_heads, Tk) = sum over the Tq
 * queries and over the query heads of the group of softmax(q k^T / sqrt(D)).  This is the
 * importance used by the sparse cache to pick tokens (dLLM-Serve / Sparse-dLLM style). */
void dkv_ref_attention_scores(float *score, const float *q, const float *k, uint32_t Tq, uint32_t Tk,
                              uint32_t n_heads, uint32_t n_kv_heads, uint32_t head_dim);

/* out (T, F) = SiLU(gate) * up, SiLU(x) = x / (1 + e^-x).  out may equal gate or up. */
void dkv_ref_swiglu(float *out, const float *gate, const float *up, uint32_t T, uint32_t F);

/* x[i] += d[i] for n elements. */
void dkv_ref_residual(float *x, const float *d, size_t n);

/* LM head with argmax and confidence, chunked: logits for at most chunk_rows rows at a time
 * (chunk_rows * V floats of scratch, allocated here; 0 = all T rows at once), never [T, V] at
 * once when chunk_rows < T.  argmax[t] = the lowest index of the largest logit of row t;
 * conf[t] = its softmax probability.  in (T, C), w (V, C).  Either output may be NULL.
 * DKV_ENOMEM when the scratch cannot be allocated. */
dkv_status dkv_ref_lm_head_argmax(uint32_t *argmax, float *conf, const float *in, const float *w,
                                  uint32_t T, uint32_t C, uint32_t V, uint32_t chunk_rows, dkv_err *err);

/* Top-k: idx (k) = the indices of the k largest of score (n), ties to the lower index, written
 * in ascending index order.  k <= n. */
void dkv_ref_topk(uint32_t *idx, const float *score, uint32_t n, uint32_t k);

/* Per-head packing for the sparse cache: out (n_kv_heads, k, D) where row j of head g is
 * src[idx[g*k + j], g*D .. g*D+D); src (T, n_kv_heads*D); idx (n_kv_heads, k), entries < T.
 * With shared = true, idx has one row (k) used for every head (the shared-set variant). */
void dkv_ref_pack_heads(float *out, const float *src, const uint32_t *idx, uint32_t T, uint32_t n_kv_heads,
                        uint32_t D, uint32_t k, bool shared);

/* ------------------------------------------------------------------ weights */

typedef struct dkv_ref_layer {
    float *attn_norm;   /* (C)            LLaDA attn_norm   / Dream input_layernorm */
    float *wq;          /* (H*D, C)       q_proj */
    float *wk;          /* (Hkv*D, C)     k_proj */
    float *wv;          /* (Hkv*D, C)     v_proj */
    float *bq, *bk, *bv;/* (H*D), (Hkv*D), (Hkv*D); NULL unless model.qkv_bias */
    float *wo;          /* (C, H*D)       LLaDA attn_out    / Dream o_proj */
    float *ffn_norm;    /* (C)            LLaDA ff_norm     / Dream post_attention_layernorm */
    float *w_gate;      /* (F, C)         LLaDA ff_proj (SiLU applied) / Dream gate_proj */
    float *w_up;        /* (F, C)         LLaDA up_proj     / Dream up_proj */
    float *w_down;      /* (C, F)         LLaDA ff_out      / Dream down_proj */
} dkv_ref_layer;

/* The parameters, as plain float arrays in one allocation (llm.c's ParameterTensors).  The
 * struct is public on purpose: loaders and the CUDA upload walk its fields. */
typedef struct dkv_ref_weights {
    dkv_model      m;          /* shapes (a copy) */
    float          rms_eps;    /* LLaDA 1e-5, Dream 1e-6 */
    float         *wte;        /* (V, C) token embedding */
    dkv_ref_layer *layers;     /* (n_layers) */
    float         *ln_f;       /* (C) final norm */
    float         *lm_head;    /* (V, C); == wte when m.tied_embeddings */
    float         *mem;        /* the one allocation every pointer above points into */
    size_t         n_floats;
} dkv_ref_weights;

/* Allocates zeroed weights for m (validated with dkv_model_validate, and n_heads*head_dim must
 * be set; hidden need not equal it).  Caller frees with dkv_ref_weights_free. */
dkv_status dkv_ref_weights_new(const dkv_model *m, float rms_eps, dkv_ref_weights **out, dkv_err *err);
void dkv_ref_weights_free(dkv_ref_weights *w);

/* Fills every tensor from a seeded generator: linear weights N(0, 1/fan_in), biases N(0, 0.02),
 * embeddings N(0, 1), norm weights 1 + N(0, 0.1).  Same seed, same weights. */
void dkv_ref_weights_randomize(dkv_ref_weights *w, uint64_t seed);

/* Visits every tensor: name (the canonical dkv name, e.g. "layers.3.wq", "wte", "ln_f"),
 * pointer and its 1 or 2 dimensions (dim1 = 0 for vectors).  Stops and returns the callback's
 * status when it is not DKV_OK.  The tied lm_head is not visited. */
typedef dkv_status (*dkv_ref_tensor_fn)(void *ctx, const char *name, float *data, uint32_t dim0,
                                        uint32_t dim1);
dkv_status dkv_ref_weights_foreach(dkv_ref_weights *w, dkv_ref_tensor_fn fn, void *ctx);

/* ------------------------------------------------------------------ full forward */

/* hidden (L, C) = the final-normed hidden states of the whole canvas tokens (L).  Tokens must
 * be < vocab (DKV_EINVAL otherwise).  Logits are dkv_ref_matmul(hidden, lm_head). */
dkv_status dkv_ref_forward(const dkv_ref_weights *w, const uint32_t *tokens, uint32_t L, float *hidden,
                           dkv_err *err);

/* ------------------------------------------------------------------ KV cache */

/* Per layer and per KV head: up to cap rows of K and V (post-RoPE), [head, token, feature],
 * each tagged with its canvas position.  Dense modes hold the same positions in every head;
 * the sparse mode holds a different set per head. */
typedef struct dkv_ref_kv dkv_ref_kv;

dkv_status dkv_ref_kv_new(const dkv_model *m, uint32_t cap_tokens, dkv_ref_kv **out, dkv_err *err);
void       dkv_ref_kv_free(dkv_ref_kv *kv);
void       dkv_ref_kv_clear(dkv_ref_kv *kv);
uint32_t   dkv_ref_kv_count(const dkv_ref_kv *kv, uint32_t layer, uint32_t kv_head);
/* Borrowed views, valid until the next step or clear: positions (count), k and v (count, D). */
const uint32_t *dkv_ref_kv_positions(const dkv_ref_kv *kv, uint32_t layer, uint32_t kv_head);
const float    *dkv_ref_kv_k(const dkv_ref_kv *kv, uint32_t layer, uint32_t kv_head);
const float    *dkv_ref_kv_v(const dkv_ref_kv *kv, uint32_t layer, uint32_t kv_head);

/* ------------------------------------------------------------------ one decoding step */

/* The cache modes are decode.h's dkv_cache_mode (one enum, one names table).  The former
 * DKV_REF_CACHE_* spellings stay as aliases so code written against them still compiles; new
 * code uses DKV_CACHE_*. */
typedef dkv_cache_mode dkv_ref_cache_mode;
#define DKV_REF_CACHE_NONE   DKV_CACHE_NONE
#define DKV_REF_CACHE_PREFIX DKV_CACHE_PREFIX
#define DKV_REF_CACHE_DUAL   DKV_CACHE_DUAL
#define DKV_REF_CACHE_SPARSE DKV_CACHE_SPARSE
#define dkv_ref_cache_mode_name dkv_cache_mode_name

typedef enum dkv_ref_phase {
    DKV_REF_PHASE_REFRESH = 0,
    DKV_REF_PHASE_REUSE
} dkv_ref_phase;

typedef struct dkv_ref_step_args {
    dkv_cache_mode mode;
    uint32_t canvas_len;    /* L = P + G */
    uint32_t block_start;   /* s_b */
    uint32_t block_len;     /* B; block_start + block_len <= canvas_len */
    uint32_t step;          /* step within the block, 0-based */
    double   retention;     /* sparse: rho in (0, 1]; k = ceil(rho * (L - B)) */
    bool     shared_set;    /* sparse: one token set per layer for all KV heads */
    uint32_t logit_chunk;   /* LM-head rows per chunk (max_num_logits); 0 = all */
    const uint32_t *keep_pos; /* sparse selecting step (step 1), optional: (n_layers, n_sets, k)
                                 canvas positions to keep instead of the own top-k, n_sets = 1
                                 shared else n_kv_heads, ascending within a set (selection replay,
                                 decode/follow.h); NULL: the own top-k */
} dkv_ref_step_args;

typedef struct dkv_ref_step_out {
    /* filled by dkv_ref_step: the token counts of DESIGN.md's table */
    dkv_ref_phase phase;
    uint32_t q_tokens;         /* queries computed */
    uint32_t kv_tokens;        /* keys attended by each head */
    uint32_t kv_write_tokens;  /* KV rows written to the cache (per head) */
    /* optional caller-owned outputs for the block's B rows (NULL: not wanted) */
    float    *block_hidden;    /* (B, C) final-normed hidden states */
    float    *block_logits;    /* (B, V) */
    uint32_t *argmax;          /* (B) */
    float    *conf;            /* (B) */
    /* optional, with keep_pos at a selecting step: per (layer, set), n_layers x n_sets entries:
       the own top-k differs from keep_pos, and the own boundary margin and magnitude
       (dkv_select_boundary); sel_differs NULL: not wanted */
    uint8_t  *sel_differs;
    float    *sel_margin, *sel_mag;
} dkv_ref_step_out;

/* Runs one step of a request in the given cache mode (DESIGN.md, "Tokens per step"):
 *   none:    every step a Refresh over the canvas; the cache is not touched.
 *   prefix:  step 0 Refresh, writes KV of [0, s_b); later steps Reuse: queries [s_b, L)
 *            against the cached prefix plus their own KV.
 *   dual:    step 0 Refresh, writes KV of all L tokens; later steps Reuse: the block's B
 *            queries, whose KV overwrites the block's rows in place, against all L.
 *   sparse:  step 0 Refresh (nothing written); step 1 Refresh that scores keys outside the
 *            block by the block queries' attention (dkv_ref_attention_scores) and keeps the
 *            top k per KV head (or one shared set); later steps Reuse: B queries against the
 *            k kept tokens plus the block's own KV.
 * kv must hold at least canvas_len tokens (unused for mode none; may be NULL then).  A Reuse
 * step on a cache that does not hold what the previous steps should have left is DKV_ESTATE. */
dkv_status dkv_ref_step(const dkv_ref_weights *w, dkv_ref_kv *kv, const dkv_ref_step_args *a,
                        const uint32_t *tokens, dkv_ref_step_out *out, dkv_err *err);

#endif
