/* test_policy_retention.c - sparse retention (k, dynamic rho, read runs), lifecycle replay,
 * short-request routing and multi-instance quotas. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <string.h>

#include "policy/lifecycle.h"
#include "policy/placement.h"
#include "policy/retention.h"
#include "policy/routing.h"
#include "test_policy_fixtures.h"

static void assert_names(dkv_status st, const dkv_err *e, const char *field)
{
    assert_int_not_equal(st, DKV_OK);
    if (!strstr(e->msg, field))
        fail_msg("error '%s' does not name '%s'", e->msg, field);
}

/* ---------------------------------------------------------------- retention */

static void test_retention_k(void **state)
{
    (void)state;
    assert_true(dkv_retention_k(0.3, 544, 32) == 154);  /* 0.3 * 512 = 153.6 */
    assert_true(dkv_retention_k(0.5, 96, 32) == 32);    /* exact */
    assert_true(dkv_retention_k(0.7, 42, 32) == 7);     /* 0.7 * 10 = 7.000000000000001 in binary */
    assert_true(dkv_retention_k(1.0, 288, 32) == 256);
    assert_true(dkv_retention_k(0.01, 33, 32) == 1);    /* any positive rho keeps a token */
    assert_true(dkv_retention_k(0.5, 32, 32) == 0);     /* no context */
    /* against the brute-force definition over a grid */
    for (uint64_t L = 40; L < 300; L += 37)
        for (int i = 1; i <= 10; i++) {
            double rho = i / 10.0;
            uint64_t k = dkv_retention_k(rho, L, 32), ctx = L - 32;
            /* smallest k with k >= rho * ctx (exact rational check: 10 k >= i * ctx) */
            assert_true(10 * k >= (uint64_t)i * ctx);
            assert_true(k == 0 || 10 * (k - 1) < (uint64_t)i * ctx);
        }
}

static void test_retention_plan_runs(void **state)
{
    (void)state;
    dkv_model m = tiny_model(); /* 64 B per token; streams 2*2*2 = 8 */
    dkv_gpu g = toy_gpu();
    dkv_retention_plan p;
    dkv_err e = {0};
    /* L = 20, B = 4, rho = 0.5: k = 8 */
    assert_int_equal(dkv_retention_plan_block(DKV_RETAIN_PER_HEAD, &m, &g, 0.5, 20, 4, &p, &e), DKV_OK);
    assert_true(p.k == 8 && p.context_tokens == 16);
    assert_true(p.retained_bytes == 512 && p.read_bytes == 768);
    assert_float_equal(p.retained_run_bytes, 8 * 4 * 2, 0); /* k * head_dim * 2 = 64 B */
    assert_true(p.n_runs == 16);                            /* 8 retained + 8 block runs */
    assert_float_equal(p.run_bytes, 48.0, 1e-12);
    /* retained at eff(64) = 0.75, block runs of 32 B at eff(32) */
    double e32 = 0.25 + 0.5 * log(4.0) / log(8.0);
    double t = 512 / (1e12 * 0.75) + 256 / (1e12 * e32);
    assert_float_equal(p.time_s, t, 1e-20);
    double t_head = p.time_s;
    /* shared set: runs of 1/(1-0.5) = 2 adjacent token rows of 2 heads * 4 * 2 B = 32 B */
    assert_int_equal(dkv_retention_plan_block(DKV_RETAIN_SHARED, &m, &g, 0.5, 20, 4, &p, &e), DKV_OK);
    assert_true(p.k == 8 && p.read_bytes == 768); /* same bytes */
    assert_float_equal(p.retained_run_bytes, 32.0, 0);
    assert_true(p.n_runs == 16 + 8);
    assert_true(p.time_s > t_head); /* shorter runs cost more here */
    /* bad arguments */
    assert_names(dkv_retention_plan_block(DKV_RETAIN_SHARED, &m, &g, 0.0, 20, 4, &p, &e), &e, "rho");
    assert_names(dkv_retention_plan_block(DKV_RETAIN_SHARED, &m, &g, 0.5, 4, 4, &p, &e), &e, "block_len");
}

