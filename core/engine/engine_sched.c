/* engine_sched.c - the three schedulers: which request-steps an instance runs this iteration,
 * and the phase predictor they budget with. */
#include "engine/engine_impl.h"

#include <stdlib.h>
#include <string.h>

/* What the scheduler knows: the request's steps so far, the configured (or the request's own)
 * steps per block, and the cache mode's phase pattern.  With exact_phase: the decode model. */
uint8_t eng_predict_phase(const eng *e, const ereq *r)
{
    const dkv_decode_cfg *d = &e->c.decode;
    if (e->c.exact_phase) {
        dkv_decode_peek pk;
        return dkv_decode_peek_next(&r->dec, &pk) ? (uint8_t)pk.phase : DKV_PHASE_REFRESH;
    }
    uint32_t S = r->src->steps_per_block;
    if (!S)
        S = d->steps_max > 0 ? (d->steps_min + d->steps_max) / 2 : d->steps_per_block ? d->steps_per_block : d->block_len;
    if (!S)
        S = 1;
    uint32_t pos = r->steps_done % S;
    switch (d->cache) {
    case DKV_CACHE_NONE: return DKV_PHASE_REFRESH;
    case DKV_CACHE_SPARSE: return pos < 2 ? DKV_PHASE_REFRESH : DKV_PHASE_REUSE;
    default: return pos == 0 ? DKV_PHASE_REFRESH : DKV_PHASE_REUSE;
    }
}

static cand *cand_new(eng *e)
{
    if (e->n_cands == e->cap_cands) {
        size_t nc = e->cap_cands ? 2 * e->cap_cands : 256;
        cand *n = realloc(e->cands, nc * sizeof *n);
        if (!n)
            return NULL;
        e->cands = n;
        e->cap_cands = nc;
    }
    cand *c = &e->cands[e->n_cands++];
    memset(c, 0, sizeof *c);
    return c;
}

/* A step is budgeted at its canvas L (dLLM-Serve's baseline), or by its predicted phase (Refresh
 * at L, Reuse at B: the phase-multiplexed scheduler). */
static uint32_t budget_canvas(const eng *e, const ereq *r, uint8_t pred)
{
    (void)e, (void)pred;
    return r->src->prompt_tokens + r->src->gen_tokens;
}

static uint32_t budget_phase(const eng *e, const ereq *r, uint8_t pred)
{
    return pred == DKV_PHASE_REUSE ? e->c.decode.block_len : budget_canvas(e, r, pred);
}

/* Adds a candidate for request ri; false when out of host memory or the request is done. */
static bool add(eng *e, uint32_t ri, uint32_t inst_id, bool admit, uint8_t pred, uint32_t bud)
{
    ereq *r = &e->rq[ri];
    cand *c = cand_new(e);
    if (!c)
        return false;
    c->r = ri;
    c->inst = inst_id;
    c->next = r->dec;
    if (!dkv_decode_next(&c->next, &c->s)) {
        e->n_cands--;
        return false;
    }
    c->admit = admit;
    c->pred_phase = pred;
    c->budget = bud;
    return true;
}

/* Running requests first, then admissions in arrival order, under the token budget (unless the
 * scheduler does not enforce it) and max_num_seqs; a whole-batch scheduler admits only when the
 * instance is idle. */
static size_t select_fcfs_order(eng *e, einst *in, const eng_sched_i *self)
{
    const dkv_engine_config *c = &e->c;
    size_t start = e->n_cands;
    uint64_t used = 0, budget = e->budget_tokens;
    bool enforce = self->enforce_budget;
    size_t n = 0;

    /* running requests first, in admission order (work-conserving: one that does not fit the
     * remaining budget is skipped this iteration, later ones may still run) */
    for (uint32_t k = 0; k < in->n_run; k++) {
        uint32_t ri = in->run[k];
        ereq *r = &e->rq[ri];
        uint8_t pred = eng_predict_phase(e, r);
        uint32_t bud = self->budget(e, r, pred);
        if (enforce && n > 0 && used + bud > budget)
            continue;
        if (add(e, ri, in->id, false, pred, bud)) {
            used += bud;
            n++;
        }
    }
    /* admissions */
    if (self->whole_batch && in->n_run > 0)
        return e->n_cands - start;  /* the batch runs to its end */
    uint32_t admitted = 0;
    for (size_t k = 0; k < in->wq_len && in->n_run + admitted < c->max_num_seqs; k++) {
        uint32_t ri = in->wq[(in->wq_head + k) % in->wq_cap];
        ereq *r = &e->rq[ri];
        uint8_t pred = eng_predict_phase(e, r);
        uint32_t bud = self->budget(e, r, pred);
        if (enforce && n > 0 && used + bud > budget) {
            if (c->first_fit)
                continue;
            break;
        }
        if (add(e, ri, in->id, true, pred, bud)) {
            used += bud;
            n++;
            admitted++;
        }
    }
    return e->n_cands - start;
}

/* ---------------------------------------------------------------- the schedulers
 * One entry per scheduler, indexed by dkv_sched_kind; the name is the first member, so this
 * table is also the names table (dkv_sched_names).  A new scheduler: an entry here (with its own
 * select function when the running-then-admissions order does not fit); a DKV_SCHED_* value in
 * engine.h is optional (Lua and the CLI use the names). */
static const eng_sched_i scheds[] = {
    [DKV_SCHED_STATIC] = {"static", select_fcfs_order, budget_canvas, false, true},
    [DKV_SCHED_FCFS] = {"fcfs", select_fcfs_order, budget_canvas, true, false},
    [DKV_SCHED_PHASE] = {"phase", select_fcfs_order, budget_phase, true, false},
};
const dkv_names dkv_sched_names = DKV_NAMES("scheduler.kind", scheds);

const char *dkv_sched_name(dkv_sched_kind k) { return dkv_names_at(&dkv_sched_names, (int)k); }

size_t eng_select(eng *e, einst *in)
{
    const eng_sched_i *k = &scheds[e->c.sched];   /* checked by dkv_engine_config_validate */
    return k->select(e, in, k);
}
