/* test_cost.c - core/cost: the counts of a step plan per kernel class. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cost/cost.h"
#include "cost/cost_l2_edge.h"
#include "cost/profile.h"

static dkv_model llada(void)
{
    dkv_model m = {.name = "llada-8b", .n_layers = 32, .hidden = 4096, .ffn = 12288, .n_heads = 32,
                   .n_kv_heads = 32, .head_dim = 128, .vocab = 126464, .mask_id = 126336, .max_len = 4096,
                   .rope_theta = 500000, .weight_dtype = DKV_DTYPE_BF16, .kv_dtype = DKV_DTYPE_BF16,
                   .act_dtype = DKV_DTYPE_BF16};
    return m;
}

static dkv_model dream(void)
{
    dkv_model m = {.name = "dream-7b", .n_layers = 28, .hidden = 3584, .ffn = 18944, .n_heads = 28,
                   .n_kv_heads = 4, .head_dim = 128, .vocab = 152064, .mask_id = 151666, .max_len = 4096,
                   .rope_theta = 1e6, .qkv_bias = true, .weight_dtype = DKV_DTYPE_BF16,
                   .kv_dtype = DKV_DTYPE_BF16, .act_dtype = DKV_DTYPE_BF16};
    return m;
}

static double rel(double a, double b) { return fabs(a - b) / (fabs(b) > 0 ? fabs(b) : 1); }

/* One dense item (no cache: q = a, nothing stored, all rows to the LM head): the plan's FLOPs are
 * the model's forward FLOPs (the class formulas summed by another path), for two models. */
static void test_dense_plan_is_forward_flops(void **state)
{
    (void)state;
    dkv_model ms[2] = {llada(), dream()};
    for (int k = 0; k < 2; k++) {
        const dkv_model *m = &ms[k];
        dkv_step_item it = {.q_tokens = 640, .kv_tokens = 640, .logit_rows = 128};
        dkv_step_plan p = {.items = &it, .n_items = 1, .max_logit_rows = 64};
        dkv_cost_step cs;
        dkv_cost_step_init(&cs);
        assert_int_equal(dkv_cost_count(m, &p, &cs, NULL), DKV_OK);
        dkv_cost_totals t;
        dkv_cost_step_totals(&cs, &t);
        /* the elementwise kernels' 10 FLOPs per row and hidden unit are not in the model's forward */
        double el = m->n_layers * 10.0 * 640 * m->hidden;
        assert_true(rel(t.flops - el, dkv_model_forward_flops(m, 640, 640, 128)) < 1e-12);
        assert_true(cs.logit_chunks == 2);
        /* two chunks: the LM-head weights are read twice */
        assert_true(cs.once[DKV_KCLASS_LM_HEAD].rd >= 2.0 * m->vocab * m->hidden * 2);
        dkv_cost_step_free(&cs);
    }
}

/* The LM head's bytes, term by term (cuda/backend_fwd.c + cuda/lm_head.cu): per logit row the
 * final norm reads and writes a hidden row (bf16), each chunk streams the LM-head weights, the
 * GEMM reads the normed rows and writes fp32 logits, the argmax kernel reads the fp32 logits back
 * and writes an index and a confidence (4 + 4 bytes).  bf16 activations do not make the logits
 * bf16: a count at 2 bytes per logit fails here. */
static void test_lm_head_logits_are_fp32(void **state)
{
    (void)state;
    dkv_model ms[2] = {llada(), dream()};
    for (int k = 0; k < 2; k++) {
        const dkv_model *m = &ms[k];
        const double R = 96, C = 64, V = m->vocab, d = m->hidden;
        dkv_step_item it = {.q_tokens = 96, .kv_tokens = 96, .logit_rows = 96};
        dkv_step_plan p = {.items = &it, .n_items = 1, .max_logit_rows = 64};
        dkv_cost_step cs;
        dkv_cost_step_init(&cs);
        assert_int_equal(dkv_cost_count(m, &p, &cs, NULL), DKV_OK);
        double chunks = ceil(R / C);
        double rd = R * d * 2 + chunks * V * d * 2 + R * d * 2 + R * V * 4.0;
        double wr = R * d * 2 + R * V * 4.0 + R * 8.0;
        assert_true(rel(cs.once[DKV_KCLASS_LM_HEAD].rd, rd) < 1e-12);
        assert_true(rel(cs.once[DKV_KCLASS_LM_HEAD].wr, wr) < 1e-12);
        dkv_kernel_record r;
        assert_true(dkv_cost_class_record(&cs, DKV_KCLASS_LM_HEAD, 0, &r));
        assert_true(r.write_bytes == (uint64_t)wr);
        dkv_cost_step_free(&cs);
    }
}

/* The L2 replay (dkv_cost_count_hw) on a dual Reuse step of LLaDA-8B: q 32 rows, 288 keys of
 * which 256 cached, the 32 rows stored. */
static const dkv_step_item REUSE = {.q_tokens = 32, .kv_tokens = 288, .kv_cached_tokens = 256, .kv_write_tokens = 32,
                                    .logit_rows = 32};

/* No L2 (hw NULL or l2_bytes 0): dkv_cost_count's bytes, field for field. */
static void test_l2_off_is_the_cold_count(void **state)
{
    (void)state;
    dkv_model m = llada();
    dkv_step_item it = REUSE;
    dkv_step_plan p = {.items = &it, .n_items = 1};
    dkv_cost_step a, b, c;
    dkv_cost_step_init(&a), dkv_cost_step_init(&b), dkv_cost_step_init(&c);
    dkv_cost_hw off = {.l2_bytes = 0, .n_sms = 132};
    assert_int_equal(dkv_cost_count(&m, &p, &a, NULL), DKV_OK);
    assert_int_equal(dkv_cost_count_hw(&m, NULL, &p, &b, NULL), DKV_OK);
    assert_int_equal(dkv_cost_count_hw(&m, &off, &p, &c, NULL), DKV_OK);
    for (int k = 0; k < DKV_KCLASS_N; k++) {
        assert_true(a.layer[k].rd == b.layer[k].rd && a.layer[k].wr == c.layer[k].wr);
        assert_true(a.once[k].rd == c.once[k].rd && a.once[k].wr == b.once[k].wr);
    }
    dkv_cost_step_free(&a), dkv_cost_step_free(&b), dkv_cost_step_free(&c);
}

/* An L2 larger than everything the step touches: per layer only the weights, the norm weights and
 * the cached KV (written in earlier steps) come from HBM, and nothing dirty is ever pushed out,
 * so no class writes HBM; the cold count has the activations too. */
static void test_l2_holding_everything_reads_only_weights_and_cache(void **state)
{
    (void)state;
    dkv_model m = llada();
    dkv_step_item it = REUSE;
    dkv_step_plan p = {.items = &it, .n_items = 1};
    dkv_cost_step cs, cold;
    dkv_cost_step_init(&cs), dkv_cost_step_init(&cold);
    dkv_cost_hw big = {.l2_bytes = 1e15, .l2_partitions = 1, .n_sms = 132};
    assert_int_equal(dkv_cost_count_hw(&m, &big, &p, &cs, NULL), DKV_OK);
    assert_int_equal(dkv_cost_count(&m, &p, &cold, NULL), DKV_OK);
    const double d = 4096, f = 12288, wb = 2, kv_tok = 2.0 * 4096 * 2;
    assert_true(rel(cs.layer[DKV_KCLASS_QKV].rd, d * 3 * 4096 * wb) < 1e-12);
    assert_true(rel(cs.layer[DKV_KCLASS_O].rd, d * d * wb) < 1e-12);
    assert_true(rel(cs.layer[DKV_KCLASS_FFN].rd, 3 * d * f * wb) < 1e-12);
    assert_true(rel(cs.layer[DKV_KCLASS_ATTN].rd, 256 * kv_tok) < 1e-12);
    assert_true(cs.layer[DKV_KCLASS_KV_STORE].rd == 0);
    assert_true(rel(cs.layer[DKV_KCLASS_ELEMENTWISE].rd, 2 * d * wb) < 1e-12);
    for (int k = 0; k < DKV_KCLASS_N; k++) {
        assert_true(cs.layer[k].wr == 0);
        assert_true(cs.layer[k].rd <= cold.layer[k].rd);
        /* FLOPs and launches are the cold count's; the roofline streams what reaches HBM */
        assert_true(cs.layer[k].flops == cold.layer[k].flops && cs.layer[k].launches == cold.layer[k].launches);
        assert_true(cs.layer[k].bytes_fast <= cold.layer[k].bytes_fast);
    }
    /* the attention's only HBM traffic is its cached KV, timed as the segment it is */
    assert_true(cs.layer[DKV_KCLASS_ATTN].bytes_fast == 0);
    assert_true(rel(cs.layer[DKV_KCLASS_QKV].bytes_fast, d * 3 * 4096 * wb) < 1e-12);
    assert_true(cs.once[DKV_KCLASS_LM_HEAD].wr == 0);
    dkv_cost_step_free(&cs), dkv_cost_step_free(&cold);
}

/* A GEMM whose weight stream after a wave exceeds the L2 pushes its own earlier waves' output out:
 * LLaDA-8B, a Refresh of 288 rows on the H200 (132 SMs, 60 MiB in 2 halves: 31.5 MB).  gate+up:
 * 24576 / 128 x ceil(288 / 144) = 384 tiles, 3 waves of 67 MB of weights each, so the SwiGLU
 * finds only the last third of its 14.2 MB input in L2; the norms read the residual the previous
 * GEMM's split-K reduction just wrote (hits) and their weights.  The layer's elementwise reads are
 * 2 d wb + 2/3 x 2 Q f ab; with the output written at the end in one piece they would be 2 d wb. */