static void test_retention_entropy_rule(void **state)
{
    (void)state;
    dkv_retention_config c;
    dkv_retention_config_default(&c);
    c.mode = DKV_RHO_ENTROPY;
    c.ent_a = 2;
    c.ent_b = 5;
    c.seed = 11;
    dkv_retention r;
    dkv_err e = {0};
    assert_int_equal(dkv_retention_init(&r, &c, &e), DKV_OK);
    const int n = 20000;
    double lo = 1, hi = 0;
    for (int i = 0; i < n; i++) {
        double rho;
        assert_int_equal(dkv_retention_next_rho(&r, 1, (uint32_t)i, &rho, &e), DKV_OK);
        assert_true(rho >= c.rho_min && rho <= c.rho_max);
        lo = fmin(lo, rho);
        hi = fmax(hi, rho);
    }
    /* E[rho] = 0.1 + 0.8 * 2/7 = 0.32857; sd of the mean ~ 0.8 * 0.16 / sqrt(n) = 0.0009 */
    assert_float_equal(r.rho_sum / (double)r.n_blocks, 0.1 + 0.8 * 2.0 / 7.0, 0.005);
    assert_true(hi - lo > 0.5); /* it is dynamic */
    /* a different distribution moves the mean: Beta(5, 2) -> 0.1 + 0.8 * 5/7 */
    c.ent_a = 5;
    c.ent_b = 2;
    assert_int_equal(dkv_retention_init(&r, &c, &e), DKV_OK);
    for (int i = 0; i < n; i++)
        dkv_retention_rho_fn(&r, 1, (uint32_t)i, 0.5);
    assert_float_equal(r.rho_sum / (double)r.n_blocks, 0.1 + 0.8 * 5.0 / 7.0, 0.005);
    /* a list of samples is cycled */
    const double list[] = {0.0, 0.5, 1.0};
    c.ent_samples = list;
    c.n_ent_samples = 3;
    assert_int_equal(dkv_retention_init(&r, &c, &e), DKV_OK);
    const double want[] = {0.1, 0.5, 0.9, 0.1};
    for (int i = 0; i < 4; i++) {
        double rho;
        assert_int_equal(dkv_retention_next_rho(&r, 1, (uint32_t)i, &rho, &e), DKV_OK);
        assert_float_equal(rho, want[i], 1e-12);
    }
}

static double cb_double_it(void *ud, uint64_t request, uint32_t block, double rho)
{
    int *calls = ud;
    (*calls)++;
    return block == 99 ? NAN : rho * 2 * (double)(block + 1) * (request == 3 ? 1 : 0);
}

static void test_retention_callback(void **state)
{
    (void)state;
    int calls = 0;
    dkv_retention_config c;
    dkv_retention_config_default(&c);
    c.mode = DKV_RHO_CALLBACK;
    c.rho = 0.2;
    c.callback = cb_double_it;
    c.callback_ud = &calls;
    dkv_retention r;
    dkv_err e = {0};
    assert_int_equal(dkv_retention_init(&r, &c, &e), DKV_OK);
    double rho;
    assert_int_equal(dkv_retention_next_rho(&r, 3, 0, &rho, &e), DKV_OK);
    assert_float_equal(rho, 0.4, 1e-12);
    /* out of [rho_min, rho_max]: an error naming the request, the block and the value ... */
    assert_int_equal(dkv_retention_next_rho(&r, 3, 5, &rho, &e), DKV_ERANGE);
    assert_non_null(strstr(e.msg, "retention.callback returned 2.4 for request 3 block 5: outside [rho_min, rho_max]"));
    assert_int_equal(dkv_retention_next_rho(&r, 4, 0, &rho, &e), DKV_ERANGE);
    assert_non_null(strstr(e.msg, "returned 0 for request 4 block 0"));
    assert_names(dkv_retention_next_rho(&r, 3, 99, &rho, &e), &e, "retention.callback");
    assert_non_null(strstr(e.msg, "returned nan for request 3 block 99"));
    assert_int_equal(calls, 4);
    assert_int_equal(r.n_clamped, 0);
    /* through decode's rho_fn signature: the error is kept (the engine stops on it), the base rho returned */
    assert_float_equal(dkv_retention_rho_fn(&r, 3, 99, 0.7), 0.2, 0);
    assert_int_equal(r.err.code, DKV_EINVAL);
    /* ... unless clamping is asked for: then clamped and counted; a NaN stays an error */
    c.clamp = true;
    assert_int_equal(dkv_retention_init(&r, &c, &e), DKV_OK);
    assert_int_equal(dkv_retention_next_rho(&r, 3, 5, &rho, &e), DKV_OK);
    assert_float_equal(rho, 0.9, 0);            /* 2.4 clamped to rho_max */
    assert_int_equal(dkv_retention_next_rho(&r, 4, 0, &rho, &e), DKV_OK);
    assert_float_equal(rho, 0.1, 0);            /* 0 clamped to rho_min */
    assert_int_equal(dkv_retention_next_rho(&r, 3, 0, &rho, &e), DKV_OK);
    assert_float_equal(rho, 0.4, 1e-12);        /* in range: not counted */
    assert_int_equal(r.n_clamped, 2);
    assert_names(dkv_retention_next_rho(&r, 3, 99, &rho, &e), &e, "retention.callback");
}

