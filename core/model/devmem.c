/* devmem.c - the CUDA backend's device allocations besides the weights and the KV arena
 * (devmem.h).  Each size follows the cudaMalloc it counts, named beside it. */
#include <math.h>
#include <string.h>

#include "model/devmem.h"

uint64_t dkv_devmem_align(uint64_t b) { return (b + DKV_DEVMEM_ALIGN - 1) / DKV_DEVMEM_ALIGN * DKV_DEVMEM_ALIGN; }

/* backend_scores.cu's dkv_bk_scores: S (H, Tq, Tk) fp32, row statistics (H, Tq, 2), 256 spare */
uint64_t dkv_devmem_scores_ws_bytes(uint32_t Tq, uint32_t Tk, uint32_t H)
{
    return (uint64_t)H * Tq * Tk * 4 + (uint64_t)2 * H * Tq * 4 + 256;
}

uint32_t dkv_devmem_side_streams(uint32_t attn_streams)
{
    uint32_t n = attn_streams > 1 ? attn_streams : 0;
    return n > DKV_DEVMEM_MAX_STREAMS ? DKV_DEVMEM_MAX_STREAMS : n;
}

/* bk_scratch_init's one cudaMalloc: attention workspaces (none: the flash kernels merge their
 * splits on chip, dkv_cuda_attention_workspace_bytes is 0, which the backend checks), the
 * selection scores (Hkv, L) fp32, dkv_bk_scores' workspace for the block's queries, the selected
 * indices (Hkv, L), and the logits of one LM-head chunk (rows, vocab) fp32. */
uint64_t dkv_devmem_workspace_bytes(const dkv_model *m, const dkv_devmem_cfg *c)
{
    uint64_t L = c->max_L, rows = c->logit_rows ? c->logit_rows : DKV_DEVMEM_LOGIT_ROWS;
    return dkv_devmem_align((uint64_t)m->n_kv_heads * L * 4) +
           dkv_devmem_align(dkv_devmem_scores_ws_bytes(c->block_len, c->max_L, m->n_heads)) +
           dkv_devmem_align((uint64_t)m->n_kv_heads * L * 4) + dkv_devmem_align(rows * m->vocab * 4);
}

/* bk_scratch_reserve's one cudaMalloc: x, h (T, C), qkv (T, QKV), att (T, H D), gate|up (T, 2F),
 * ff (T, F) bf16; argmax, conf (R) */
uint64_t dkv_devmem_act_bytes(const dkv_model *m, uint32_t cap_T, uint32_t cap_R)
{
    uint64_t T = cap_T, C = m->hidden, F = m->ffn, QD = (uint64_t)m->n_heads * m->head_dim,
             QKV = QD + 2 * (uint64_t)m->n_kv_heads * m->head_dim;
    return 2 * dkv_devmem_align(T * C * 2) + dkv_devmem_align(T * QKV * 2) + dkv_devmem_align(T * QD * 2) +
           dkv_devmem_align(T * 2 * F * 2) + dkv_devmem_align(T * F * 2) + 2 * dkv_devmem_align((uint64_t)cap_R * 4);
}

bool dkv_devmem_act_grow(uint32_t T, uint32_t R, uint32_t *cap_T, uint32_t *cap_R)
{
    if (T <= *cap_T && R <= *cap_R && *cap_T > 0)
        return false;
    uint32_t nT = T > *cap_T ? T + T / 4 : *cap_T, nR = R > *cap_R ? R + R / 4 : *cap_R;
    *cap_T = nT;
    *cap_R = nR < 1 ? 1 : nR;
    return true;
}

uint64_t dkv_devmem_canvas_bytes(uint64_t canvas_tokens) { return (canvas_tokens ? canvas_tokens : 1) * 4; }

uint32_t dkv_devmem_kv_vectors(const dkv_model *m) { return m->n_layers * 2 * m->n_kv_heads; }

/* lowrank.cu's dkv_cuda_lowrank_new: X, E (b, m, n), Y, Q (b, m, r), Z (b, n, r), G, Linv (b, r, r),
 * Bw (b, n, r), Om (n, r), nrm (b), fp32, each 256-aligned */