static void test_l2_gemm_waves_push_their_output_out(void **state)
{
    (void)state;
    dkv_model m = llada();
    dkv_step_item it = {.q_tokens = 288, .kv_tokens = 288, .kv_write_tokens = 288, .logit_rows = 32};
    dkv_step_plan p = {.items = &it, .n_items = 1};
    dkv_cost_step cs;
    dkv_cost_step_init(&cs);
    dkv_cost_hw h200 = {.l2_bytes = 60.0 * 1048576, .l2_partitions = 2, .n_sms = 132};
    assert_int_equal(dkv_cost_count_hw(&m, &h200, &p, &cs, NULL), DKV_OK);
    const double d = 4096, f = 12288, Q = 288;
    assert_true(rel(cs.layer[DKV_KCLASS_ELEMENTWISE].rd, 2 * d * 2 + 2.0 / 3.0 * 2 * Q * f * 2) < 1e-9);
    dkv_cost_step_free(&cs);
}

/* A small model (weights of a few MB) for the L2 rules below, on an L2 of one partition. */
static dkv_model tiny(void)
{
    dkv_model m = {.name = "tiny", .n_layers = 2, .hidden = 512, .ffn = 1536, .n_heads = 8, .n_kv_heads = 8,
                   .head_dim = 64, .vocab = 512, .mask_id = 511, .max_len = 4096, .rope_theta = 10000,
                   .weight_dtype = DKV_DTYPE_BF16, .kv_dtype = DKV_DTYPE_BF16, .act_dtype = DKV_DTYPE_BF16};
    return m;
}

/* The fused RoPE + KV store (cuda/fused_rope_store.cu) rotates q and k in place and writes the
 * rows' K and V into the pool: four row-sized writes.  With an L2 of 1 kB nothing stays, so the
 * class writes all four (a count without the in-place k has three). */
static void test_l2_store_writes_rotated_k_in_place(void **state)
{
    (void)state;
    dkv_model m = llada();
    dkv_step_item it = {.q_tokens = 288, .kv_tokens = 288, .kv_write_tokens = 288, .logit_rows = 32};
    dkv_step_plan p = {.items = &it, .n_items = 1};
    dkv_cost_step cs;
    dkv_cost_step_init(&cs);
    dkv_cost_hw small = {.l2_bytes = 1000, .l2_partitions = 1, .n_sms = 132};
    assert_int_equal(dkv_cost_count_hw(&m, &small, &p, &cs, NULL), DKV_OK);
    const double row = 288.0 * 4096 * 2;   /* q, k, K or V of the step's rows */
    assert_true(fabs(cs.layer[DKV_KCLASS_KV_STORE].wr - 4 * row) <= 2000);
    dkv_cost_step_free(&cs);
}

/* The L2 keeps at most DKV_COST_L2_DIRTY_FRAC of itself dirty (the oldest past it go to HBM and
 * stay, clean).  The tiny model's Refresh of 1,024 rows on an L2 of 64 MB (one partition) fits:
 * only weights come from HBM (as with an L2 holding everything); but a layer writes ~26 MB of
 * distinct buffers (x, h, qkv, att, gate|up, ff, split-K partials), more than 64 / 3 MB, so some
 * of it reaches HBM (without the bound: nothing). */
static void test_l2_dirty_lines_are_bounded(void **state)
{
    (void)state;
    dkv_model m = tiny();
    dkv_step_item it = {.q_tokens = 1024, .kv_tokens = 1024, .logit_rows = 32};
    dkv_step_plan p = {.items = &it, .n_items = 1};
    dkv_cost_step cs;
    dkv_cost_step_init(&cs);
    dkv_cost_hw l2 = {.l2_bytes = 64e6, .l2_partitions = 1, .n_sms = 132};
    assert_int_equal(dkv_cost_count_hw(&m, &l2, &p, &cs, NULL), DKV_OK);
    const double d = 512, f = 1536;
    assert_true(rel(cs.layer[DKV_KCLASS_QKV].rd, d * 3 * d * 2) < 1e-12);
    assert_true(rel(cs.layer[DKV_KCLASS_O].rd, d * d * 2) < 1e-12);
    assert_true(rel(cs.layer[DKV_KCLASS_FFN].rd, 3 * d * f * 2) < 1e-12);
    double wr = 0;
    for (int k = 0; k < DKV_KCLASS_N; k++)
        wr += cs.layer[k].wr;
    assert_true(wr > 1e6);
    dkv_cost_step_free(&cs);
}

/* A kernel that walks its rows keeps, of what it read and wrote, its last rows' share: the SwiGLU
 * reads gate|up (G = 6.3 MB at 1,024 rows of the tiny model) and writes ff (F = 3.1 MB) row by
 * row, so on an L2 of C = 6 MB (G + F > C > F) it ends holding C F / (G + F) of ff (its reads and
 * writes in proportion to their bytes), not all of it (to within one of the replay's ROW_SLICES = 8
 * slices of ff).
 * The down projection (split-K: 24 tiles) then reads the residual x (pushed out by gate+up: 1 MB,
 * evicting as much of the walk's oldest slices, gate|up and ff in proportion since session 32, when the
 * walk's slices stopped being merged per buffer), then ff: its misses are F - C F / (G + F) (less up to
 * F / 8) plus at most x F / (G + F); the gate+up GEMM finds its input h in L2, the split-K partials
 * (10.5 MB) miss beyond C.  FFN reads: weights + x + those ff misses + partials - C.  (A SwiGLU writing ff
 * after reading gate|up keeps all of ff: no ff misses.) */
static void test_l2_rows_kernel_keeps_its_last_rows(void **state)
{
    (void)state;
    dkv_model m = tiny();
    dkv_step_item it = {.q_tokens = 1024, .kv_tokens = 1024, .logit_rows = 32};
    dkv_step_plan p = {.items = &it, .n_items = 1};
    dkv_cost_step cs;
    dkv_cost_step_init(&cs);
    const double C = 6e6;
    dkv_cost_hw l2 = {.l2_bytes = C, .l2_partitions = 1, .n_sms = 132};
    assert_int_equal(dkv_cost_count_hw(&m, &l2, &p, &cs, NULL), DKV_OK);
    const double d = 512, f = 1536, Q = 1024, F = Q * f * 2, G = 2 * F, x = Q * d * 2, ws = 5 * Q * d * 4;
    double want = 3 * d * f * 2 + x + (F - C * F / (G + F)) + (ws - C);
    assert_true(cs.layer[DKV_KCLASS_FFN].rd <= (want + x * F / (G + F)) * (1 + 1e-12));
    assert_true(cs.layer[DKV_KCLASS_FFN].rd >= want - F / 8);
    dkv_cost_step_free(&cs);
}

/* A large-M GEMM's row group reads its own rows: the input's other rows stay as old as they were,
 * so its weight stream pushes them out (dirty ones to HBM) during the GEMM.  LLaDA-8B's Refresh of
 * 2 x 1,056 rows (all stored) on the H200, kernels of a layer (dkv_cost_hw.trace): the attention
 * leaves part of its output (17.3 MB) dirty; the O projection (2 row groups, its operands beyond
 * the L2) writes it back with its own output, and the norm after it, which reads the residual and
 * writes h (17.3 MB; the L2 holds 31.5), has nothing dirty of the attention left to push out: it
 * writes under a quarter of h (had the second group's read refreshed the whole input, the
 * attention's output would stay dirty through the GEMM and the norm would write ~11 MB of it). */
static void test_l2_gemm_group_leaves_other_rows_old(void **state)
{
    (void)state;
    dkv_model m = llada();
    dkv_step_item it[2] = {{.q_tokens = 1056, .kv_tokens = 1056, .kv_write_tokens = 1056, .logit_rows = 32},
                           {.q_tokens = 1056, .kv_tokens = 1056, .kv_write_tokens = 1056, .logit_rows = 32}};
    dkv_step_plan p = {.items = it, .n_items = 2};
    dkv_cost_step cs;
    dkv_cost_step_init(&cs);
    dkv_cost_l2_trace tr;
    dkv_cost_hw h200 = {.l2_bytes = 60.0 * 1048576, .l2_partitions = 2, .n_sms = 132, .trace = &tr};
    assert_int_equal(dkv_cost_count_hw(&m, &h200, &p, &cs, NULL), DKV_OK);
    /* norm, qkv, store, attention, O, norm, gate+up, SwiGLU, down; then the step's end */
    static const dkv_kernel_class want[] = {DKV_KCLASS_ELEMENTWISE, DKV_KCLASS_QKV, DKV_KCLASS_KV_STORE,
                                            DKV_KCLASS_ATTN, DKV_KCLASS_O, DKV_KCLASS_ELEMENTWISE,
                                            DKV_KCLASS_FFN, DKV_KCLASS_ELEMENTWISE, DKV_KCLASS_FFN};
    assert_true(tr.n_layer == 9 && tr.n_start == 2 && tr.dropped == 0);
    for (int i = 0; i < 9; i++)
        assert_int_equal(tr.k[tr.n_start + i].kind, want[i]);
    const double h = 2112.0 * 4096 * 2;
    double sum = 0;
    for (uint32_t i = 0; i < 9; i++)
        sum += tr.k[tr.n_start + i].wr;
    assert_true(rel(sum, cs.layer[DKV_KCLASS_QKV].wr + cs.layer[DKV_KCLASS_KV_STORE].wr + cs.layer[DKV_KCLASS_ATTN].wr +
                             cs.layer[DKV_KCLASS_O].wr + cs.layer[DKV_KCLASS_FFN].wr +
                             cs.layer[DKV_KCLASS_ELEMENTWISE].wr) < 1e-12);
    assert_true(tr.k[tr.n_start + 5].wr < 0.25 * h);
    assert_true(tr.k[tr.n_start + 4].wr > h);   /* the O projection: its output and the attention's leftovers */
    dkv_cost_step_free(&cs);
}