static void test_retention_validation_names_field(void **state)
{
    (void)state;
    const char *fields[] = {"retention.rho", "retention.set", "retention.mode", "retention.rho_min",
                            "retention.rho_max", "retention.ent_a", "retention.ent_b", "retention.ent_samples",
                            "retention.callback"};
    static const double bad_list[] = {0.2, 1.5};
    for (int i = 0; i < 9; i++) {
        dkv_retention_config c;
        dkv_retention_config_default(&c);
        c.mode = DKV_RHO_ENTROPY;
        switch (i) {
        case 0: c.rho = 0; break;
        case 1: c.set = (dkv_retain_set)5; break;
        case 2: c.mode = (dkv_rho_mode)5; break;
        case 3: c.rho_min = 0; break;
        case 4: c.rho_max = 0.05; break;
        case 5: c.ent_a = -1; break;
        case 6: c.ent_b = 0; break;
        case 7: c.ent_samples = bad_list; c.n_ent_samples = 2; break;
        case 8: c.mode = DKV_RHO_CALLBACK; break;
        }
        dkv_err e = {0};
        assert_names(dkv_retention_config_validate(&c, &e), &e, fields[i]);
    }
    dkv_err e = {0};
    int s, md;
    assert_names(dkv_names_parse(&dkv_retain_set_names, "perhead", &s, &e), &e, "retention.set");
    assert_names(dkv_names_parse(&dkv_rho_mode_names, "entropi", &md, &e), &e, "retention.mode");
}

/* ---------------------------------------------------------------- lifecycle */

static const dkv_ref_event stream[] = {
    {0, +1, 0, 0.0},  {1, +1, 1, 0.1}, {0, -1, 2, 0.2}, /* block 0 dead at step 2 */
    {1, -1, 3, 0.3},                                    /* block 1 dead at step 3 */
    {1, +1, 5, 0.5},                                    /* block 1 retained again */
    {2, +2, 6, 0.6},  {2, -1, 7, 0.7}, {2, -1, 8, 0.8}, /* block 2 dead at step 8 */
    {1, -1, 9, 0.9},                                    /* block 1 dead at step 9 */
    {3, +1, 12, 1.2},
};

static void test_lifecycle_immediate_vs_deferred(void **state)
{
    (void)state;
    size_t n = sizeof stream / sizeof stream[0];
    dkv_lifecycle_config c;
    dkv_lifecycle_config_default(&c);
    dkv_block_free f[8];
    dkv_lifecycle_summary s;
    dkv_err e = {0};
    assert_int_equal(dkv_lifecycle_free_times(&c, stream, n, 4, f, 8, &s, &e), DKV_OK);
    assert_true(s.n_frees == 4 && s.n_resurrected == 0 && s.n_pending == 0);
    assert_true(s.dead_block_steps == 0);
    assert_int_equal(f[0].block, 0);
    assert_true(f[0].free_step == 2);
    assert_int_equal(f[1].block, 1);
    assert_true(f[1].free_step == 3);

    /* deferred by 4 steps: block 0 (dead at 2) is due at 6 and lands at the event at step 6;
     * block 1 (dead at 3) is retained at 5 before its free: cancelled; block 2 (dead at 8) is
     * due at 12; block 1 again (dead at 9) is due at 13: pending at the end (step 12) */
    c.rule = DKV_RELEASE_DEFERRED;
    c.delay_steps = 4;
    assert_int_equal(dkv_lifecycle_free_times(&c, stream, n, 4, f, 8, &s, &e), DKV_OK);
    assert_true(s.n_frees == 2 && s.n_resurrected == 1 && s.n_pending == 1);
    assert_int_equal(f[0].block, 0);
    assert_true(f[0].zero_step == 2 && f[0].free_step == 6);
    assert_int_equal(f[1].block, 2);
    assert_true(f[1].zero_step == 8 && f[1].free_step == 12);
    assert_true(s.dead_block_steps == 4 + 4 + (12 - 9));
    assert_float_equal(s.dead_block_s, 0.4 + 0.4 + 0.3, 1e-9);
    /* a time delay instead of a step delay */
    c.delay_steps = 0;
    c.delay_s = 0.35;
    assert_true(!dkv_lifecycle_due(&c, 2, 0.2, 100, 0.5));
    assert_true(dkv_lifecycle_due(&c, 2, 0.2, 100, 0.55));
    /* cap smaller than the frees: counted, not written (f[1], past cap, keeps its sentinel) */
    c.rule = DKV_RELEASE_IMMEDIATE;
    const dkv_block_free sentinel = {.block = 0xdead, .zero_step = 777, .zero_s = -7, .free_step = 777, .free_s = -7};
    for (size_t k = 0; k < 8; k++)
        f[k] = sentinel;
    assert_int_equal(dkv_lifecycle_free_times(&c, stream, n, 4, f, 1, &s, &e), DKV_OK);
    assert_true(s.n_frees == 4);
    assert_int_equal(f[0].block, 0);   /* the first free, written */
    assert_true(f[0].zero_step == 2 && f[0].free_step == 2);
    assert_float_equal(f[0].free_s, 0.2, 1e-12);
    for (size_t k = 1; k < 8; k++)
        assert_true(f[k].block == sentinel.block && f[k].zero_step == sentinel.zero_step &&
                    f[k].zero_s == sentinel.zero_s && f[k].free_step == sentinel.free_step &&
                    f[k].free_s == sentinel.free_s);
}

