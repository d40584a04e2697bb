/* cost_l2_memo.c - the L2 replay's memo (cost.h dkv_cost_l2_memo, cost_l2_memo.h; docs/COST_MODEL.md "The replay's
 * memo").  A step's replay is a function of the few values l2_memo_key collects, the model and the GPU being the
 * memo's; runs repeat them step after step (a block's steps have the same shapes), so a hit returns the stored
 * classes' bytes, the same bits the replay gives.  Direct-mapped by an FNV-1a hash of the key; a hit compares the
 * whole key. */
#include "cost/cost_l2_memo.h"

#include <stdlib.h>
#include <string.h>

#define MEMO_SLOTS 256

const int l2_modelled[L2_MODELLED_N] = {DKV_KCLASS_QKV,      DKV_KCLASS_ATTN,     DKV_KCLASS_O,
                                        DKV_KCLASS_FFN,      DKV_KCLASS_LM_HEAD,  DKV_KCLASS_KV_STORE,
                                        DKV_KCLASS_KV_GATHER, DKV_KCLASS_ELEMENTWISE};

typedef struct memo_ent {
    uint32_t n;   /* key length (0: empty) */
    double   key[L2_MEMO_KEY];
    double   lay[L2_MODELLED_N][2], once[L2_MODELLED_N][2];   /* rd, wr */
} memo_ent;

struct dkv_cost_l2_memo {
    const dkv_model *m;   /* what the entries are valid for */
    const struct dkv_profile_info *prof;
    double   l2, parts, sms;
    uint64_t hits, misses;
    memo_ent e[MEMO_SLOTS];
};

dkv_cost_l2_memo *dkv_cost_l2_memo_new(void)
{
    return calloc(1, sizeof(dkv_cost_l2_memo));
}

void dkv_cost_l2_memo_free(dkv_cost_l2_memo *mm)
{
    free(mm);
}

void dkv_cost_l2_memo_stats(const dkv_cost_l2_memo *mm, uint64_t *hits, uint64_t *misses)
{
    *hits = mm ? mm->hits : 0, *misses = mm ? mm->misses : 0;
}

/* The step's rows, logit rows, weight streams, store flag, LM-head chunk, the KV bytes (l2_inputs), then each item's
 * logit rows (the replay's per-item norms) and each selection's rows (its selection kernels). */
uint32_t l2_memo_key(const dkv_step_plan *plan, const dkv_cost_step *cs, const l2_inputs *in, double *k)
{
    uint32_t n = 0;
    k[n++] = cs->q_rows, k[n++] = cs->logit_rows, k[n++] = cs->weight_streams, k[n++] = cs->any_store;
    k[n++] = plan->max_logit_rows, k[n++] = in->stored, k[n++] = in->own, k[n++] = in->cached, k[n++] = in->select;
    for (uint32_t i = 0; i < plan->n_items; i++)
        if (plan->items[i].logit_rows) {
            if (n + 1 > L2_MEMO_KEY)
                return 0;
            k[n++] = plan->items[i].logit_rows;
        }
    if (n + 1 > L2_MEMO_KEY)
        return 0;
    k[n++] = -1;   /* separator: the selections follow */
    for (uint32_t i = 0; in->select && i < plan->n_items; i++) {
        const dkv_step_item *it = &plan->items[i];
        if (!(it->kv_write_tokens && it->kv_select_rows))
            continue;
        if (n + 3 > L2_MEMO_KEY)
            return 0;
        k[n++] = it->q_tokens, k[n++] = it->kv_select_rows, k[n++] = it->kv_write_tokens;
    }
    return n;
}

static uint32_t slot_of(const double *k, uint32_t n)
{
    uint64_t h = 1469598103934665603ull;
    const unsigned char *b = (const unsigned char *)k;
    for (size_t i = 0; i < n * sizeof *k; i++)
        h = (h ^ b[i]) * 1099511628211ull;
    return (uint32_t)(h % MEMO_SLOTS);
}

bool l2_memo_get(dkv_cost_l2_memo *mm, const dkv_model *m, const dkv_cost_hw *hw, double parts, double sms,
                 const double *k, uint32_t n, dkv_cost_class *lay, dkv_cost_class *once, void **slot)
{
    if (mm->m != m || mm->prof != hw->profile || mm->l2 != hw->l2_bytes || mm->parts != parts || mm->sms != sms) {
        memset(mm->e, 0, sizeof mm->e);   /* another model or GPU: start over */
        mm->m = m, mm->prof = hw->profile, mm->l2 = hw->l2_bytes, mm->parts = parts, mm->sms = sms;
    }
    memo_ent *e = &mm->e[slot_of(k, n)];
    if (e->n != n || memcmp(e->key, k, n * sizeof *k) != 0) {
        *slot = e;
        return false;
    }
    mm->hits++;
    for (int i = 0; i < L2_MODELLED_N; i++) {
        int c = l2_modelled[i];
        lay[c].rd = e->lay[i][0], lay[c].wr = e->lay[i][1], once[c].rd = e->once[i][0], once[c].wr = e->once[i][1];
    }
    return true;
}

void l2_memo_put(dkv_cost_l2_memo *mm, void *slot, const double *k, uint32_t n, const dkv_cost_class *lay,
                 const dkv_cost_class *once)
{
    memo_ent *e = slot;
    mm->misses++;
    e->n = n;
    memcpy(e->key, k, n * sizeof *k);
    for (int i = 0; i < L2_MODELLED_N; i++) {
        int c = l2_modelled[i];
        e->lay[i][0] = lay[c].rd, e->lay[i][1] = lay[c].wr, e->once[i][0] = once[c].rd, e->once[i][1] = once[c].wr;
    }
}