/* The attention walks heads across rows the RoPE wrote row by row, so the inputs resident at its start are
 * replaced as it goes (docs/COST_MODEL.md "The attention's walk across heads").  LLaDA-8B's Refresh of 1,664
 * rows without a store (a sparse request's dense step) on the H200 (C = 31.5 MB): the RoPE leaves the L2
 * holding almost only the attention's inputs (q and k, 27.3 MB, and some of v: the replay keeps 28.2 MB of
 * them and 3.3 MB of other lines), so of the B = 40.9 MB read R is about C and J about 0; with its output
 * W = 13.6 MB entering too (T = B + W), the reads are then C ln(R / T + (1 - R / T) exp(T / C)) - W = 20.6 MB
 * per layer (the replay: 21.1, within 5 %; Nsight Compute measured 21.1 at val:w3:sparse, device call 9),
 * where counting every resident byte as a hit gives about B - C = 9.4 MB (the replay before: 12.7).  Dream-7B's
 * inputs at the same rows (B = 15.3 MB with its 4 KV heads) fit beside its output: the lines entering replace
 * other lines first, so it reads only what the kernels before did not leave, 1.4 MB per layer (Nsight
 * Compute: 1.6 at Dream's val:w3:sparse); replacing its inputs from the start would make it 2.9. */
static void test_l2_attention_walks_heads(void **state)
{
    (void)state;
    dkv_cost_hw h200 = {.l2_bytes = 60.0 * 1048576, .l2_partitions = 2, .n_sms = 132};
    const double C = 60.0 * 1048576 / 2, Q = 1664;
    for (int mi = 0; mi < 2; mi++) {
        dkv_model m = mi ? dream() : llada();
        dkv_step_item it = {.q_tokens = (uint32_t)Q, .kv_tokens = (uint32_t)Q, .logit_rows = 32};
        dkv_step_plan p = {.items = &it, .n_items = 1};
        dkv_cost_step cs;
        dkv_cost_step_init(&cs);
        dkv_cost_l2_trace tr;
        h200.trace = &tr;
        assert_int_equal(dkv_cost_count_hw(&m, &h200, &p, &cs, NULL), DKV_OK);
        /* norm, qkv, RoPE (no store), attention */
        assert_true(tr.n_layer > 3 && tr.k[tr.n_start + 2].kind == DKV_KCLASS_ELEMENTWISE && tr.k[tr.n_start + 3].kind == DKV_KCLASS_ATTN);
        const double hq = (double)m.n_heads * m.head_dim, hkv = (double)m.n_kv_heads * m.head_dim;
        const double B = Q * (hq + 2 * hkv) * 2, W = Q * hq * 2, T = B + W;
        if (mi == 0) {
            double want = C * log(C / T + (1 - C / T) * exp(T / C)) - W;
            assert_true(rel(tr.k[tr.n_start + 3].rd, want) < 0.05);
            assert_true(tr.k[tr.n_start + 3].rd > 2 * (B - C));
        } else {
            assert_true(tr.k[tr.n_start + 3].rd < 0.1 * B);
        }
        assert_true(rel(cs.layer[DKV_KCLASS_ATTN].rd, tr.k[tr.n_start + 3].rd) < 1e-12);
        dkv_cost_step_free(&cs);
    }
}

/* A walk that reads more than the L2 holds keeps its reads and writes in proportion to their bytes: LLaDA-8B's
 * SwiGLU at 2,400 rows on the H200 (C = 31.5 MB) reads gate|up, G = 118 MB, and writes ff, F = 59 MB, so it
 * ends holding C F / (G + F) = 10.5 MB of ff and writes the rest back during the walk: F - 10.5 = 48.5 MB
 * (Nsight Compute: 49.2 MB per layer at val:w7:prefix, device call 73); with its reads entering as at most C
 * (the replay before session 21) it kept 21 MB dirty (the dirty bound) and wrote 38. */
static void test_l2_streaming_walk_writes_back_its_output(void **state)
{
    (void)state;
    dkv_model m = llada();
    dkv_step_item it = {.q_tokens = 2400, .kv_tokens = 2400, .logit_rows = 32};
    dkv_step_plan p = {.items = &it, .n_items = 1};
    dkv_cost_step cs;
    dkv_cost_step_init(&cs);
    dkv_cost_l2_trace tr;
    dkv_cost_hw h200 = {.l2_bytes = 60.0 * 1048576, .l2_partitions = 2, .n_sms = 132, .trace = &tr};
    assert_int_equal(dkv_cost_count_hw(&m, &h200, &p, &cs, NULL), DKV_OK);
    /* norm, qkv, RoPE, attention, O, norm, gate+up, SwiGLU */
    assert_true(tr.n_layer > 7 && tr.k[tr.n_start + 6].kind == DKV_KCLASS_FFN && tr.k[tr.n_start + 7].kind == DKV_KCLASS_ELEMENTWISE);
    const double C = 60.0 * 1048576 / 2, F = 2400.0 * 12288 * 2, G = 2 * F;
    assert_true(rel(tr.k[tr.n_start + 7].wr, F - C * F / (G + F)) < 0.05);
    dkv_cost_step_free(&cs);
}

/* A read of a part of a buffer (the selection's pack: the kept rows of each request's K and V) hits the
 * buffer's resident share, not its first bytes.  LLaDA-8B, 4 requests of 416 rows, each selecting 208 rows
 * to keep (val:w3:sparse's selecting step) on the H200: after the RoPE the L2 holds all of q and k but under
 * a third of v (13.6 MB), so each pack misses about two thirds of the 1.7 MB of V it reads (and the scores
 * and selection scratch hit): more than half of that, where a first-bytes hit count had none (a resident v
 * of 4.2 MB covers 1.7 MB).  Nsight Compute measured 1.36-1.58 MB read per pack. */
/* The trace keeps the step's kernels in launch order up to DKV_COST_L2_TRACE_MAX and counts the rest as dropped
 * (the simulator turns that into an error, sim/sim.c): 900 selecting items make a layer of 9 + 5 x 900 kernels.
 * The class bytes do not depend on the trace: the same plan counted without one gives them to the byte. */
static void test_l2_trace_counts_what_it_drops(void **state)
{
    (void)state;
    dkv_model m = llada();
    enum { N = 900 };
    dkv_step_item *it = calloc(N, sizeof *it);
    assert_non_null(it);
    for (int i = 0; i < N; i++)
        it[i] = (dkv_step_item){.q_tokens = 32, .kv_tokens = 32, .kv_write_tokens = 16, .kv_select_rows = 32,
                                .logit_rows = 32};
    dkv_step_plan p = {.items = it, .n_items = N};
    dkv_cost_step cs, ref;
    dkv_cost_step_init(&cs), dkv_cost_step_init(&ref);
    dkv_cost_l2_trace *tr = malloc(sizeof *tr);
    assert_non_null(tr);
    dkv_cost_hw h200 = {.l2_bytes = 60.0 * 1048576, .l2_partitions = 2, .n_sms = 132, .trace = tr};
    assert_int_equal(dkv_cost_count_hw(&m, &h200, &p, &cs, NULL), DKV_OK);
    assert_int_equal(tr->n, DKV_COST_L2_TRACE_MAX);
    assert_int_equal(tr->n_start, 2);
    assert_true(tr->dropped > 9 + 5 * N + 2 - DKV_COST_L2_TRACE_MAX);
    h200.trace = NULL;
    assert_int_equal(dkv_cost_count_hw(&m, &h200, &p, &ref, NULL), DKV_OK);
    for (int c = 0; c < DKV_KCLASS_N; c++)
        assert_true(cs.layer[c].wr == ref.layer[c].wr && cs.layer[c].rd == ref.layer[c].rd);
    free(tr);
    free(it);
    dkv_cost_step_free(&cs), dkv_cost_step_free(&ref);
}

static void test_l2_part_of_a_buffer_hits_its_share(void **state)
{
    (void)state;
    dkv_model m = llada();
    dkv_step_item it[4];
    for (int i = 0; i < 4; i++)
        it[i] = (dkv_step_item){.q_tokens = 416, .kv_tokens = 416, .kv_write_tokens = 208, .kv_select_rows = 32,
                                .logit_rows = 32};
    dkv_step_plan p = {.items = it, .n_items = 4};
    dkv_cost_step cs;
    dkv_cost_step_init(&cs);
    dkv_cost_l2_trace tr;
    dkv_cost_hw h200 = {.l2_bytes = 60.0 * 1048576, .l2_partitions = 2, .n_sms = 132, .trace = &tr};
    assert_int_equal(dkv_cost_count_hw(&m, &h200, &p, &cs, NULL), DKV_OK);
    const double v_keep = 208.0 * 4096 * 2;
    int packs = 0;
    for (uint32_t i = 0; i + 1 < tr.n; i++)   /* scores, row stats, col sums, top-k, pack: the pack is the 5th */
        if (tr.k[i].kind == DKV_KCLASS_KV_GATHER && (++packs) % 5 == 0) {
            assert_true(tr.k[i].rd > 0.5 * v_keep);
            assert_true(tr.k[i].rd < 2 * v_keep);
        }
    assert_int_equal(packs, 20);
    dkv_cost_step_free(&cs);
}

/* How the replay tiles a GEMM (dkv_cost_gemm_tiles, 132 SMs): split-K for few tiles; one group
 * up to DKV_COST_GEMM_GROUP_ROWS rows, its waves the tiles over the SMs rounded; larger M in groups
 * of 1152 rows (6 row tiles of 192) across 132 / 6 = 22 column tiles, so LLaDA-8B's gate+up at
 * 2,112 rows (the shape Nsight Compute measured at val:w2:sparse) is 2 groups x 9 column waves. */
