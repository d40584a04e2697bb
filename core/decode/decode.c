/* decode.c - the per-step token table of DESIGN.md ("Decoding model") and its byte figures. */
#include "decode/decode.h"

#include <math.h>
#include <string.h>

#include "util/rng.h"

/* ------------------------------------------------------------------ names */

static const char *const cache_names[] = {"none", "prefix", "dual", "sparse"};
static const char *const logit_names[] = {"block", "all"};
static const char *const phase_names[] = {"refresh", "reuse"};
const dkv_names dkv_cache_mode_names = DKV_NAMES("decode.cache", cache_names);
const dkv_names dkv_logit_mode_names = DKV_NAMES("decode.logits", logit_names);
const dkv_names dkv_phase_names = DKV_NAMES("phase", phase_names);

const char *dkv_cache_mode_name(dkv_cache_mode m) { return dkv_names_at(&dkv_cache_mode_names, (int)m); }
const char *dkv_logit_mode_name(dkv_logit_mode m) { return dkv_names_at(&dkv_logit_mode_names, (int)m); }
const char *dkv_phase_name(dkv_phase p) { return dkv_names_at(&dkv_phase_names, (int)p); }

/* ------------------------------------------------------------------ config */

void dkv_decode_cfg_default(dkv_decode_cfg *c)
{
    memset(c, 0, sizeof *c);
    c->block_len = 32;
    c->seed = 1;
    c->cache = DKV_CACHE_DUAL;
    c->logits = DKV_LOGITS_BLOCK;
    c->rho = 0.5;
}

dkv_status dkv_decode_cfg_validate(const dkv_decode_cfg *c, dkv_err *err)
{
    if (c->block_len == 0)
        return dkv_err_set(err, DKV_EINVAL, "decode: field 'block_len' must be > 0");
    if ((unsigned)c->cache > DKV_CACHE_SPARSE)
        return dkv_err_set(err, DKV_EINVAL, "decode: field 'cache' has no mode %d", (int)c->cache);
    if ((unsigned)c->logits > DKV_LOGITS_ALL)
        return dkv_err_set(err, DKV_EINVAL, "decode: field 'logits' has no mode %d", (int)c->logits);
    if (c->steps_max > 0) {
        if (c->steps_min == 0)
            return dkv_err_set(err, DKV_EINVAL, "decode: field 'steps_min' must be > 0 when steps_max is set");
        if (c->steps_min > c->steps_max)
            return dkv_err_set(err, DKV_EINVAL, "decode: field 'steps_min' (%u) exceeds 'steps_max' (%u)",
                               c->steps_min, c->steps_max);
    }
    if (c->cache == DKV_CACHE_SPARSE && !(c->rho > 0.0 && c->rho <= 1.0))
        return dkv_err_set(err, DKV_EINVAL, "decode: field 'rho' must be in (0, 1] for sparse cache (got %g)",
                           c->rho);
    return DKV_OK;
}

/* ------------------------------------------------------------------ iteration */

static double clamp_rho(double r)
{
    if (!(r > 0.0)) return 1e-9; /* keeps k >= 1 token whenever L > B; NaN lands here too */
    return r > 1.0 ? 1.0 : r;
}

/* k = ceil(rho * (L - B)); the epsilon keeps products like 0.3*1000 from rounding up to 301. */
static uint32_t retained_tokens(double rho, uint32_t L, uint32_t B)
{
    uint32_t n = L - B;
    double k = ceil(rho * (double)n - 1e-9);
    if (k < 0) k = 0;
    return k > n ? n : (uint32_t)k;
}

static uint32_t draw_steps(const dkv_decode_cfg *c, uint64_t id)
{
    dkv_rng r;
    /* One stream per (seed, request id), independent of the order requests begin in. */
    dkv_rng_seed(&r, c->seed ^ (id * 0x9e3779b97f4a7c15ULL + 0x632be59bd9b4e019ULL));
    return c->steps_min + (uint32_t)dkv_rng_below(&r, (uint64_t)c->steps_max - c->steps_min + 1);
}

