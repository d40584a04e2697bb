/* test_policy.c - logit budget, KV layout, sizing and cost: hand-computed values. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <string.h>

#include "policy/policy.h"
#include "test_policy_fixtures.h"

#define GiB 1073741824.0

static void assert_names(dkv_status st, const dkv_err *e, const char *field)
{
    assert_int_not_equal(st, DKV_OK);
    if (!strstr(e->msg, field))
        fail_msg("error '%s' does not name '%s'", e->msg, field);
}

/* ---------------------------------------------------------------- logit budget */

static void test_logit_chunks_and_peak(void **state)
{
    (void)state;
    dkv_logit_config c;
    dkv_logit_config_default(&c);
    assert_int_equal(c.max_num_logits, 1024);
    dkv_logit_plan p;
    dkv_err e = {0};
    /* Fast-dLLM `all` rows for 32 requests over a 768-token canvas: 24576 rows, 24 chunks */
    assert_int_equal(dkv_logit_plan_compute(&c, 24576, 126464, DKV_DTYPE_BF16, &p, &e), DKV_OK);
    assert_int_equal(p.n_chunks, 24);
    assert_int_equal(p.chunk_rows, 1024);
    assert_true(p.chunk_bytes == 258998272ULL);          /* 1024 * 126464 * 2 */
    assert_true(p.temp_bytes == 1035993088ULL);          /* 1024 * 126464 * 4 * 2 */
    assert_true(p.peak_bytes == 1294991360ULL);
    assert_true(p.unchunked_peak_bytes == 24ULL * 1294991360ULL);
    assert_true(p.write_bytes == 24576ULL * 126464 * 2);
    /* one row over a chunk: two chunks, the peak is still one full chunk */
    assert_int_equal(dkv_logit_plan_compute(&c, 1025, 126464, DKV_DTYPE_BF16, &p, &e), DKV_OK);
    assert_int_equal(p.n_chunks, 2);
    assert_true(p.peak_bytes == 1294991360ULL);
    /* `block` rows of one request: 32 rows, one chunk, no upcast temporaries */
    c.upcast_tensors = 0;
    c.upcast_bytes = 0;
    assert_int_equal(dkv_logit_plan_compute(&c, 32, 126464, DKV_DTYPE_BF16, &p, &e), DKV_OK);
    assert_int_equal(p.n_chunks, 1);
    assert_true(p.peak_bytes == 32ULL * 126464 * 2);
    /* unchunked, and nothing at all */
    c.max_num_logits = 0;
    assert_int_equal(dkv_logit_plan_compute(&c, 5000, 10, DKV_DTYPE_FP32, &p, &e), DKV_OK);
    assert_int_equal(p.n_chunks, 1);
    assert_true(p.peak_bytes == 5000ULL * 10 * 4);
    assert_int_equal(dkv_logit_plan_compute(&c, 0, 10, DKV_DTYPE_FP32, &p, &e), DKV_OK);
    assert_int_equal(p.n_chunks, 0);
    assert_true(p.peak_bytes == 0);
}

static void test_logit_max_rows_for_budget(void **state)
{
    (void)state;
    dkv_logit_config c;
    dkv_logit_config_default(&c);
    /* per row: 100 * (2 + 4 * 2) = 1000 bytes */
    assert_true(dkv_logit_max_rows_for_budget(&c, 100, DKV_DTYPE_BF16, 10999.0) == 10);
    assert_true(dkv_logit_max_rows_for_budget(&c, 100, DKV_DTYPE_BF16, 999.0) == 0);
}

static void test_logit_validation_names_field(void **state)
{
    (void)state;
    dkv_logit_config c;
    dkv_err e = {0};
    dkv_logit_config_default(&c);
    c.upcast_bytes = 3;
    assert_names(dkv_logit_config_validate(&c, &e), &e, "logit.upcast_bytes");
    dkv_logit_config_default(&c);
    c.upcast_tensors = 9;
    assert_names(dkv_logit_config_validate(&c, &e), &e, "logit.upcast_tensors");
    dkv_logit_plan p;
    dkv_logit_config_default(&c);
    assert_names(dkv_logit_plan_compute(&c, 1, 0, DKV_DTYPE_BF16, &p, &e), &e, "vocab");
}