static void test_gemm_tiles(void **state)
{
    (void)state;
    dkv_cost_gemm_plan g;
    /* split-K as cuBLAS chose it at val:w1:dual / w2:sparse: the O projection (K = N) at 32 rows
     * over 64 tiles of 64 x 32 (2 splits), not at 64 rows (128 such tiles); the down projection
     * (K = 3 N) over its 32 tiles of 128 weight rows (4 splits) */
    dkv_cost_gemm_tiles(32, 4096, 4096, 132, 0, &g);
    assert_true(g.tile_rows == 32 && g.tiles_m == 1 && g.tiles_n == 32 && g.splits == 2);
    dkv_cost_gemm_tiles(64, 4096, 4096, 132, 0, &g);
    assert_true(g.splits == 0 && g.groups == 1 && g.col_waves == 1);
    dkv_cost_gemm_tiles(32, 4096, 12288, 132, 0, &g);
    assert_true(g.splits == 4);
    dkv_cost_gemm_tiles(288, 4096, 12288, 132, 0, &g);   /* 32 x 2 tiles of 144 rows */
    assert_true(g.splits == 2);
    dkv_cost_gemm_tiles(288, 12288, 4096, 132, 0, &g);   /* 2 x 96 tiles, one group, round(192 / 132) waves */
    assert_true(g.tile_rows == 144 && g.tiles_m == 2 && g.splits == 0 && g.groups == 1 && g.col_waves == 1);
    dkv_cost_gemm_tiles(2112, 24576, 4096, 132, 0, &g);
    assert_true(g.tile_rows == 192 && g.tiles_m == 11 && g.tiles_n == 192 && g.splits == 0);
    assert_true(g.group_rows == 6 && g.groups == 2 && g.col_waves == 9);
    assert_true(rel(g.group_cols, 192.0 / 9) < 1e-12);
    dkv_cost_gemm_tiles(1664, 4096, 4096, 132, 0, &g);   /* 9 row tiles of 192 (184.9 rounded up to 16) */
    assert_true(g.tile_rows == 192 && g.tiles_m == 9 && g.groups == 2 && g.col_waves == 2);
    /* the group is in rows: smaller tiles, more of them per group, still at most 1152 rows */
    dkv_cost_gemm_tiles(1100, 4096, 4096, 132, 0, &g);   /* 6 tiles of 184 rows: one group */
    assert_true(g.tiles_m == 6 && g.groups == 1);
    assert_true(g.group_rows * g.tile_rows <= DKV_COST_GEMM_GROUP_ROWS);
    /* at most 64 rows cuBLAS widens the weight tiles to run one wave (Nsight Compute, device call 56:
     * Dream-7B's gate|up, n = 37,888, 384 x 32 tiles at 32 rows, 320 x 64 at 64), not at 128 rows
     * (144 x 128, two waves) nor for the LM head (126,464 wide: 330 tiles of 384 exceed the SMs) */
    dkv_cost_gemm_tiles(32, 37888, 3584, 132, 0, &g);
    assert_true(g.splits == 0 && g.groups == 1 && g.col_waves == 1);
    dkv_cost_gemm_tiles(64, 37888, 3584, 132, 0, &g);
    assert_true(g.col_waves == 1);
    dkv_cost_gemm_tiles(128, 37888, 3584, 132, 0, &g);
    assert_true(g.col_waves == 2);
    dkv_cost_gemm_tiles(32, 126464, 4096, 132, 0, &g);
    assert_true(g.col_waves == 7);
}

/* cuBLASLt's own K splits where a profile's gemm_splitk block knows them (device call 64: LLaDA-8B's down
 * projection at 128 rows runs 2 splits where the rule says 4; at 64 rows 3); 1 means none, even where the
 * rule would split; the lookup takes the row count's warm-up bucket (a multiple of 8), and knows nothing of
 * other shapes or beyond 8,192 rows (0: the rule). */
static void test_gemm_splitk(void **state)
{
    (void)state;
    dkv_cost_gemm_plan g;
    dkv_cost_gemm_tiles(128, 4096, 12288, 132, 0, &g);
    assert_true(g.splits == 4);
    dkv_cost_gemm_tiles(128, 4096, 12288, 132, 2, &g);
    assert_true(g.splits == 2 && g.tiles_m == 1 && g.tiles_n == 32 && g.groups == 1 && g.col_waves == 1);
    dkv_cost_gemm_tiles(32, 4096, 12288, 132, 1, &g);
    assert_true(g.splits == 0 && g.groups >= 1 && g.col_waves >= 1);
    static dkv_profile_info in;   /* large: not on the stack */
    memset(&in, 0, sizeof in);
    in.splitk_n = 1, in.splitk_nk[0][0] = 4096, in.splitk_nk[0][1] = 12288, in.splitk_pts[0] = 4;
    const double rows[] = {8, 64, 72, 104}, val[] = {4, 3, 4, 2};
    memcpy(in.splitk_rows[0], rows, sizeof rows), memcpy(in.splitk_val[0], val, sizeof val);
    assert_true(dkv_profile_gemm_splitk(&in, 32, 4096, 12288) == 4);
    assert_true(dkv_profile_gemm_splitk(&in, 64, 4096, 12288) == 3);
    assert_true(dkv_profile_gemm_splitk(&in, 65, 4096, 12288) == 4);     /* bucket 72 */
    assert_true(dkv_profile_gemm_splitk(&in, 97, 4096, 12288) == 2);     /* bucket 104 */
    assert_true(dkv_profile_gemm_splitk(&in, 8192, 4096, 12288) == 2);
    assert_true(dkv_profile_gemm_splitk(&in, 8193, 4096, 12288) == 0);   /* beyond the warm-up */
    assert_true(dkv_profile_gemm_splitk(&in, 64, 4096, 4096) == 0);      /* another shape */
    assert_true(dkv_profile_gemm_splitk(NULL, 64, 4096, 12288) == 0);
}

/* A profile's gemm_reads: the measured bytes at the row count's warm-up bucket (a multiple of 8) and that
 * bucket; nothing (0, bucket 0) for a bucket the block lacks, another shape, beyond 8,192 rows, no profile. */
static void test_gemm_reads_lookup(void **state)
{
    (void)state;
    static dkv_profile_info in;   /* large: not on the stack */
    memset(&in, 0, sizeof in);
    in.reads_n = 1, in.reads_nk[0][0] = 12288, in.reads_nk[0][1] = 4096;
    in.reads_bytes[0][1440 / 8 - 1] = 142.3e6f, in.reads_bytes[0][1664 / 8 - 1] = 304.1e6f;
    in.reads_bytes[0][8192 / 8 - 1] = 918.7e6f;
    double b;
    assert_true(fabs(dkv_profile_gemm_reads(&in, 1440, 12288, 4096, &b) - 142.3e6) < 16 && b == 1440);
    assert_true(fabs(dkv_profile_gemm_reads(&in, 1433, 12288, 4096, &b) - 142.3e6) < 16 && b == 1440);
    assert_true(fabs(dkv_profile_gemm_reads(&in, 1657, 12288, 4096, &b) - 304.1e6) < 32 && b == 1664);
    assert_true(dkv_profile_gemm_reads(&in, 8192, 12288, 4096, &b) > 9e8 && b == 8192);
    assert_true(dkv_profile_gemm_reads(&in, 1448, 12288, 4096, &b) == 0 && b == 0);    /* not measured */
    assert_true(dkv_profile_gemm_reads(&in, 8193, 12288, 4096, &b) == 0 && b == 0);    /* beyond the warm-up */
    assert_true(dkv_profile_gemm_reads(&in, 1440, 4096, 4096, &b) == 0 && b == 0);     /* another shape */
    assert_true(dkv_profile_gemm_reads(NULL, 1440, 12288, 4096, &b) == 0 && b == 0);
}

/* dkv_profile_gemm_left: the measurement at the row count nearest M's warm-up bucket (the larger of two as
 * near), at most DKV_PROFILE_LEFT_NEAR rows away; 0 is a measurement (a GEMM that leaves nothing), -1 none. */
static void test_gemm_left_lookup(void **state)
{
    (void)state;
    static dkv_profile_info in;   /* large: not on the stack */
    memset(&in, 0, sizeof in);
    in.left_n = 1, in.left_nk[0][0] = 4096, in.left_nk[0][1] = 4096;
    const int rows[] = {2384, 2400, 2416, 4096};
    const float left[] = {8.1e6f, 8.8e6f, 8.6e6f, 0};
    for (int i = 0; i < 4; i++)
        in.left_bytes[0][rows[i] / 8 - 1] = left[i], in.left_has[0][rows[i] / 8 - 1] = 1;
    double R;
    assert_true(fabs(dkv_profile_gemm_left(&in, 2400, 4096, 4096, &R) - 8.8e6) < 1 && R == 2400);
    assert_true(fabs(dkv_profile_gemm_left(&in, 2393, 4096, 4096, &R) - 8.8e6) < 1 && R == 2400);   /* bucket 2400 */
    assert_true(fabs(dkv_profile_gemm_left(&in, 2408, 4096, 4096, &R) - 8.6e6) < 1 && R == 2416);   /* 2400 and 2416 as near */
    assert_true(fabs(dkv_profile_gemm_left(&in, 2480, 4096, 4096, &R) - 8.6e6) < 1 && R == 2416);   /* 64 rows away */
    assert_true(dkv_profile_gemm_left(&in, 2488, 4096, 4096, &R) == -1 && R == 0);                  /* 72 rows away */
    assert_true(dkv_profile_gemm_left(&in, 4096, 4096, 4096, &R) == 0 && R == 4096);                /* measured 0 */
    assert_true(dkv_profile_gemm_left(&in, 8193, 4096, 4096, &R) == -1 && R == 0);                  /* beyond the warm-up */
    assert_true(dkv_profile_gemm_left(&in, 2400, 4096, 12288, &R) == -1 && R == 0);                 /* another shape */
    assert_true(dkv_profile_gemm_left(NULL, 2400, 4096, 4096, &R) == -1 && R == 0);
}