static void test_lifecycle_errors(void **state)
{
    (void)state;
    dkv_lifecycle_config c;
    dkv_lifecycle_config_default(&c);
    dkv_lifecycle_summary s;
    dkv_err e = {0};
    dkv_ref_event neg[] = {{0, +1, 0, 0}, {0, -2, 1, 0}};
    assert_int_equal(dkv_lifecycle_free_times(&c, neg, 2, 1, NULL, 0, &s, &e), DKV_ESTATE);
    assert_non_null(strstr(e.msg, "event 1"));
    dkv_ref_event oob[] = {{5, +1, 0, 0}};
    assert_int_equal(dkv_lifecycle_free_times(&c, oob, 1, 2, NULL, 0, &s, &e), DKV_EINVAL);
    dkv_ref_event back[] = {{0, +1, 3, 0}, {0, -1, 2, 0}};
    assert_int_equal(dkv_lifecycle_free_times(&c, back, 2, 1, NULL, 0, &s, &e), DKV_EINVAL);
    assert_non_null(strstr(e.msg, "backwards"));
    c.rule = DKV_RELEASE_DEFERRED;
    c.delay_steps = 0;
    c.delay_s = 0;
    assert_names(dkv_lifecycle_config_validate(&c, &e), &e, "lifecycle.delay_steps");
    c.delay_s = -1;
    assert_names(dkv_lifecycle_config_validate(&c, &e), &e, "lifecycle.delay_s");
    c.rule = (dkv_release_rule)4;
    c.delay_s = 0;
    assert_names(dkv_lifecycle_config_validate(&c, &e), &e, "lifecycle.rule");
    int r;
    assert_names(dkv_names_parse(&dkv_release_rule_names, "later", &r, &e), &e, "lifecycle.rule");
}

/* ---------------------------------------------------------------- routing */

static void test_routing_breakeven(void **state)
{
    (void)state;
    /* pool: 120 us set-up + 2 us per block, 1 us per step; plain: 65 us per step (malloc + free).
     * 4 blocks: n* = (120 + 8) / 64 = 2 steps */
    dkv_routing_costs k = {.setup_s = 120e-6, .block_s = 2e-6, .pool_step_s = 1e-6, .plain_step_s = 65e-6};
    assert_float_equal(dkv_routing_breakeven_steps(&k, 4), 2.0, 1e-12);
    dkv_routing_config c;
    dkv_routing_config_default(&c);
    c.enabled = true;
    dkv_route_request r = {.lifetime_tokens = 1, .steps = 1, .kv_bytes = 4000, .block_bytes = 1024};
    dkv_route_decision d;
    dkv_err e = {0};
    assert_int_equal(dkv_routing_decide(&c, &k, &r, &d, &e), DKV_OK);
    assert_true(d.n_blocks == 4 && d.pool_bytes == 4096 && d.plain_bytes == 4000);
    assert_int_equal(d.route, DKV_ROUTE_PLAIN);            /* 1 step < 2 */
    assert_float_equal(d.pool_s, 120e-6 + 8e-6 + 1e-6, 1e-15);
    assert_float_equal(d.plain_s, 65e-6, 1e-15);
    r.steps = 2;                                           /* at the break-even: pool (costs equal) */
    assert_int_equal(dkv_routing_decide(&c, &k, &r, &d, &e), DKV_OK);
    assert_int_equal(d.route, DKV_ROUTE_POOL);
    assert_float_equal(d.pool_s, d.plain_s, 1e-15);
    /* a token threshold overrides the break-even */
    c.threshold_tokens = 64;
    r.lifetime_tokens = 63;
    r.steps = 1000;
    assert_int_equal(dkv_routing_decide(&c, &k, &r, &d, &e), DKV_OK);
    assert_int_equal(d.route, DKV_ROUTE_PLAIN);
    r.lifetime_tokens = 64;
    assert_int_equal(dkv_routing_decide(&c, &k, &r, &d, &e), DKV_OK);
    assert_int_equal(d.route, DKV_ROUTE_POOL);
    /* disabled: always the pool; a plain path that is not dearer: never worth the pool */
    c.enabled = false;
    r.lifetime_tokens = 1;
    assert_int_equal(dkv_routing_decide(&c, &k, &r, &d, &e), DKV_OK);
    assert_int_equal(d.route, DKV_ROUTE_POOL);
    k.plain_step_s = 1e-6;
    assert_true(isinf(dkv_routing_breakeven_steps(&k, 4)));
    /* validation */
    k.block_s = -1;
    assert_names(dkv_routing_decide(&c, &k, &r, &d, &e), &e, "routing.costs.block_s");
    k.block_s = 0;
    r.block_bytes = 0;
    assert_names(dkv_routing_decide(&c, &k, &r, &d, &e), &e, "block_bytes");
}

