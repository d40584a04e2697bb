/* test_io_tiny_dllm.c - the tiny dLLM's exported weights run in core/ref exactly like the model
 * that wrote them.
 *
 * A model folder holds model.safetensors (bf16, LLaDA names; __metadata__ head_dim, rope_theta,
 * rms_eps, mask_id) and check.safetensors: for snippets i = 0, 1, 2 the canvas tokens
 * (snippet.i.tokens, F32 of integer ids), 8 positions (snippet.i.positions) and the float32 logits
 * there (snippet.i.logits, (8, vocab)), computed by the writer from the same bf16 weights:
 *   tests/data/tiny-dllm-standin/  random weights, logits from the numpy port of the training
 *                                  model (scripts/tiny_dllm_numpy.py standin ...)
 *   datasets/models/tiny-dllm/     the trained model, logits from torch in float32
 *                                  (scripts/train_tiny_dllm.py); committed, so required
 * The shapes come from the tensors (n_layers, hidden, vocab, heads, ffn) and the metadata.
 * core/ref's full bidirectional forward (no cache) must match: max |ref - file| <= 2e-3 *
 * max(1, max |logit|), and the same argmax.  The stand-in also shows that the check can fail: a
 * RoPE theta of 500000 instead of the file's gives an error far above the tolerance. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "io/safetensors.h"

#define TOL 2e-3
#define STANDIN "tests/data/tiny-dllm-standin"
#define TRAINED "datasets/models/tiny-dllm"

static const char *path_in(const char *dir, const char *name)
{
    static char buf[2][256];
    static int i;
    i ^= 1;
    snprintf(buf[i], sizeof buf[i], "%s/%s", dir, name);
    return buf[i];
}

static double meta_num(const dkv_st *st, const char *key)
{
    const char *v = dkv_st_metadata(st, key);
    if (!v)
        fail_msg("model.safetensors: __metadata__ has no '%s'", key);
    return atof(v);
}

static uint64_t dim(const dkv_st *st, const char *name, uint32_t i)
{
    const dkv_st_tensor *t = dkv_st_find(st, name);
    if (!t || t->ndim <= i)
        fail_msg("model.safetensors: tensor '%s' is missing or has fewer than %u dims", name, i + 1);
    return t->shape[i];
}

/* The model's shapes from its tensors and metadata; weights loaded into *w. */
static void load_model(const char *dir, double theta_override, dkv_ref_weights **w)
{
    dkv_st *st = NULL;
    dkv_err err = {0};
    if (dkv_st_open(path_in(dir, "model.safetensors"), &st, &err) != DKV_OK)
        fail_msg("%s", err.msg);
    dkv_model m = {0};
    snprintf(m.name, sizeof m.name, "%s", dir);
    m.head_dim = (uint32_t)meta_num(st, "head_dim");
    m.rope_theta = theta_override > 0 ? theta_override : meta_num(st, "rope_theta");
    m.mask_id = (uint32_t)meta_num(st, "mask_id");
    m.vocab = (uint32_t)dim(st, "model.transformer.wte.weight", 0);
    m.hidden = (uint32_t)dim(st, "model.transformer.wte.weight", 1);
    m.n_heads = (uint32_t)(dim(st, "model.transformer.blocks.0.q_proj.weight", 0) / m.head_dim);
    m.n_kv_heads = (uint32_t)(dim(st, "model.transformer.blocks.0.k_proj.weight", 0) / m.head_dim);
    m.ffn = (uint32_t)dim(st, "model.transformer.blocks.0.ff_proj.weight", 0);
    char name[96];
    for (;;) {
        snprintf(name, sizeof name, "model.transformer.blocks.%u.q_proj.weight", m.n_layers);
        if (!dkv_st_find(st, name))
            break;
        m.n_layers++;
    }
    m.max_len = 4096;
    m.weight_dtype = m.kv_dtype = m.act_dtype = DKV_DTYPE_BF16;
    float eps = (float)meta_num(st, "rms_eps");
    if (dkv_ref_weights_new(&m, eps, w, &err) != DKV_OK)
        fail_msg("%s", err.msg);
    uint32_t unused = 99;
    if (dkv_st_load_ref(&st, 1, DKV_ST_NAMING_LLADA, *w, &unused, &err) != DKV_OK)
        fail_msg("%s", err.msg);
    assert_int_equal(unused, 0);   /* every tensor of the file is one the ref model uses */
    dkv_st_close(st);
}

static float *read_f32(const dkv_st *st, const char *name, uint64_t *n)
{
    const dkv_st_tensor *t = dkv_st_find(st, name);
    if (!t)
        return NULL;
    float *a = malloc(t->numel * sizeof *a);
    assert_non_null(a);
    dkv_err err = {0};
    if (dkv_st_read_f32(st, t, a, t->numel, &err) != DKV_OK)
        fail_msg("%s", err.msg);
    *n = t->numel;
    return a;
}