/* The row walk right after a GEMM reaches what the GEMM left of its output (its last rows) last, after its own
 * lines have entered (core/cost/cost_l2.c walk_to_tail; docs/COST_MODEL.md "The walk after a GEMM").  The fused
 * RoPE-store of one Refresh item reads the whole q|k|v output and writes K and V to the pool:
 * - LLaDA-8B at 1,664 rows: its q|k|v GEMM leaves 8.8 MB (gemm_left); before the walk reaches them it has taken
 *   in (40.9 - 8.8) x (40.9 + 27.3) / 40.9 = 53.5 MB, more than C / DKV_COST_L2_ONE_READER - 8.8, so they are
 *   gone: the store reads all 40.9 MB (the GPU: 40.2; the replay before: 32.1);
 * - at 1,280 rows, leaving 6 MB, part of them survives: E = (31.5 - 6) x 5 / 3 = 42.4 MB, 5.0 MB of the 6 gone;
 * - Dream-7B at 1,664 rows (GQA: K and V are 2 of 15 MB) leaves 7.0 MB and finds all of it (the GPU: 6.8).
 * The SwiGLU, whose loop meets the left rows evenly, finds part of them (below).
 * Without a gemm_left block nothing changes: the store finds what the replay's own GEMM left. */
static void test_l2_walk_reaches_what_the_gemm_left_last(void **state)
{
    (void)state;
    static dkv_profile_info in;   /* large: not on the stack */
    memset(&in, 0, sizeof in);
    in.left_n = 2;
    in.left_nk[0][0] = 12288, in.left_nk[0][1] = 4096;   /* LLaDA-8B q|k|v */
    in.left_nk[1][0] = 4608, in.left_nk[1][1] = 3584;    /* Dream-7B q|k|v */
    in.left_bytes[0][1664 / 8 - 1] = 8.8e6f, in.left_has[0][1664 / 8 - 1] = 1;
    in.left_bytes[0][1280 / 8 - 1] = 6.0e6f, in.left_has[0][1280 / 8 - 1] = 1;
    in.left_bytes[1][1664 / 8 - 1] = 7.0e6f, in.left_has[1][1664 / 8 - 1] = 1;
    dkv_cost_hw h200 = {.l2_bytes = 60.0 * 1048576, .l2_partitions = 2, .n_sms = 132, .profile = &in};
    const double C1 = 60.0 * 1048576 / 2 / DKV_COST_L2_ONE_READER;
    const struct { dkv_model m; uint32_t rows; double left, found; } cases[] = {
        {llada(), 1664, 8.8e6, 0},
        {llada(), 1280, 6.0e6, -1},   /* -1: partly, from the rule */
        {dream(), 1664, 7.0e6, 7.0e6},
    };
    for (int i = 0; i < 3; i++) {
        const dkv_model *m = &cases[i].m;
        const double R = cases[i].rows, hkv = (double)m->n_kv_heads * m->head_dim;
        const double Y = R * ((double)m->n_heads * m->head_dim + 2 * hkv) * 2, kv = R * 2 * hkv * 2;
        const double L = (float)cases[i].left;
        double found = cases[i].found >= 0 ? cases[i].found : L - fmax(0, (Y - L) * (Y + kv) / Y - (C1 - L));
        dkv_step_item it = {.q_tokens = cases[i].rows, .kv_tokens = cases[i].rows, .kv_write_tokens = cases[i].rows,
                            .logit_rows = 32};
        dkv_step_plan p = {.items = &it, .n_items = 1};
        dkv_cost_step cs;
        dkv_cost_step_init(&cs);
        assert_int_equal(dkv_cost_count_hw(m, &h200, &p, &cs, NULL), DKV_OK);
        if (i == 1)
            assert_true(found > 0.5e6 && found < 1.5e6);
        assert_true(rel(cs.layer[DKV_KCLASS_KV_STORE].rd, Y - (cases[i].found >= 0 ? cases[i].found : found)) < 1e-6);
        dkv_cost_step_free(&cs);
    }
    /* the SwiGLU's grid-stride loop meets gate|up's left rows evenly through its run (tail_kept's spread form):
     * LLaDA-8B at 1,280 rows, 8.7 MB left of 62.9: it finds R x0 + R dx / 2 of them (about 4 MB), where a walk in row
     * order would find none */
    {
        in.left_n = 3, in.left_nk[2][0] = 24576, in.left_nk[2][1] = 4096;
        in.left_bytes[2][1280 / 8 - 1] = 8.7e6f, in.left_has[2][1280 / 8 - 1] = 1;
        dkv_model m = llada();
        dkv_step_item it = {.q_tokens = 1280, .kv_tokens = 1280, .kv_write_tokens = 1280, .logit_rows = 32};
        dkv_step_plan p = {.items = &it, .n_items = 1};
        dkv_cost_step cs;
        dkv_cost_step_init(&cs);
        dkv_cost_l2_trace tr;
        h200.trace = &tr;
        assert_int_equal(dkv_cost_count_hw(&m, &h200, &p, &cs, NULL), DKV_OK);
        h200.trace = NULL;
        assert_true(tr.n_layer > 7 && tr.k[tr.n_start + 6].kind == DKV_KCLASS_FFN && tr.k[tr.n_start + 7].kind == DKV_KCLASS_ELEMENTWISE);
        const double Y = 2 * 1280.0 * 12288 * 2, R = (float)8.7e6, T = (Y - R) * 1.5, x0 = (C1 - R) / T;
        const double dx = fmin(1 - x0, R * (1 - x0) / T), found = R * x0 + R * dx / 2;
        assert_true(found > 3e6 && found < 5e6);
        assert_true(rel(tr.k[tr.n_start + 7].rd, Y - found) < 1e-6);
        dkv_cost_step_free(&cs);
    }
    /* without the block the replay's own GEMM decides what is resident, and the store finds more than nothing */
    dkv_model m = llada();
    dkv_step_item it = {.q_tokens = 288, .kv_tokens = 288, .kv_write_tokens = 288, .logit_rows = 32};
    dkv_step_plan p = {.items = &it, .n_items = 1};
    dkv_cost_step cs;
    dkv_cost_step_init(&cs);
    h200.profile = NULL;
    assert_int_equal(dkv_cost_count_hw(&m, &h200, &p, &cs, NULL), DKV_OK);
    assert_true(cs.layer[DKV_KCLASS_KV_STORE].rd < 0.5 * 288.0 * 12288 * 2);
    dkv_cost_step_free(&cs);
}

/* The RoPE-store after the q|k|v GEMM finds what the profile's gemm_store measured (core/cost/cost_l2.c store_found;
 * docs/COST_MODEL.md "The walk after a GEMM"), scaled by M / R below its row count R, in place of the rule, where
 * the walk is the one measured (it writes 85-105 % of every row's k and v to new lines).  LLaDA-8B at 1,344 rows:
 * its GEMM leaves 7.7 MB, the rule finds 1.2 of them, the measurement (device call 83) 6.0: the store reads 27.0 MB
 * of its 33.0.  At 1,336 rows (bucket 1,336, nearest measurement 1,344) 6.0 x 1,336 / 1,344.  A store into an 8-bit
 * pool (half the fresh bytes) and a row count with no measurement within 64 rows keep the rule; so does a profile
 * without the block.  dkv_profile_gemm_store looks up as dkv_profile_gemm_left does. */
static void test_l2_store_finds_what_gemm_store_measured(void **state)
{
    (void)state;
    static dkv_profile_info in;   /* large: not on the stack */
    memset(&in, 0, sizeof in);
    in.left_n = 1, in.left_nk[0][0] = 12288, in.left_nk[0][1] = 4096;   /* LLaDA-8B q|k|v */
    in.store_nk[0][0] = 12288, in.store_nk[0][1] = 4096;
    const int lrows[] = {1336, 1344, 1536};
    for (int i = 0; i < 3; i++)
        in.left_bytes[0][lrows[i] / 8 - 1] = 7.7e6f, in.left_has[0][lrows[i] / 8 - 1] = 1;
    in.store_bytes[0][1344 / 8 - 1] = 6.0e6f, in.store_has[0][1344 / 8 - 1] = 1;
    double R;
    assert_true(dkv_profile_gemm_store(&in, 1344, 12288, 4096, &R) == -1 && R == 0);   /* store_n 0: no block */
    in.store_n = 1;
    assert_true(fabs(dkv_profile_gemm_store(&in, 1344, 12288, 4096, &R) - 6.0e6) < 1 && R == 1344);
    assert_true(fabs(dkv_profile_gemm_store(&in, 1300, 12288, 4096, &R) - 6.0e6) < 1 && R == 1344);
    assert_true(dkv_profile_gemm_store(&in, 1536, 12288, 4096, &R) == -1 && R == 0);   /* 192 rows away */
    assert_true(dkv_profile_gemm_store(&in, 1344, 4608, 3584, &R) == -1 && R == 0);    /* another shape */
    assert_true(dkv_profile_gemm_store(NULL, 1344, 12288, 4096, &R) == -1 && R == 0);
    dkv_cost_hw h200 = {.l2_bytes = 60.0 * 1048576, .l2_partitions = 2, .n_sms = 132, .profile = &in};
    const double C1 = 60.0 * 1048576 / 2 / DKV_COST_L2_ONE_READER, L = (float)7.7e6;
    const struct { uint32_t rows; bool fp8, measured; double found; } cases[] = {
        {1344, false, true, 6.0e6}, {1336, false, true, 6.0e6 * 1336 / 1344}, {1344, true, false, 0},
        {1536, false, false, 0},
    };
    for (int pass = 0; pass < 2; pass++) {   /* with the block, then without it: the rule everywhere */
        in.store_n = pass == 0 ? 1 : 0;
        for (int i = 0; i < 4; i++) {
            dkv_model m = llada();
            if (cases[i].fp8)
                m.kv_dtype = DKV_DTYPE_FP8;
            const double M = cases[i].rows, Y = M * 12288 * 2, fresh = M * 8192 * (cases[i].fp8 ? 1 : 2);
            const double rule = fmax(0, fmin(L, C1 - (Y - L) * (Y + fresh) / Y));
            const double found = pass == 0 && cases[i].measured ? cases[i].found : rule;
            dkv_step_item it = {.q_tokens = cases[i].rows, .kv_tokens = cases[i].rows,
                                .kv_write_tokens = cases[i].rows, .logit_rows = 32};
            dkv_step_plan p = {.items = &it, .n_items = 1};
            dkv_cost_step cs;
            dkv_cost_step_init(&cs);
            assert_int_equal(dkv_cost_count_hw(&m, &h200, &p, &cs, NULL), DKV_OK);
            if (cases[i].rows == 1344 && !cases[i].fp8)
                assert_true(rule < 1.5e6);   /* the rule finds far less than the measurement */
            assert_true(rel(cs.layer[DKV_KCLASS_KV_STORE].rd, Y - found) < 1e-6);
            dkv_cost_step_free(&cs);
        }
    }
}