dkv_status dkv_decode_begin(dkv_decode_state *st, const dkv_decode_request *req, const dkv_decode_cfg *cfg,
                            const dkv_model *model, dkv_err *err)
{
    memset(st, 0, sizeof *st);
    st->done = true;
    dkv_status rc = dkv_decode_cfg_validate(cfg, err);
    if (rc != DKV_OK) return rc;
    uint32_t B = cfg->block_len;
    if (req->gen_tokens == 0)
        return dkv_err_set(err, DKV_EINVAL, "decode: request %llu: field 'gen_tokens' must be > 0",
                           (unsigned long long)req->id);
    if (req->gen_tokens % B != 0)
        return dkv_err_set(err, DKV_EINVAL,
                           "decode: request %llu: gen_tokens (%u) is not a multiple of block_len (%u); "
                           "round generation lengths up (workload option gen_multiple_of)",
                           (unsigned long long)req->id, req->gen_tokens, B);
    if ((uint64_t)req->prompt_tokens + req->gen_tokens > UINT32_MAX / 2)
        return dkv_err_set(err, DKV_ERANGE, "decode: request %llu: canvas of %llu tokens is too long",
                           (unsigned long long)req->id,
                           (unsigned long long)req->prompt_tokens + req->gen_tokens);
    st->cfg = cfg;
    st->model = model;
    st->id = req->id;
    st->P = req->prompt_tokens;
    st->G = req->gen_tokens;
    st->B = B;
    st->L = st->P + st->G;
    st->n_blocks = st->G / B;
    if (req->steps_per_block > 0)
        st->S = req->steps_per_block;
    else if (cfg->steps_max > 0)
        st->S = draw_steps(cfg, req->id);
    else
        st->S = cfg->steps_per_block > 0 ? cfg->steps_per_block : B;
    st->rho = cfg->cache == DKV_CACHE_SPARSE ? cfg->rho : 0.0;
    st->rho_block = 0.0;
    st->done = false;
    return DKV_OK;
}

/* Token counts of (block, step j) given the retained k of this block (sparse, j >= 2). */
static void fill_counts(const dkv_decode_state *st, uint32_t b, uint32_t j, uint32_t k, dkv_decode_step *s)
{
    uint32_t L = st->L, B = st->B, sb = st->P + b * B;
    memset(s, 0, sizeof *s);
    s->block = b;
    s->step = j;
    s->steps_in_block = st->S;
    s->index = b * st->S + j;
    s->block_start = sb;
    s->canvas = L;
    s->block_len = B;
    s->phase = DKV_PHASE_REFRESH;
    s->q_tokens = L;
    s->a_tokens = L;
    switch (st->cfg->cache) {
    case DKV_CACHE_NONE:
        break;
    case DKV_CACHE_PREFIX:
        s->resident_tokens = sb;
        if (j == 0) {
            s->w_tokens = sb;
        } else {
            s->phase = DKV_PHASE_REUSE;
            s->q_tokens = L - sb;
            s->cached_tokens = sb;
        }
        break;
    case DKV_CACHE_DUAL:
        s->resident_tokens = L;
        if (j == 0) {
            s->w_tokens = L;
        } else {
            s->phase = DKV_PHASE_REUSE;
            s->q_tokens = B;
            s->w_tokens = B;
            s->w_start = sb;
            s->cached_tokens = L - B;
        }
        break;
    case DKV_CACHE_SPARSE:
        s->shared_set = st->cfg->shared_set;
        if (j == 0) {
            /* dense step; the previous block's retained set is dropped */
        } else if (j == 1) {
            s->selects = true;
            s->w_tokens = k;
            s->retained_k = k;
            s->resident_tokens = k;
        } else {
            s->phase = DKV_PHASE_REUSE;
            s->q_tokens = B;
            s->a_tokens = k + B;
            s->cached_tokens = k;
            s->retained_k = k;
            s->resident_tokens = k;
        }
        break;
    }
    s->logit_rows = st->cfg->logits == DKV_LOGITS_ALL ? s->q_tokens : B;
    s->block_done = j + 1 == st->S;
    s->request_done = s->block_done && b + 1 == st->n_blocks;
}

bool dkv_decode_next(dkv_decode_state *st, dkv_decode_step *out)
{
    if (st->done) return false;
    const dkv_decode_cfg *c = st->cfg;
    if (c->cache == DKV_CACHE_SPARSE && st->step == 1) {
        double r = st->rho;
        if (c->rho_fn) r = c->rho_fn(c->rho_ctx, st->id, st->block, r);
        st->rho_block = clamp_rho(r);
        st->k = retained_tokens(st->rho_block, st->L, st->B);
    }
    fill_counts(st, st->block, st->step, st->k, out);
    if (c->cache == DKV_CACHE_SPARSE && st->step >= 1) out->rho = st->rho_block;
    if (st->model) dkv_decode_step_bytes(st->model, c->materialize_scores, out);
    st->index++;
    if (++st->step == st->S) {
        st->step = 0;
        st->k = 0;
        if (++st->block == st->n_blocks) st->done = true;
    }
    return true;
}

void dkv_decode_set_rho(dkv_decode_state *st, double rho)
{
    st->rho = clamp_rho(rho);
}

uint32_t dkv_decode_steps_per_block(const dkv_decode_state *st) { return st->S; }
uint32_t dkv_decode_total_steps(const dkv_decode_state *st) { return st->S * st->n_blocks; }
uint32_t dkv_decode_steps_left(const dkv_decode_state *st)
{
    return st->done ? 0 : st->S * st->n_blocks - st->index;
}
bool dkv_decode_done(const dkv_decode_state *st) { return st->done; }