/* ---------------------------------------------------------------- placement */

static void test_placement_quotas(void **state)
{
    (void)state;
    dkv_placement_config c;
    dkv_placement_config_default(&c);
    c.n_instances = 4;
    dkv_quota q[4];
    dkv_err e = {0};
    /* 100 blocks of 10 B; shared, half the fair share guaranteed: 12 each, burst 100 - 36 = 64 */
    assert_int_equal(dkv_placement_quotas(&c, 1005, 10, q, &e), DKV_OK);
    for (int i = 0; i < 4; i++) {
        assert_true(q[i].guaranteed_blocks == 12 && q[i].max_blocks == 64);
        assert_true(q[i].guaranteed_bytes == 120 && q[i].max_bytes == 640);
    }
    c.burst_frac = 0.5;
    assert_int_equal(dkv_placement_quotas(&c, 1000, 10, q, &e), DKV_OK);
    assert_true(q[0].max_blocks == 50);
    c.mode = DKV_PLACE_PARTITIONED;
    assert_int_equal(dkv_placement_quotas(&c, 1000, 10, q, &e), DKV_OK);
    for (int i = 0; i < 4; i++)
        assert_true(q[i].guaranteed_blocks == 25 && q[i].max_blocks == 25);
    /* weighted 3 : 1, fully guaranteed shared pool behaves like a partition */
    const double w[] = {3, 1};
    dkv_placement_config_default(&c);
    c.n_instances = 2;
    c.weights = w;
    c.guaranteed_frac = 1;
    assert_int_equal(dkv_placement_quotas(&c, 1000, 10, q, &e), DKV_OK);
    assert_true(q[0].guaranteed_blocks == 75 && q[0].max_blocks == 75);
    assert_true(q[1].guaranteed_blocks == 25 && q[1].max_blocks == 25);
    /* validation */
    const char *fields[] = {"placement.n_instances", "placement.guaranteed_frac", "placement.burst_frac",
                            "placement.weights", "placement.mode"};
    const double bad_w[] = {1, 0};
    for (int i = 0; i < 5; i++) {
        dkv_placement_config_default(&c);
        c.n_instances = 2;
        switch (i) {
        case 0: c.n_instances = 0; break;
        case 1: c.guaranteed_frac = 1.5; break;
        case 2: c.burst_frac = 0; break;
        case 3: c.weights = bad_w; break;
        case 4: c.mode = (dkv_placement)3; break;
        }
        assert_names(dkv_placement_config_validate(&c, &e), &e, fields[i]);
    }
    int p;
    assert_names(dkv_names_parse(&dkv_placement_names, "partition", &p, &e), &e, "placement.mode");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_retention_k),
        cmocka_unit_test(test_retention_plan_runs),
        cmocka_unit_test(test_retention_entropy_rule),
        cmocka_unit_test(test_retention_callback),
        cmocka_unit_test(test_retention_validation_names_field),
        cmocka_unit_test(test_lifecycle_immediate_vs_deferred),
        cmocka_unit_test(test_lifecycle_errors),
        cmocka_unit_test(test_routing_breakeven),
        cmocka_unit_test(test_placement_quotas),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