uint64_t dkv_devmem_lowrank_bytes(uint32_t max_m, uint32_t max_n, uint32_t max_rank, uint32_t max_batch)
{
    uint64_t b = max_batch, mn = (uint64_t)max_m * max_n, mr = (uint64_t)max_m * max_rank,
             nr = (uint64_t)max_n * max_rank, rr = (uint64_t)max_rank * max_rank;
    uint64_t sizes[] = {b * mn, b * mn, b * mr, b * mr, b * nr, b * rr, b * rr, b * nr, nr, b}, total = 0;
    for (int i = 0; i < 10; i++)
        total += dkv_devmem_align(sizes[i] * 4);
    return total;
}

/* arena.c's compress(): the projection Q (batch, L, rank), B (batch, rank, D) fp32, the errors
 * (batch), their bf16 staging, 1 KiB of padding */
uint64_t dkv_devmem_lowrank_proj_bytes(const dkv_model *m, uint32_t max_L)
{
    uint64_t batch = dkv_devmem_kv_vectors(m),
             per = (uint64_t)max_L * DKV_DEVMEM_LR_RANK + (uint64_t)DKV_DEVMEM_LR_RANK * m->head_dim;
    return batch * per * 4 + batch * 4 + batch * per * 2 + 1024;
}

/* backend_fwd.c's bk_fp8_scales: per arena block x layer x k|v x KV head, fp32 (beside the arena,
 * which holds the e4m3 codes in blocks of dkv_block_bytes) */
uint64_t dkv_devmem_fp8_scale_bytes(const dkv_model *m, uint64_t blocks)
{
    return blocks * m->n_layers * 2 * m->n_kv_heads * 4;
}

uint32_t dkv_devmem_compress_tokens(uint32_t n_chain, uint32_t off_blocks, uint32_t cmp_blocks, uint32_t block_tokens,
                                    uint32_t max_L)
{
    uint32_t end = n_chain > off_blocks ? n_chain - off_blocks : 0, start = end > cmp_blocks ? end - cmp_blocks : 0;
    uint64_t t = (uint64_t)(end - start) * block_tokens;
    return t > max_L ? max_L : (uint32_t)t;
}

uint32_t dkv_devmem_ratio_rank(double ratio, uint32_t head_dim)
{
    uint32_t r = (uint32_t)llround(ratio * head_dim);
    return r < 1 ? 1 : r > DKV_DEVMEM_LR_RANK ? DKV_DEVMEM_LR_RANK : r;
}

uint32_t dkv_devmem_compress_rank(uint64_t pcie_bytes, uint64_t device_bytes, uint32_t head_dim, uint32_t m_tok)
{
    uint32_t r = dkv_devmem_ratio_rank(device_bytes ? (double)pcie_bytes / (double)device_bytes : 0.3, head_dim);
    return r > m_tok ? m_tok : r;
}

dkv_devmem_range dkv_devmem_compress_range(uint32_t n_chain, uint64_t offload_bytes, uint64_t device_bytes,
                                           uint64_t pcie_bytes, uint64_t block_bytes, uint32_t block_tokens,
                                           uint32_t max_L, uint32_t need_tokens, uint32_t head_dim)
{
    dkv_devmem_range g = {0};
    if (block_bytes == 0 || block_tokens == 0)
        return g;
    uint32_t off = (uint32_t)((offload_bytes + block_bytes - 1) / block_bytes),
             cmp = (uint32_t)((device_bytes + block_bytes - 1) / block_bytes);
    g.end = n_chain > off ? n_chain - off : 0;
    g.start = g.end > cmp ? g.end - cmp : 0;
    uint64_t m = dkv_devmem_compress_tokens(n_chain, off, cmp, block_tokens, max_L);
    uint64_t lo = (uint64_t)g.start * block_tokens, hi = (uint64_t)g.end * block_tokens;
    hi = hi < need_tokens ? hi : need_tokens;   /* never the unwritten tail of a last block */
    g.m_tok = hi <= lo ? 0 : (uint32_t)(hi - lo < m ? hi - lo : m);
    g.rank = g.m_tok ? dkv_devmem_compress_rank(pcie_bytes, device_bytes, head_dim, g.m_tok) : 0;
    return g;
}

uint64_t dkv_devmem_lowrank_form_bytes(uint32_t matrices, uint32_t m_tok, uint32_t r, uint32_t head_dim)
{
    return ((uint64_t)matrices * m_tok * r + (uint64_t)matrices * r * head_dim) * 2;
}