/* The LM head's argmax walks the fp32 logits row by row right after the GEMM that wrote them, so it reaches what the
 * GEMM left of them last too (docs/COST_MODEL.md "The walk after a GEMM"; device calls 3 and 9: LLaDA-8B's argmax at
 * 128 rows reads 63 of the 64.7 MB of logits from HBM and writes back 20 MB, at 64 rows it finds 8 of 32.4 MB and
 * writes back under 2).  On the H200 with LLaDA-8B: at 128 logit rows (64.7 MB, past C / DKV_COST_L2_ONE_READER)
 * the argmax reads all of them and writes back the GEMM's dirty rest; at 32 rows (16.2 MB) it finds what the GEMM
 * left and writes nothing back.  (A plain read, as before, found the resident part at any size.) */
static void test_l2_argmax_walks_the_logits(void **state)
{
    (void)state;
    dkv_model m = llada();
    const uint32_t rows[] = {128, 32};
    for (int i = 0; i < 2; i++) {
        dkv_step_item it = {.q_tokens = rows[i], .kv_tokens = rows[i], .logit_rows = rows[i]};
        dkv_step_plan p = {.items = &it, .n_items = 1};
        dkv_cost_step cs;
        dkv_cost_step_init(&cs);
        dkv_cost_l2_trace tr;
        dkv_cost_hw h200 = {.l2_bytes = 60.0 * 1048576, .l2_partitions = 2, .n_sms = 132, .trace = &tr};
        assert_int_equal(dkv_cost_count_hw(&m, &h200, &p, &cs, NULL), DKV_OK);
        int a = -1;   /* the argmax: the last LM-head kernel of the step's end */
        for (uint32_t k = 0; k < tr.n; k++)
            if (tr.k[k].kind == DKV_KCLASS_LM_HEAD)
                a = (int)k;
        assert_true(a > 0 && tr.k[a - 1].kind == DKV_KCLASS_LM_HEAD);
        const double logits = rows[i] * m.vocab * DKV_COST_LOGIT_BYTES;
        if (i == 0) {
            assert_true(rel(tr.k[a].rd, logits) < 1e-9);
            assert_true(tr.k[a].wr > 5e6);
        } else {
            assert_true(tr.k[a].rd < 0.9 * logits);
            assert_true(tr.k[a].wr < 1e3);
        }
        dkv_cost_step_free(&cs);
    }
}

/* Large M (docs/COST_MODEL.md "Large-M GEMMs"): gate+up at 2,112 rows on the H200 (31.5 MB per L2
 * half) is 2 row groups (6 and 5 row tiles of 11) x 9 column waves.  Its operands (201 MB of
 * weights) do not fit, so each group streams the weights (2 x 201 MB) and every column wave of a
 * group reads the group's input rows; only the first group's first read can find them in L2:
 * reads = 2 W + (8 x 6 + 9 x 5) / 11 x input, + up to 6 / 11 x input.  The down projection: 2
 * groups x 2 column waves of 32 tiles, its input (ff, from the SwiGLU just before) likewise.
 * With a 1 GB L2 (nothing spills) the weights are read once and the input at most once. */
static void test_l2_large_m_groups_reread_weights_and_input(void **state)
{
    (void)state;
    dkv_model m = llada();
    dkv_step_item it[2] = {{.q_tokens = 1056, .kv_tokens = 1056, .logit_rows = 32},
                           {.q_tokens = 1056, .kv_tokens = 1056, .logit_rows = 32}};
    dkv_step_plan p = {.items = it, .n_items = 2};
    dkv_cost_step a, b;
    dkv_cost_step_init(&a), dkv_cost_step_init(&b);
    dkv_cost_hw h200 = {.l2_bytes = 60.0 * 1048576, .l2_partitions = 2, .n_sms = 132};
    dkv_cost_hw huge = {.l2_bytes = 1e9, .l2_partitions = 1, .n_sms = 132};
    assert_int_equal(dkv_cost_count_hw(&m, &h200, &p, &a, NULL), DKV_OK);
    assert_int_equal(dkv_cost_count_hw(&m, &huge, &p, &b, NULL), DKV_OK);
    const double d = 4096, f = 12288, Q = 2112, in = Q * d * 2, Wgu = 2 * d * f * 2, Wd = d * f * 2, ff = Q * f * 2;
    const double res = Q * d * 2;   /* the down projection's residual */
    double lo = 2 * Wgu + 93.0 / 11 * in + 2 * Wd + 16.0 / 11 * ff;
    double hi = 2 * Wgu + 99.0 / 11 * in + 2 * Wd + 22.0 / 11 * ff + res;
    assert_true(a.layer[DKV_KCLASS_FFN].rd >= lo * (1 - 1e-12));
    assert_true(a.layer[DKV_KCLASS_FFN].rd <= hi * (1 + 1e-12));
    /* QKV: 2 groups x 5 column waves (96 column tiles over 22): 2 W + 9 input reads of its group */
    const double Wqkv = 3 * d * d * 2;
    assert_true(a.layer[DKV_KCLASS_QKV].rd >= 2 * Wqkv + (4 * 6 + 5 * 5) / 11.0 * in - 1);
    assert_true(a.layer[DKV_KCLASS_QKV].rd <= 2 * Wqkv + (5 * 6 + 5 * 5) / 11.0 * in + 1);
    assert_true(b.layer[DKV_KCLASS_FFN].rd <= Wgu + in + Wd + ff + res + 1);
    assert_true(b.layer[DKV_KCLASS_FFN].rd >= Wgu + Wd);
    dkv_cost_step_free(&a), dkv_cost_step_free(&b);
}

/* A later row group's weight read finds what is left of the weights in L2 (session 18: Dream-7B's O
 * projection at 2,112 rows, 25.7 MB of weights, read 1.6 x its weights on the H200 where the replay read
 * them twice).  A model of hidden 2,048 (O weights 8.4 MB) at 2 x 1,056 rows: 2 row groups whose
 * operands exceed C together (the input rows of the second group miss), but the 8.4 MB of weights are
 * still in L2 for the second group: the O projection reads them about once, not twice. */
static void test_l2_later_group_rereads_resident_weights(void **state)
{
    (void)state;
    dkv_model m = llada();
    m.hidden = 2048, m.n_heads = 16, m.n_kv_heads = 16, m.ffn = 6144;
    dkv_step_item it[2] = {{.q_tokens = 1056, .kv_tokens = 1056, .logit_rows = 32},
                           {.q_tokens = 1056, .kv_tokens = 1056, .logit_rows = 32}};
    dkv_step_plan p = {.items = it, .n_items = 2};
    dkv_cost_step cs;
    dkv_cost_step_init(&cs);
    dkv_cost_hw h200 = {.l2_bytes = 60.0 * 1048576, .l2_partitions = 2, .n_sms = 132};
    assert_int_equal(dkv_cost_count_hw(&m, &h200, &p, &cs, NULL), DKV_OK);
    dkv_cost_gemm_plan g;
    dkv_cost_gemm_tiles(2112, 2048, 2048, 132, 0, &g);
    assert_true(g.groups == 2 && g.splits == 0);
    const double W = 2048.0 * 2048 * 2, x = 2112.0 * 2048 * 2;   /* weights; input = residual = output */
    assert_true(W + 3 * x > h200.l2_bytes / 2);                      /* the operands exceed C: a spill */
    assert_true(cs.layer[DKV_KCLASS_O].rd >= W + x);
    assert_true(cs.layer[DKV_KCLASS_O].rd < 1.25 * W + 2 * x);   /* twice the weights: 2 W + 1.45 x */
    dkv_cost_step_free(&cs);
}

/* Weights read by one CTA a line take DKV_COST_L2_ONE_READER of their bytes in the L2 (docs/COST_MODEL.md
 * "What the L2 keeps between kernels").  Dream-7B's Reuse step at 32 rows: the q|k|v GEMM's 33 MB of
 * weights (one row tile) take 25 MB, so the dirty lines the layer before left (the down projection's
 * partials, the residual, the norm's output: 2.3 MB) survive it and go to HBM during the O projection,
 * after 59 MB of weights (Nsight Compute, device call 56: 0.50 MB per layer during q|k|v, 1.35 during
 * O); taking their full bytes, the replay charged them all to q|k|v and none to O. */
static void test_l2_one_reader_weights(void **state)
{
    (void)state;
    dkv_model m = dream();
    dkv_step_item it = {.q_tokens = 32, .kv_tokens = 288, .kv_cached_tokens = 256, .logit_rows = 32};
    dkv_step_plan p = {.items = &it, .n_items = 1};
    dkv_cost_step cs;
    dkv_cost_step_init(&cs);
    dkv_cost_l2_trace tr;
    dkv_cost_hw h200 = {.l2_bytes = 60.0 * 1048576, .l2_partitions = 2, .n_sms = 132, .trace = &tr};
    assert_int_equal(dkv_cost_count_hw(&m, &h200, &p, &cs, NULL), DKV_OK);
    assert_true(tr.n_layer > 5 && tr.k[tr.n_start + 1].kind == DKV_KCLASS_QKV && tr.k[tr.n_start + 4].kind == DKV_KCLASS_O);
    const double W = 3584.0 * (3584 + 2 * 512) * 2, C = h200.l2_bytes / 2;
    assert_true(W > C && DKV_COST_L2_ONE_READER * W < C);
    assert_true(tr.k[tr.n_start + 1].wr < 0.1e6);   /* full bytes: 2.3 MB */
    assert_true(tr.k[tr.n_start + 4].wr > 1.5e6);   /* full bytes: 0 */
    dkv_cost_step_free(&cs);
}