bool dkv_decode_peek_next(const dkv_decode_state *st, dkv_decode_peek *out)
{
    if (st->done) return false;
    dkv_decode_step s;
    /* k only matters for a (not q or phase) of sparse reuse steps */
    fill_counts(st, st->block, st->step, st->k, &s);
    out->phase = s.phase;
    out->budget_tokens = s.phase == DKV_PHASE_REFRESH ? st->L : st->B;
    out->q_tokens = s.q_tokens;
    out->steps_left = dkv_decode_steps_left(st);
    out->block = st->block;
    out->step = st->step;
    return true;
}

dkv_status dkv_decode_request_totals(const dkv_decode_request *req, const dkv_decode_cfg *cfg,
                                     const dkv_model *model, dkv_decode_totals *out, dkv_err *err)
{
    memset(out, 0, sizeof *out);
    dkv_decode_state st;
    dkv_status rc = dkv_decode_begin(&st, req, cfg, model, err);
    if (rc != DKV_OK) return rc;
    out->blocks = st.n_blocks;
    out->steps_per_block = st.S;
    dkv_decode_step s;
    while (dkv_decode_next(&st, &s)) {
        out->steps++;
        if (s.phase == DKV_PHASE_REFRESH) out->refresh_steps++;
        else out->reuse_steps++;
        out->q_tokens += s.q_tokens;
        out->a_tokens += s.a_tokens;
        out->w_tokens += s.w_tokens;
        out->cached_tokens += s.cached_tokens;
        out->logit_rows += s.logit_rows;
        out->weight_bytes += s.weight_bytes;
        out->kv_read_bytes += s.kv_read_bytes;
        out->attn_kv_bytes += s.attn_kv_bytes;
        out->kv_write_bytes += s.kv_write_bytes;
        out->logit_bytes += s.logit_bytes;
        out->flops += s.flops;
        if (s.act_peak_bytes > out->act_peak_bytes) out->act_peak_bytes = s.act_peak_bytes;
        if (s.logit_bytes > out->logit_peak_bytes) out->logit_peak_bytes = s.logit_bytes;
        if (s.resident_tokens > out->resident_peak_tokens) out->resident_peak_tokens = s.resident_tokens;
    }
    return DKV_OK;
}

/* ------------------------------------------------------------------ bytes */

void dkv_decode_step_bytes(const dkv_model *m, bool materialize_scores, dkv_decode_step *s)
{
    uint64_t kvt = dkv_model_kv_bytes_per_token(m);
    uint64_t wb = dkv_dtype_bytes(m->weight_dtype), ab = dkv_dtype_bytes(m->act_dtype);
    uint64_t q = s->q_tokens, a = s->a_tokens;
    uint64_t d = m->hidden, hq = (uint64_t)m->n_heads * m->head_dim, hkv = (uint64_t)m->n_kv_heads * m->head_dim;

    /* Weights: every layer, the final norm and the LM head are read once; an untied input
     * embedding is gathered for the q computed rows only. */
    uint64_t emb = (uint64_t)m->vocab * d;
    if (m->tied_embeddings)
        s->weight_bytes = dkv_model_params(m) * wb;
    else
        s->weight_bytes = (dkv_model_params(m) - emb) * wb + q * d * wb;

    s->kv_read_bytes = (uint64_t)s->cached_tokens * kvt;
    s->attn_kv_bytes = a * kvt;
    s->kv_write_bytes = (uint64_t)s->w_tokens * kvt;

    /* Activation peak within one layer (layers run one after another):
     *   attention part: residual x and normed x (2qd), Q (q hq), new K and V (2 q hkv), attention
     *     output (q hq), plus the scores [heads, q, a] when materialised (eager attention);
     *     a selecting step also holds one fp32 accumulator per KV head and candidate token.
     *   FFN part: residual x and normed x (2qd), gate and up intermediates (2 q ffn); SiLU(gate)*up
     *     is taken to overwrite gate in place.
     * peak = max(attention part, FFN part). */
    uint64_t attn = (2 * q * d + 2 * q * hq + 2 * q * hkv) * ab;
    if (materialize_scores) attn += (uint64_t)m->n_heads * q * a * ab;
    if (s->selects) attn += 4ULL * m->n_kv_heads * (uint64_t)(s->canvas - s->block_len);
    uint64_t ffn = (2 * q * d + 2 * q * (uint64_t)m->ffn) * ab;
    s->act_peak_bytes = attn > ffn ? attn : ffn;

    s->logit_bytes = (uint64_t)s->logit_rows * dkv_model_logit_row_bytes(m);
    s->flops = dkv_model_forward_flops(m, q, a, s->logit_rows);
}