/* Worst relative logit error over every snippet of dir/check.safetensors; *argmax_diff counts
 * positions whose argmax differs. */
static double check_dir(const char *dir, double theta_override, uint32_t *n_snip, uint32_t *argmax_diff)
{
    dkv_ref_weights *w = NULL;
    load_model(dir, theta_override, &w);
    const uint32_t C = w->m.hidden, V = w->m.vocab;
    dkv_st *ck = NULL;
    dkv_err err = {0};
    if (dkv_st_open(path_in(dir, "check.safetensors"), &ck, &err) != DKV_OK)
        fail_msg("%s", err.msg);
    double worst = 0;
    *n_snip = *argmax_diff = 0;
    for (uint32_t s = 0;; s++) {
        char nm[64];
        uint64_t L = 0, np = 0, nl = 0;
        snprintf(nm, sizeof nm, "snippet.%u.tokens", s);
        float *tokf = read_f32(ck, nm, &L);
        if (!tokf)
            break;
        snprintf(nm, sizeof nm, "snippet.%u.positions", s);
        float *posf = read_f32(ck, nm, &np);
        snprintf(nm, sizeof nm, "snippet.%u.logits", s);
        float *want = read_f32(ck, nm, &nl);
        assert_non_null(posf);
        assert_non_null(want);
        assert_int_equal(nl, np * V);
        uint32_t *tok = malloc(L * sizeof *tok);
        float *hidden = malloc(L * C * sizeof *hidden), *got = malloc(V * sizeof *got);
        assert_true(tok && hidden && got);
        for (uint64_t i = 0; i < L; i++)
            tok[i] = (uint32_t)tokf[i];
        if (dkv_ref_forward(w, tok, (uint32_t)L, hidden, &err) != DKV_OK)
            fail_msg("%s", err.msg);
        double scale = 1, maxerr = 0;
        for (uint64_t j = 0; j < nl; j++)
            scale = fmax(scale, fabs(want[j]));
        for (uint64_t p = 0; p < np; p++) {
            uint32_t pos = (uint32_t)posf[p];
            assert_true(pos < L);
            dkv_ref_matmul(got, hidden + (size_t)pos * C, w->lm_head, NULL, 1, C, V);
            uint32_t ag = 0, aw = 0;
            for (uint32_t v = 0; v < V; v++) {
                maxerr = fmax(maxerr, fabs((double)got[v] - want[p * V + v]));
                if (got[v] > got[ag])
                    ag = v;
                if (want[p * V + v] > want[p * V + aw])
                    aw = v;
            }
            *argmax_diff += ag != aw;
        }
        print_message("%s snippet %u: %llu tokens, max |ref - file| = %.3g, logit scale %.3g\n", dir, s,
                      (unsigned long long)L, maxerr, scale);
        worst = fmax(worst, maxerr / scale);
        ++*n_snip;
        free(tokf), free(posf), free(want), free(tok), free(hidden), free(got);
    }
    dkv_st_close(ck);
    dkv_ref_weights_free(w);
    return worst;
}

static void test_standin_matches_numpy(void **state)
{
    (void)state;
    uint32_t n = 0, diff = 0;
    double e = check_dir(STANDIN, 0, &n, &diff);
    assert_int_equal(n, 3);
    assert_true(e <= TOL);
    assert_int_equal(diff, 0);
    /* the check can fail: the wrong RoPE base is caught */
    double bad = check_dir(STANDIN, 500000, &n, &diff);
    print_message("stand-in with rope_theta 500000: relative error %.3g\n", bad);
    assert_true(bad > 10 * TOL);
}

static void test_trained_matches_torch(void **state)
{
    (void)state;
    if (access(TRAINED "/model.safetensors", R_OK) != 0)
        fail_msg("%s/model.safetensors is missing (it is committed; scripts/train_tiny_dllm.py makes it)", TRAINED);
    uint32_t n = 0, diff = 0;
    double e = check_dir(TRAINED, 0, &n, &diff);
    print_message("trained model: relative error %.3g (tolerance %g)\n", e, TOL);
    assert_int_equal(n, 3);
    assert_true(e <= TOL);
    assert_int_equal(diff, 0);
    /* trained weights are far from uniform: the wrong RoPE base is caught here too */
    double bad = check_dir(TRAINED, 500000, &n, &diff);
    print_message("trained model with rope_theta 500000: relative error %.3g\n", bad);
    assert_true(bad > 10 * TOL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_standin_matches_numpy),
        cmocka_unit_test(test_trained_matches_torch),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