/* Attention and the store: the streaming bytes and the segments add up to the bytes read and
 * written, segment by segment in item order, at the item's run length. */
static void test_segments_cover_the_traffic(void **state)
{
    (void)state;
    dkv_model m = llada();
    dkv_step_item it[2] = {
        {.q_tokens = 32, .kv_tokens = 800, .kv_cached_tokens = 768, .kv_write_tokens = 32, .logit_rows = 32,
         .kv_run_bytes = 4096},
        {.q_tokens = 32, .kv_tokens = 1056, .kv_cached_tokens = 1024, .kv_write_tokens = 32, .logit_rows = 32,
         .kv_run_bytes = 0, .kv_host_bytes = 32.0 * 1024 * 1024},
    };
    dkv_step_plan p = {.items = it, .n_items = 2};
    dkv_cost_step cs;
    dkv_cost_step_init(&cs);
    assert_int_equal(dkv_cost_count(&m, &p, &cs, NULL), DKV_OK);
    /* item 0: attention, store; item 1: attention, store, zero-copy read */
    assert_int_equal(cs.n_segs, 5);
    assert_int_equal(cs.segs[0].kind, DKV_KCLASS_ATTN);
    assert_true(cs.segs[0].run_bytes == 4096);
    assert_int_equal(cs.segs[1].kind, DKV_KCLASS_KV_STORE);
    assert_int_equal(cs.segs[4].via, DKV_COST_VIA_PCIE_H2D);
    assert_true(rel(cs.segs[4].bytes, 32.0 * 1024 * 1024 / 32) < 1e-15);
    double kv_tok = 2.0 * 4096 * 2, seg_attn = 0;
    for (uint32_t i = 0; i < cs.n_segs; i++)
        if (cs.segs[i].kind == DKV_KCLASS_ATTN)
            seg_attn += cs.segs[i].bytes;
    assert_true(rel(seg_attn, (768.0 + 1024.0) * kv_tok) < 1e-15);
    const dkv_cost_class *at = &cs.layer[DKV_KCLASS_ATTN];
    assert_true(rel(at->bytes_fast + seg_attn, at->rd + at->wr) < 1e-12);
    assert_int_equal(cs.layer[DKV_KCLASS_KV_GATHER].launches, 1);   /* the zero-copy read */
    assert_true(cs.pcie_h2d_bytes == 32u * 1024 * 1024);
    assert_true(cs.fetch_bytes == 0);
    dkv_cost_step_free(&cs);
}

/* Transfers: offloads read HBM, fetches write it; compress is a kernel plus a copy; reorder a
 * kernel only.  Totals and class records agree. */
static void test_xfers_and_totals(void **state)
{
    (void)state;
    dkv_model m = llada();
    dkv_step_item it = {.q_tokens = 32, .kv_tokens = 800, .kv_cached_tokens = 768, .kv_write_tokens = 32,
                        .logit_rows = 32};
    dkv_xfer x[4] = {{.kind = DKV_XFER_OFFLOAD, .pinned = true, .pcie_bytes = 1000},
                     {.kind = DKV_XFER_FETCH, .pinned = true, .pcie_bytes = 300},
                     {.kind = DKV_XFER_COMPRESS, .pcie_bytes = 50, .device_bytes = 400, .flops = 1e6},
                     {.kind = DKV_XFER_REORDER, .device_bytes = 700}};
    dkv_step_plan p = {.items = &it, .n_items = 1, .xfers = x, .n_xfers = 4};
    dkv_cost_step cs;
    dkv_cost_step_init(&cs);
    assert_int_equal(dkv_cost_count(&m, &p, &cs, NULL), DKV_OK);
    assert_true(cs.pcie_d2h_bytes == 1050 && cs.pcie_h2d_bytes == 300 && cs.fetch_bytes == 300);
    dkv_cost_totals t;
    dkv_cost_step_totals(&cs, &t);
    uint64_t rd = 0, wr = 0;
    uint32_t launches = 0;
    double fl = 0;
    for (int c = 0; c < DKV_KCLASS_N; c++) {
        dkv_kernel_record r;
        if (!dkv_cost_class_record(&cs, (dkv_kernel_class)c, 7, &r))
            continue;
        assert_true(r.step_index == 7 && r.layer == UINT32_MAX);
        rd += r.read_bytes, wr += r.write_bytes, launches += r.n_launches, fl += r.flops;
    }
    assert_int_equal(launches, t.launches);
    assert_true(rel(fl, t.flops) < 1e-12);
    /* per-record truncation to whole bytes: within one byte per class */
    assert_true(fabs((double)t.hbm_read_bytes - 1050.0 - (double)rd) <= DKV_KCLASS_N);
    assert_true(fabs((double)t.hbm_write_bytes - 300.0 - (double)wr) <= DKV_KCLASS_N);
    assert_int_equal(cs.once[DKV_KCLASS_REORDER].launches, 1);
    assert_true(cs.once[DKV_KCLASS_REORDER].rd == 700 && cs.once[DKV_KCLASS_REORDER].wr == 700);
    assert_true(cs.once[DKV_KCLASS_COMPRESS].flops == 1e6 && cs.once[DKV_KCLASS_COMPRESS].wr == 50);
    dkv_kernel_record r;
    assert_false(dkv_cost_class_record(&cs, DKV_KCLASS_KV_GATHER, 7, &r));
    /* counting again reuses the scratch and starts from zero */
    assert_int_equal(dkv_cost_count(&m, &p, &cs, NULL), DKV_OK);
    dkv_cost_totals t2;
    dkv_cost_step_totals(&cs, &t2);
    assert_true(t2.flops == t.flops && t2.hbm_read_bytes == t.hbm_read_bytes && t2.launches == t.launches);
    dkv_cost_step_free(&cs);
    dkv_cost_step_free(NULL);
}

static void test_bad_input(void **state)
{
    (void)state;
    dkv_model m = llada();
    dkv_step_item it = {.q_tokens = 32, .kv_tokens = 800, .kv_cached_tokens = 900};
    dkv_step_plan p = {.items = &it, .n_items = 1};
    dkv_cost_step cs;
    dkv_cost_step_init(&cs);
    dkv_err e = {0};
    assert_int_equal(dkv_cost_count(&m, &p, &cs, &e), DKV_EINVAL);
    assert_non_null(strstr(e.msg, "kv_cached_tokens"));
    it.kv_cached_tokens = 768;
    dkv_xfer x = {.kind = 9};
    p.xfers = &x, p.n_xfers = 1;
    assert_int_equal(dkv_cost_count(&m, &p, &cs, &e), DKV_EINVAL);
    assert_non_null(strstr(e.msg, "xfer 0"));
    dkv_cost_step_free(&cs);
}

/* The replay's memo (dkv_cost_hw.memo): plans that differ in each input the replay reads (rows, an item's cached
 * keys, the items' logit rows in another order, a selection, fp8 KV, two weight streams, another model) cost,
 * in an order with repeats, exactly what the replay without a memo gives, class by class; repeats are hits and
 * only they; a trace replays (no hit). */