void dkv_devmem_lr_stored(dkv_devmem_lr_form *f, const dkv_devmem_range *g)
{
    *f = (dkv_devmem_lr_form){.valid = true, .start = g->start, .end = g->end, .m_tok = g->m_tok, .rank = g->rank};
}

bool dkv_devmem_lr_compressed(dkv_devmem_lr_form *f, const dkv_devmem_range *g, uint32_t matrices, uint32_t head_dim,
                              uint64_t block_bytes)
{
    bool form = dkv_devmem_lowrank_form_bytes(matrices, g->m_tok, g->rank, head_dim) <=
                (uint64_t)(g->end - g->start) * block_bytes;
    if (form)
        dkv_devmem_lr_stored(f, g);
    else
        f->valid = false;
    return form;
}

void dkv_devmem_lr_offload(dkv_devmem_lr_form *f, uint32_t n_chain, uint64_t pcie_bytes, uint64_t block_bytes)
{
    if (!f->valid || block_bytes == 0)
        return;
    uint64_t nb = (pcie_bytes + block_bytes - 1) / block_bytes;
    uint32_t start = n_chain > nb ? n_chain - (uint32_t)nb : 0;
    if (start < f->end && n_chain > f->start)
        f->valid = false;
}

bool dkv_devmem_lr_rebuilds(const dkv_devmem_lr_form *f, uint32_t n_chain, uint32_t n_tb)
{
    return f->valid && f->start >= n_chain && f->end <= n_tb;
}

uint64_t dkv_devmem_lr_bytes(const dkv_devmem_lr_form *f, uint32_t matrices, uint32_t head_dim)
{
    return dkv_devmem_lowrank_form_bytes(matrices, f->m_tok, f->rank, head_dim);
}

/* ------------------------------------------------------------------ the tracker */

static void total(dkv_devmem *d)
{
    const dkv_devmem_parts *p = &d->now;
    d->bytes = p->cublaslt_ws + p->workspaces + p->activations + p->canvases + p->lowrank + p->gather + p->lowrank_in +
               p->fp8_scales;
    if (d->bytes > d->peak)
        d->peak = d->bytes;
}

void dkv_devmem_init(dkv_devmem *d, const dkv_model *m, const dkv_devmem_cfg *c)
{
    memset(d, 0, sizeof *d);
    d->m = *m;
    d->c = *c;
    d->now.cublaslt_ws = DKV_DEVMEM_CUBLASLT_WS_BYTES;
    d->now.workspaces = dkv_devmem_workspace_bytes(m, c);
    d->now.canvases = dkv_devmem_canvas_bytes(c->canvas_tokens);
    dkv_devmem_rows(d, c->max_L, c->block_len);
}

void dkv_devmem_rows(dkv_devmem *d, uint32_t T, uint32_t R)
{
    if (dkv_devmem_act_grow(T, R, &d->cap_T, &d->cap_R)) {
        d->now.activations = 0;   /* freed before the new one is allocated */
        total(d);
        d->now.activations = dkv_devmem_act_bytes(&d->m, d->cap_T, d->cap_R);
    }
    total(d);
}

void dkv_devmem_gather(dkv_devmem *d, uint64_t bytes)
{
    if (bytes > d->now.gather) {
        d->now.gather = 0;
        total(d);
        d->now.gather = bytes;
    }
    total(d);
}

void dkv_devmem_compressor(dkv_devmem *d)
{
    if (!d->now.lowrank)
        d->now.lowrank = dkv_devmem_lowrank_bytes(d->c.max_L, d->m.head_dim, DKV_DEVMEM_LR_RANK, DKV_DEVMEM_LR_BATCH) +
                         dkv_devmem_lowrank_proj_bytes(&d->m, d->c.max_L);
    total(d);
}

void dkv_devmem_lowrank_in(dkv_devmem *d, uint64_t bytes)
{
    if (bytes > d->now.lowrank_in) {
        d->now.lowrank_in = 0;
        total(d);
        d->now.lowrank_in = bytes;
    }
    total(d);
}

void dkv_devmem_fp8(dkv_devmem *d)
{
    if (!d->now.fp8_scales)
        d->now.fp8_scales = dkv_devmem_fp8_scale_bytes(&d->m, d->c.arena_blocks);
    total(d);
}