/* ---------------------------------------------------------------- layout */

static double eff_toy(double run) /* the toy curve, log-linear between 8 and 64 bytes */
{
    if (run <= 8) return 0.25;
    if (run >= 64) return 0.75;
    return 0.25 + 0.5 * log(run / 8.0) / log(8.0);
}

static void test_layout_runs_tiny_model(void **state)
{
    (void)state;
    dkv_model m = tiny_model();
    dkv_gpu g = toy_gpu();
    dkv_layout_config c;
    dkv_layout_config_default(&c);
    dkv_layout_read r;
    dkv_err e = {0};
    /* 10 tokens * 64 B = 640 B.  t-major: 2 layers * 2 heads * {K,V} * 10 tokens = 80 runs of 8 B */
    assert_int_equal(dkv_layout_read_cost(&c, &m, &g, 4, 10, &r, &e), DKV_OK);
    assert_true(r.bytes == 640);
    assert_true(r.n_runs == 80);
    assert_float_equal(r.run_bytes, 8.0, 1e-12);
    assert_float_equal(r.efficiency, 0.25, 1e-12);
    assert_float_equal(r.time_s, 640 / (1e12 * 0.25), 1e-20);
    /* layer-major: 8 streams * ceil(10 / 4) blocks = 24 runs, mean 640 / 24 B */
    c.layout = DKV_LAYOUT_LAYER_MAJOR;
    assert_int_equal(dkv_layout_read_cost(&c, &m, &g, 4, 10, &r, &e), DKV_OK);
    assert_true(r.n_runs == 24);
    assert_float_equal(r.run_bytes, 640.0 / 24, 1e-12);
    assert_float_equal(r.efficiency, eff_toy(640.0 / 24), 1e-12);
    assert_true(r.efficiency > 0.25);
    /* a whole number of blocks: runs are block_tokens * head_dim * 2 = 32 B exactly */
    assert_int_equal(dkv_layout_read_cost(&c, &m, &g, 4, 8, &r, &e), DKV_OK);
    assert_float_equal(r.run_bytes, 32.0, 1e-12);
    /* zero tokens */
    assert_int_equal(dkv_layout_read_cost(&c, &m, &g, 4, 0, &r, &e), DKV_OK);
    assert_true(r.bytes == 0 && r.n_runs == 0);
}

static void test_layout_reorder(void **state)
{
    (void)state;
    dkv_model m = tiny_model();
    dkv_gpu g = toy_gpu();
    dkv_layout_config c;
    dkv_layout_config_default(&c);
    dkv_layout_reorder_cost rc;
    dkv_err e = {0};
    assert_int_equal(dkv_layout_reorder(&c, &m, &g, 4, 4, &rc, &e), DKV_OK);
    assert_true(rc.read_bytes == 0 && rc.time_s == 0); /* t-major: nothing to reorder */
    c.layout = DKV_LAYOUT_LAYER_MAJOR;
    assert_int_equal(dkv_layout_reorder(&c, &m, &g, 4, 4, &rc, &e), DKV_OK);
    assert_true(rc.read_bytes == 256 && rc.write_bytes == 256);
    /* write runs: 4 tokens * 4 * 2 B = 32 B */
    assert_float_equal(rc.time_s, 512 / (1e12 * eff_toy(32)), 1e-20);
    /* more tokens than a block: the run is capped at the block */
    assert_int_equal(dkv_layout_reorder(&c, &m, &g, 4, 100, &rc, &e), DKV_OK);
    assert_float_equal(rc.time_s, 2 * 6400 / (1e12 * eff_toy(32)), 1e-20);
}