static void test_l2_memo_gives_the_replays_bytes(void **state)
{
    (void)state;
    dkv_model ml = llada(), md = dream();
    enum { NP = 10 };
    dkv_step_item it[NP][2];
    dkv_step_plan p[NP];
    const dkv_model *pm[NP];
    for (int i = 0; i < NP; i++) {
        it[i][0] = REUSE, it[i][1] = (dkv_step_item){.q_tokens = 64, .kv_tokens = 64, .kv_write_tokens = 64, .logit_rows = 16};
        p[i] = (dkv_step_plan){.items = it[i], .n_items = 1};
        pm[i] = &ml;
    }
    it[1][0].kv_tokens = 2080, it[1][0].kv_cached_tokens = 1024;   /* own and cached bytes */
    p[2].n_items = 2;                                       /* two items: logit rows 32, 16 */
    p[3].n_items = 2, it[3][0] = it[2][1], it[3][1] = it[2][0];   /* ... 16, 32: the same sums, another order */
    it[4][0].kv_select_rows = 32, it[4][0].kv_write_tokens = 64;   /* a selection */
    it[5][0].kv_dtype_bytes = 1;                            /* fp8 KV */
    p[6].n_weight_streams = 2;
    pm[7] = &md;                                            /* another model: the memo starts over */
    it[8][0] = it[1][0], it[8][0].kv_tokens = 2112;         /* plan 1's cached bytes, more own */
    it[9][0] = it[4][0], it[9][0].kv_select_rows = 16;      /* plan 4's selection scored by fewer rows */
    dkv_cost_hw h200 = {.l2_bytes = 50331648, .l2_partitions = 2, .n_sms = 132};
    dkv_cost_step ref[NP], cs;
    dkv_cost_step_init(&cs);
    for (int i = 0; i < NP; i++) {
        dkv_cost_step_init(&ref[i]);
        assert_int_equal(dkv_cost_count_hw(pm[i], &h200, &p[i], &ref[i], NULL), DKV_OK);
    }
    /* every plan but 3 (plan 2's items in the other order) costs differently from the plan it varies (0; 8 varies
     * 1, 9 varies 4 in one input only), so a memo that mixed them up would fail below */
    static const int base[NP] = {0, 0, 0, 2, 0, 0, 0, 0, 1, 4};
    for (int i = 1; i < NP; i++) {
        bool differ = i == 3;
        for (int k = 0, b = base[i]; k < DKV_KCLASS_N; k++)
            differ |= ref[i].layer[k].rd != ref[b].layer[k].rd || ref[i].layer[k].wr != ref[b].layer[k].wr ||
                      ref[i].once[k].rd != ref[b].once[k].rd || ref[i].once[k].wr != ref[b].once[k].wr;
        if (!differ)
            fail_msg("plan %d costs as plan %d", i, base[i]);
    }
    h200.memo = dkv_cost_l2_memo_new();
    assert_non_null(h200.memo);
    static const int order[] = {0, 1, 8, 0, 2, 3, 2, 3, 4, 9, 5, 6, 4, 5, 6, 9, 1, 8, 7, 0, 7};
    const int n = (int)(sizeof order / sizeof order[0]);
    for (int j = 0; j < n; j++) {
        int i = order[j];
        assert_int_equal(dkv_cost_count_hw(pm[i], &h200, &p[i], &cs, NULL), DKV_OK);
        for (int k = 0; k < DKV_KCLASS_N; k++)
            assert_true(cs.layer[k].rd == ref[i].layer[k].rd && cs.layer[k].wr == ref[i].layer[k].wr &&
                        cs.once[k].rd == ref[i].once[k].rd && cs.once[k].wr == ref[i].once[k].wr &&
                        cs.layer[k].bytes_fast == ref[i].layer[k].bytes_fast);
    }
    uint64_t hits, misses;
    dkv_cost_l2_memo_stats(h200.memo, &hits, &misses);
    /* misses: the 9 llada plans, dream, llada's 0 again after dream cleared the memo, dream again after that */
    assert_int_equal(misses, 12);
    assert_int_equal(hits, (uint64_t)n - 12);
    dkv_cost_l2_trace tr;
    h200.trace = &tr;   /* a trace wants the kernels: no memo */
    assert_int_equal(dkv_cost_count_hw(&ml, &h200, &p[0], &cs, NULL), DKV_OK);
    dkv_cost_l2_memo_stats(h200.memo, &hits, &misses);
    assert_int_equal(hits + misses, (uint64_t)n);
    assert_true(tr.n > 0 && cs.layer[DKV_KCLASS_QKV].rd == ref[0].layer[DKV_KCLASS_QKV].rd);
    dkv_cost_l2_memo_free(h200.memo);
    for (int i = 0; i < NP; i++)
        dkv_cost_step_free(&ref[i]);
    dkv_cost_step_free(&cs);
}

/* The soft edge (core/cost/cost_l2_edge.c) against its closed form.  An old entry of R = 100 bytes behind a newest of
 * 10 (tot 110: the old entry's lines are 10 to 110 bytes old), ramp width W = 20, 5 bytes to go.  Clean: the share
 * gone is (110 - A0)^2 / (2 W) / R with A0 = T - W / 2, so 110 - A0 = sqrt(200) and T = 110 - sqrt(200) + 10.  Half
 * dirty with a credit of 4 bytes: 50 (u^2 + (u - 4)^2) / (2 W R) = 5 gives u = 110 - A0 = 16, so 50 x 256 / 4000 =
 * 3.2 clean and 50 x 144 / 4000 = 1.8 dirty bytes go, the 1.8 to HBM. */
static void test_l2_edge_closed_form(void **state)
{
    (void)state;
    l2_ent e[2] = {{.key = 1, .res = 100}, {.key = 2, .res = 10}};
    l2_edge ed = {.width = 20, .credit = 0};
    double written = 0;
    assert_true(fabs(l2_edge_evict(&ed, e, 2, 110, 5, &written) - 5) < 1e-5);
    assert_true(fabs(e[0].res - 95) < 1e-5 && e[1].res == 10 && written == 0);
    assert_true(fabs(ed.gap - (110 - (110 - sqrt(200.0) + 10))) < 1e-4);   /* the threshold solved */

    l2_ent d[2] = {{.key = 1, .res = 100, .dirty = 50}, {.key = 2, .res = 10, .dirty = 10}};
    l2_edge edc = {.width = 20, .credit = 4};
    written = 0;
    assert_true(fabs(l2_edge_evict(&edc, d, 2, 110, 5, &written) - 5) < 1e-5);
    assert_true(fabs(written - 1.8) < 1e-5 && fabs(d[0].dirty - 48.2) < 1e-5 && fabs(d[0].res - 95) < 1e-5);
    assert_true(d[1].res == 10 && d[1].dirty == 10);   /* the newest entry stays whole, dirty or not */
}

/* Over a list of equal clean entries the edge takes a falling share from the oldest to the newer ones (more than one
 * entry gives lines, unlike an LRU), the bytes removed are the bytes asked for, and the answer does not depend on the
 * first guess (gap).  Five entries of 10 (tot 50), W = 20, 7 bytes to go: (50 - A0)^2 / 40 = 7, so the oldest
 * (ages 40 to 50) gives (280 - (sqrt(280) - 10)^2) / 40 = 5.867 and the next (30 to 40) the rest.  With a ramp far
 * narrower than an entry it is the LRU: the oldest entry alone gives them. */
static void test_l2_edge_spreads_evictions_by_age(void **state)
{
    (void)state;
    for (int guess = 0; guess < 3; guess++) {
        l2_ent e[5];
        for (int i = 0; i < 5; i++)
            e[i] = (l2_ent){.key = i, .res = 10};
        l2_edge ed = {.width = 20, .credit = 0, .gap = guess == 0 ? 0 : guess == 1 ? 3 : 1000};
        double written = 0;
        assert_true(fabs(l2_edge_evict(&ed, e, 5, 50, 7, &written) - 7) < 1e-5);
        double left = 0;
        for (int i = 0; i < 5; i++)
            left += e[i].res;
        assert_true(fabs(left - 43) < 1e-5 && e[4].res == 10 && written == 0);
        assert_true(e[0].res > 3 && e[0].res < e[1].res && e[1].res < 10);   /* the two oldest both give lines */
        const double r = sqrt(280.0) - 10, oldest = (280 - r * r) / 40;
        assert_true(fabs(e[0].res - (10 - oldest)) < 1e-5 && fabs(e[1].res - (10 - (7 - oldest))) < 1e-5);
        assert_true(e[2].res == 10 && e[3].res == 10);   /* younger than A0 = 50 - sqrt(280) */
    }
    l2_ent s[3] = {{.key = 0, .res = 10, .dirty = 4}, {.key = 1, .res = 10, .dirty = 4}, {.key = 2, .res = 10}};
    l2_edge sharp = {.width = 1e-6, .credit = 0};
    double ws = 0;
    assert_true(fabs(l2_edge_evict(&sharp, s, 3, 30, 7, &ws) - 7) < 1e-5);
    assert_true(fabs(s[0].res - 3) < 1e-4 && fabs(s[1].res - 10) < 1e-4 && fabs(ws - 2.8) < 1e-4);
}

/* Where the entries older than the newest hold fewer bytes than must go, the edge removes nothing (the replay then
 * takes them from the LRU end, cost_l2.c evict), and with no width it is off. */
static void test_l2_edge_leaves_what_it_cannot_take(void **state)
{
    (void)state;
    l2_ent e[2] = {{.key = 1, .res = 3, .dirty = 3}, {.key = 2, .res = 100}};
    l2_edge ed = {.width = 20, .credit = 4};
    double written = 0;
    assert_true(l2_edge_evict(&ed, e, 2, 103, 5, &written) == 0);
    assert_true(e[0].res == 3 && e[0].dirty == 3 && e[1].res == 100 && written == 0);
    l2_edge off = {.width = 0};
    assert_true(l2_edge_evict(&off, e, 2, 103, 1, &written) == 0 && e[0].res == 3);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_dense_plan_is_forward_flops),
        cmocka_unit_test(test_lm_head_logits_are_fp32),
        cmocka_unit_test(test_l2_off_is_the_cold_count),
        cmocka_unit_test(test_l2_holding_everything_reads_only_weights_and_cache),
        cmocka_unit_test(test_l2_gemm_waves_push_their_output_out),
        cmocka_unit_test(test_l2_store_writes_rotated_k_in_place),
        cmocka_unit_test(test_l2_dirty_lines_are_bounded),
        cmocka_unit_test(test_l2_rows_kernel_keeps_its_last_rows),
        cmocka_unit_test(test_l2_gemm_group_leaves_other_rows_old),
        cmocka_unit_test(test_l2_attention_walks_heads),
        cmocka_unit_test(test_l2_part_of_a_buffer_hits_its_share),
        cmocka_unit_test(test_l2_trace_counts_what_it_drops),
        cmocka_unit_test(test_l2_streaming_walk_writes_back_its_output),
        cmocka_unit_test(test_gemm_tiles),
        cmocka_unit_test(test_gemm_splitk),
        cmocka_unit_test(test_gemm_reads_lookup),
        cmocka_unit_test(test_gemm_left_lookup),
        cmocka_unit_test(test_l2_walk_reaches_what_the_gemm_left_last),
        cmocka_unit_test(test_l2_store_finds_what_gemm_store_measured),
        cmocka_unit_test(test_l2_argmax_walks_the_logits),
        cmocka_unit_test(test_l2_large_m_groups_reread_weights_and_input),
        cmocka_unit_test(test_l2_later_group_rereads_resident_weights),
        cmocka_unit_test(test_l2_one_reader_weights),
        cmocka_unit_test(test_segments_cover_the_traffic),
        cmocka_unit_test(test_xfers_and_totals),
        cmocka_unit_test(test_bad_input),
        cmocka_unit_test(test_l2_memo_gives_the_replays_bytes),
        cmocka_unit_test(test_l2_edge_closed_form),
        cmocka_unit_test(test_l2_edge_spreads_evictions_by_age),
        cmocka_unit_test(test_l2_edge_leaves_what_it_cannot_take),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
