/* cpu_internal.h - the CPU backend's private state, shared by cpu_backend.c (vtable, set-up,
 * steps, transfers), cpu_fwd.c (one item's forward) and cpu_pool.c (KV slots in pool blocks).
 * Not a public header: see backend.h. */
#ifndef DKV_CPU_INTERNAL_H
#define DKV_CPU_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

#include "cpu/backend.h"
#include "ref/ref.h"

typedef enum { CW_NONE = 0, CW_STORE, CW_SELECT } cpu_write;

/* One request as the backend tracks it. */
typedef struct cpu_req {
    uint32_t P, G, L, n_blocks;
    uint32_t *canvas;          /* (L) */
    uint32_t cur_block, masked;
    uint8_t  *host;            /* host slot: chain block j at j * block_bytes (lazy) */
    float    *host_scale;      /* FP8: scales of the slot's blocks, n_scale per block */
    uint8_t  *host_ok;         /* per chain block: written by an offload or a compress */
    uint32_t  host_blocks;
} cpu_req;

/* One item of a step, resolved from the plan (the CUDA backend's plan_item rules). */
typedef struct cpu_item {
    uint32_t req, q0, nq, s_b, B;
    bool     refresh;
    uint32_t n_cache, n_own;   /* keys from the pool (slots 0..n_cache-1), own fresh rows */
    bool     inplace;          /* dual Reuse: own rows stored first, every key read from the pool */
    cpu_write write;
    uint32_t w_lo, w_n;        /* STORE: positions [w_lo, w_lo + w_n) into slots = positions */
    uint32_t keep;             /* SELECT: rows kept per KV head */
    bool     shared_set;
    uint32_t need_tokens, n_tb, n_chain;
    uint32_t *tab;             /* (n_tb) pool block of each slot block */
    uint32_t R;                /* logit rows the plan asks for */
    bool     measure;          /* setup.on_entropy: a sparse block's step 0 measures its attention entropy */
} cpu_item;

typedef struct cpu_backend {
    dkv_cpu_backend_options o;
    dkv_model m;
    dkv_gpu   g;
    const dkv_workload *wl;
    dkv_decode_cfg dec;
    bool begun;
    dkv_kernel_fn on_kernel;
    void *on_kernel_user;
    void (*on_entropy)(void *user, uint32_t request, uint32_t block, double entropy);
    void *on_entropy_user;
    double ent_sum;            /* measuring item: sum of normalised row entropies, and their count */
    uint64_t ent_n;
    dkv_ref_weights *w;
    uint32_t mask_id;

    /* the pool: [n_pool | n_staging] blocks of block_bytes, one mapping */
    uint8_t *pool;
    uint64_t map_bytes, block_bytes, n_pool, n_staging, staging_used;
    uint32_t bt, eb;           /* tokens per block; bytes per KV element */
    dkv_dtype kv_dtype;
    uint64_t tok_bytes;        /* bytes of one token slot: n_layers * 2 * Hkv * D * eb */
    float   *scale;            /* FP8: (n_pool + n_staging) * n_scale, else NULL */
    uint32_t n_scale;          /* n_layers * 2 * Hkv */
    uint8_t *touched;          /* per pool block */

    cpu_req *rq;
    size_t   n_rq;
    uint32_t max_L;

    /* scratch (max_L rows) */
    float *x, *h, *q, *k, *v, *att, *t, *gate, *up, *gk, *gv, *sc, *qg, *score, *hid, *logits, *row;
    uint32_t *cand, *sel, *pos, *argmax;
    float *conf;
    /* a selecting item's sets (selection report / replay): kept (Hkv, keep) canvas positions,
       own top-k (L), per set differs (Hkv) and margin | mag (2 Hkv) */
    uint32_t *selk, *selo;
    uint8_t  *seld;
    float    *selm;
    uint64_t  step_index;      /* of the step being run (selection replay and report) */
    float     lam;             /* SELECT: largest attention logit of the block rows [lam_lo, lam_hi) */
    uint32_t  lam_lo, lam_hi;  /* (rows relative to q0; lam_hi = 0: not tracked) */

    uint64_t lr_orders;        /* COMPRESS orders that compressed: the low-rank Omega's seed offset */
    dkv_cpu_backend_report rep;
} cpu_backend;

/* cpu_pool.c: a slot s of the item's table is block tab[s / bt], token s % bt. */
/* Stores n rows (rows[j], D floats) of (layer, kv 0|1, head) into slots slot0 .. slot0 + n - 1,
 * quantizing to the KV dtype.  Slots below valid (>= slot0 + n or not) hold rows stored before
 * that stay live: FP8 (per-block scales, cpu_pool.c) re-quantizes those of a touched block when
 * its scale grows, and resets the scale only when the store covers all of a block's live rows. */
void cpu_store(cpu_backend *b, const uint32_t *tab, uint32_t layer, uint32_t kv, uint32_t head, uint32_t slot0,
               uint32_t n, uint32_t valid, const float *const *rows);
/* Reads n slots from slot 0 of (layer, kv, head), dequantized, into out (n, D). */
void cpu_load(const cpu_backend *b, const uint32_t *tab, uint32_t layer, uint32_t kv, uint32_t head, uint32_t n,
              float *out);
/* Copies one pool block (bytes and scales) to / from host memory. */
void cpu_block_out(const cpu_backend *b, uint32_t block, uint8_t *dst, float *dst_scale);
void cpu_block_in(cpu_backend *b, uint32_t block, const uint8_t *src, const float *src_scale);

/* cpu_fwd.c: the forward of one item: rows, attention, stores, then the block's logits into
 * b->argmax / b->conf (and b->logits, (B, V)). */
dkv_status cpu_forward(cpu_backend *b, const cpu_item *x, dkv_err *err);

double cpu_now(void);

#define CPU_TRY(call)                      \
    do {                                   \
        dkv_status s_ = (call);            \
        if (s_ != DKV_OK)                  \
            return s_;                     \
    } while (0)

#endif