static void test_layout_validation_names_field(void **state)
{
    (void)state;
    dkv_layout_config c;
    dkv_err e = {0};
    dkv_layout_config_default(&c);
    dkv_model m = tiny_model();
    dkv_gpu g = toy_gpu();
    dkv_layout_read r;
    assert_names(dkv_layout_read_cost(&c, &m, &g, 0, 10, &r, &e), &e, "block_tokens");
    c.layout = (dkv_layout)7;
    assert_names(dkv_layout_config_validate(&c, &e), &e, "layout.layout");
    dkv_layout_config_default(&c);
    c.reorder = (dkv_reorder)7;
    assert_names(dkv_layout_config_validate(&c, &e), &e, "layout.reorder");
    int l;
    assert_names(dkv_names_parse(&dkv_layout_names, "tmajr", &l, &e), &e, "layout.layout");
    assert_int_equal(dkv_names_parse(&dkv_layout_names, "layer_major", &l, &e), DKV_OK);
    assert_int_equal(l, DKV_LAYOUT_LAYER_MAJOR);
}

/* ---------------------------------------------------------------- sizing */

static void test_sizing_llada_80g(void **state)
{
    (void)state;
    dkv_model m = llada8b();
    dkv_gpu g = toy_gpu(); /* 80 GiB */
    dkv_sizing_config c;
    dkv_sizing_config_default(&c);
    dkv_sizing s;
    dkv_err e = {0};
    assert_int_equal(dkv_sizing_default(&c, &m, &g, &s, &e), DKV_OK);
    /* params = 2*126464*4096 + 32*(4*4096^2 + 3*4096*12288 + 2*4096) + 4096 = 8,015,581,184 */
    assert_float_equal(s.budget.weight_bytes, 16031162368.0, 0.5);
    assert_float_equal(s.budget.margin_bytes, 8.0 * GiB, 0.5);
    double usable = 80.0 * GiB - 16031162368.0 - 8.0 * GiB; /* 57.07 GiB */
    assert_float_equal(s.budget.usable_bytes, usable, 1.0);
    assert_float_equal(s.budget.kv_bytes, 0.7 * usable, 1.0);
    assert_float_equal(s.budget.act_bytes, 0.3 * usable, 1.0);
    assert_float_equal(s.budget.kv_bytes / s.budget.act_bytes, 7.0 / 3.0, 1e-12);
    /* 32-token blocks of 512 KiB/token = 16 MiB; floor(0.7 * usable / 16 MiB) = 2556 */
    assert_true(s.block_bytes == 32ULL * 524288);
    assert_true(s.n_blocks == 2556);
    assert_true(s.kv_tokens == 2556ULL * 32);
    /* no preset values: dLLM-Serve code defaults */
    assert_int_equal(s.max_num_logits, 1024);
    assert_int_equal(s.max_num_batched_tokens, 8192);
    assert_float_equal(s.retention, 0.5, 0);
    assert_true(s.logits_fit);
    /* preset values win over the code defaults, the config over both */
    g.max_num_logits = 16384;
    g.max_num_batched_tokens = 32768;
    g.retention = 0.3;
    c.max_num_batched_tokens = 4096;
    assert_int_equal(dkv_sizing_default(&c, &m, &g, &s, &e), DKV_OK);
    assert_int_equal(s.max_num_logits, 16384);
    assert_int_equal(s.max_num_batched_tokens, 4096);
    assert_float_equal(s.retention, 0.3, 0);
    /* a GPU too small for the weights */
    g.hbm_bytes = 16.0 * GiB;
    assert_int_equal(dkv_sizing_default(&c, &m, &g, &s, &e), DKV_ENOMEM);
}

static void test_sizing_validation_names_field(void **state)
{
    (void)state;
    dkv_sizing_config c;
    dkv_err e = {0};
    dkv_sizing_config_default(&c);
    c.margin = 1.0;
    assert_names(dkv_sizing_config_validate(&c, &e), &e, "sizing.margin");
    dkv_sizing_config_default(&c);
    c.kv_frac = 0;
    assert_names(dkv_sizing_config_validate(&c, &e), &e, "sizing.kv_frac");
    dkv_sizing_config_default(&c);
    c.block_tokens = 0;
    assert_names(dkv_sizing_config_validate(&c, &e), &e, "sizing.block_tokens");
    dkv_sizing_config_default(&c);
    c.retention = 1.5;
    assert_names(dkv_sizing_config_validate(&c, &e), &e, "sizing.retention");
}

