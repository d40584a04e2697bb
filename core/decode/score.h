/* score.h - teacher-forced held-out scoring (dkv.execute's opts.targets): the metric arithmetic
 * every executing backend (cpu/, cuda/) applies to the fp32 logit rows of a block after its LM
 * head, so the two backends' scores have one definition (docs/CPU.md, "Quality metrics").
 *
 * A request's generated positions have known target tokens (its true continuation).  The block
 * is uncovered as in generation: at each step the unmask rule's count n of the most confident
 * masked positions (softmax probability of the row's argmax; ties to the lower position) are
 * committed, but with the TARGET token instead of the argmax (teacher forcing), and each is
 * scored once, at that step, under the KV state the cache policy left:
 *
 *     nll  = -log2 softmax(z)[target]      (bits; one token = one byte with the byte tokenizer)
 *     correct = (argmax z == target)
 *
 * summed per request (dkv_score); bits per byte = nll / n, accuracy = correct / n.
 *
 *     uint32_t am; float conf, lse0;
 *     dkv_score_row(z, V, &am, &conf, &lse0);            // the row statistics (also the LM head's)
 *     dkv_score_block(logits, NULL, B, V, tok, tgt, mask_id, n_unmask, &score[req], &n, &err);
 *
 * Pure computation. */
#ifndef DKV_DECODE_SCORE_H
#define DKV_DECODE_SCORE_H

#include <stddef.h>
#include <stdint.h>

#include "util/status.h"

/* Held-out scores of one request (or a sum of requests). */
typedef struct dkv_score {
    uint32_t n;         /* positions scored */
    uint32_t correct;   /* argmax == target at the step the position was committed */
    double   nll_bits;  /* sum over them of -log2 softmax(z)[target] */
} dkv_score;

/* One logit row z (V > 0): its argmax (lowest index of the maximum), the softmax probability of
 * the argmax (conf, the unmask rule's ranking key) and lse0 = log sum_v exp(z[v] - z[argmax])
 * (natural log, summed in double), so that ln softmax(z)[v] = z[v] - z[argmax] - lse0.  Any
 * output may be NULL. */
void dkv_score_row(const float *z, uint32_t V, uint32_t *argmax, float *conf, float *lse0);

/* Teacher-forced unmask of one block of B positions: logits (B, V) are the fp32 logit rows of
 * the block's positions, tok (B) the block's tokens before the step (mask_id where masked),
 * target (B) the target tokens of the same positions, conf (B) each row's dkv_score_row conf
 * (a caller that has them already; NULL: computed here from logits).  The n_unmask most
 * confident masked positions (ties to the lower position; fewer when fewer are masked) take
 * their target, each scored into *acc.  *n_done (may be NULL) = positions committed.  Errors
 * (DKV_EINVAL, naming the position): a target >= V or equal to mask_id at a position it
 * commits; DKV_ERANGE: the row it scores is not finite (NaN/inf logits: a NaN bits per byte is
 * never reported); tok is then left as it was for that position and later ones. */
dkv_status dkv_score_block(const float *logits, const float *conf, uint32_t B, uint32_t V, uint32_t *tok,
                           const uint32_t *target, uint32_t mask_id, uint32_t n_unmask, dkv_score *acc, uint32_t *n_done,
                           dkv_err *err);

/* acc += s (NULL s: no-op). */
void dkv_score_add(dkv_score *acc, const dkv_score *s);
/* The sum of n scores. */
dkv_score dkv_score_total(const dkv_score *s, size_t n);
/* nll_bits / n, and correct / n: NAN when n = 0. */
double dkv_score_bits_per_byte(const dkv_score *s);
double dkv_score_accuracy(const dkv_score *s);

#endif