/* ---------------------------------------------------------------- cost */

static void test_cost_arithmetic(void **state)
{
    (void)state;
    /* $3.50/h, 1 GPU, 1000 tokens/s: 3.5 / 3600 / 1000 * 1e6 = 0.97222 $/Mtok */
    assert_float_equal(dkv_cost_per_mtok(3.5, 1, 1000), 0.9722222222222222, 1e-12);
    assert_float_equal(dkv_cost_per_mtok(3.5, 4, 1000), 4 * 0.9722222222222222, 1e-12);
    assert_true(isinf(dkv_cost_per_mtok(3.5, 1, 0)));

    dkv_cost_config c;
    dkv_cost_config_default(&c);
    c.cost_per_hour = 3.5;
    c.kv_budget_bytes = 40 * GiB;
    c.kv_per_request_bytes = 1 * GiB;
    c.step_fixed_s = 3.7e-3;
    c.step_per_request_s = 0.5e-3;
    dkv_cost_result r;
    dkv_err e = {0};
    assert_int_equal(dkv_cost_from_memory(&c, &r, &e), DKV_OK);
    assert_true(r.concurrency == 40);
    assert_float_equal(r.step_s, 0.0237, 1e-12);
    assert_float_equal(r.tokens_per_s, 40 / 0.0237, 1e-9);
    assert_float_equal(r.cost_per_mtok, 3.5 / 3600 / (40 / 0.0237) * 1e6, 1e-9);
    assert_float_equal(r.memory_bound, 1.0, 0);
    /* halving KV per request doubles N and lowers $/token */
    double before = r.cost_per_mtok;
    c.kv_per_request_bytes = 0.5 * GiB;
    assert_int_equal(dkv_cost_from_memory(&c, &r, &e), DKV_OK);
    assert_true(r.concurrency == 80);
    assert_true(r.cost_per_mtok < before);
    /* the seq cap binds */
    c.max_seqs = 16;
    assert_int_equal(dkv_cost_from_memory(&c, &r, &e), DKV_OK);
    assert_true(r.concurrency == 16);
    assert_float_equal(r.memory_bound, 0.0, 0);
}

static void test_cost_validation_names_field(void **state)
{
    (void)state;
    dkv_cost_config c;
    dkv_cost_result r;
    dkv_err e = {0};
    const char *fields[] = {"cost.cost_per_hour", "cost.kv_budget_bytes", "cost.kv_per_request_bytes",
                            "cost.step_fixed_s", "cost.step_per_request_s", "cost.tokens_per_step", "cost.n_gpus"};
    for (int i = 0; i < 7; i++) {
        dkv_cost_config_default(&c);
        c.cost_per_hour = 1;
        c.kv_budget_bytes = 10;
        c.kv_per_request_bytes = 1;
        c.step_fixed_s = 1e-3;
        switch (i) {
        case 0: c.cost_per_hour = -1; break;
        case 1: c.kv_budget_bytes = 0; break;
        case 2: c.kv_per_request_bytes = -3; break;
        case 3: c.step_fixed_s = -1; break;
        case 4: c.step_per_request_s = NAN; break;
        case 5: c.tokens_per_step = 0; break;
        case 6: c.n_gpus = 0; break;
        }
        assert_names(dkv_cost_from_memory(&c, &r, &e), &e, fields[i]);
    }
    dkv_cost_config_default(&c);
    c.kv_budget_bytes = 10;
    c.kv_per_request_bytes = 1;
    assert_names(dkv_cost_config_validate(&c, &e), &e, "cost.step_fixed_s");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_logit_chunks_and_peak),
        cmocka_unit_test(test_logit_max_rows_for_budget),
        cmocka_unit_test(test_logit_validation_names_field),
        cmocka_unit_test(test_layout_runs_tiny_model),
        cmocka_unit_test(test_layout_reorder),
        cmocka_unit_test(test_layout_validation_names_field),
        cmocka_unit_test(test_sizing_llada_80g),
        cmocka_unit_test(test_sizing_validation_names_field),
        cmocka_unit_test(test_cost_arithmetic),
        cmocka_unit_test(test_cost_validation_names_field),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
