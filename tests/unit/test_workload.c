/* test_workload.c - synthetic generators, length distributions, options, closed loop, summary. */
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

#include "workload/workload.h"

static dkv_workload *synth_ok(const dkv_synth_cfg *c, const dkv_workload_opts *o)
{
    dkv_workload *w = NULL;
    dkv_err err = {0};
    dkv_status rc = dkv_workload_synth(c, o, &w, &err);
    if (rc != DKV_OK) fail_msg("synth failed: %s", err.msg);
    return w;
}

static dkv_workload_summary summary(const dkv_workload *w)
{
    dkv_workload_summary s;
    assert_int_equal(dkv_workload_summarize(w, &s, NULL), DKV_OK);
    return s;
}

static void test_poisson_rate_and_cv(void **state)
{
    (void)state;
    dkv_synth_cfg c;
    dkv_synth_cfg_default(&c);
    c.n_requests = 20000;
    c.rate = 10.0;
    c.seed = 42;
    dkv_workload *w = synth_ok(&c, NULL);
    dkv_workload_summary s = summary(w);
    assert_int_equal(s.count, 20000);
    assert_int_equal(s.released, 20000);
    assert_true(fabs(s.rate - 10.0) / 10.0 < 0.03);
    assert_true(fabs(s.interarrival_cv - 1.0) < 0.05);
    assert_true(dkv_workload_get(w, 0)->arrival_s == 0.0);
    for (size_t i = 1; i < dkv_workload_count(w); i++)
        assert_true(dkv_workload_get(w, i)->arrival_s >= dkv_workload_get(w, i - 1)->arrival_s);
    assert_string_equal(dkv_workload_source(w), "synth:poisson");
    assert_false(dkv_workload_is_closed(w));
    dkv_workload_free(w);
}

static void test_gamma_cv(void **state)
{
    (void)state;
    const double cvs[] = {0.5, 3.0};
    for (int k = 0; k < 2; k++) {
        dkv_synth_cfg c;
        dkv_synth_cfg_default(&c);
        c.arrival = DKV_ARRIVAL_GAMMA;
        c.n_requests = 50000;
        c.rate = 5.0;
        c.cv = cvs[k];
        c.seed = 7 + k;
        dkv_workload *w = synth_ok(&c, NULL);
        dkv_workload_summary s = summary(w);
        assert_true(fabs(s.rate - 5.0) / 5.0 < 0.05);
        if (fabs(s.interarrival_cv - cvs[k]) / cvs[k] > 0.08)
            fail_msg("gamma cv %g: measured %g", cvs[k], s.interarrival_cv);
        dkv_workload_free(w);
    }
}

static void test_fixed_arrivals(void **state)
{
    (void)state;
    dkv_synth_cfg c;
    dkv_synth_cfg_default(&c);
    c.arrival = DKV_ARRIVAL_FIXED;
    c.n_requests = 5;
    c.interval_s = 0.25;
    dkv_workload *w = synth_ok(&c, NULL);
    for (size_t i = 0; i < 5; i++) {
        const dkv_request *r = dkv_workload_get(w, i);
        assert_true(r->arrival_s == 0.25 * (double)i);
        assert_int_equal(r->prompt_tokens, 512);
        assert_int_equal(r->gen_tokens, 256);
        assert_int_equal(r->id, i);
        assert_int_equal(r->user, DKV_NO_USER);
    }
    assert_null(dkv_workload_get(w, 5));
    dkv_workload_free(w);
    c.interval_s = 0;
    w = synth_ok(&c, NULL);
    for (size_t i = 0; i < 5; i++) assert_true(dkv_workload_get(w, i)->arrival_s == 0.0);
    dkv_workload_summary s = summary(w);
    assert_true(s.duration_s == 0.0 && s.rate == 0.0);
    dkv_workload_free(w);
}

static void test_closed_loop(void **state)
{
    (void)state;
    dkv_synth_cfg c;
    dkv_synth_cfg_default(&c);
    c.arrival = DKV_ARRIVAL_CLOSED;
    c.n_requests = 10;
    c.n_users = 4;
    c.think_s = 2.0;
    c.think_exponential = false;
    dkv_workload *w = synth_ok(&c, NULL);
    assert_true(dkv_workload_is_closed(w));
    assert_int_equal(dkv_workload_users(w), 4);
    for (size_t i = 0; i < 10; i++) {
        const dkv_request *r = dkv_workload_get(w, i);
        assert_int_equal(r->user, i % 4);
        if (i < 4) assert_true(r->arrival_s == 0.0);
        else assert_true(isinf(r->arrival_s));
        assert_int_equal(r->next_of_user, i + 4 < 10 ? i + 4 : DKV_NO_NEXT);
    }
    dkv_workload_summary s = summary(w);
    assert_int_equal(s.released, 4);
    uint32_t next = 0;
    assert_true(dkv_workload_closed_release(w, 1, 5.5, &next));
    assert_int_equal(next, 5);
    assert_true(dkv_workload_get(w, 5)->arrival_s == 7.5);  /* 5.5 + think 2.0 */
    assert_true(dkv_workload_closed_release(w, 5, 9.0, &next));
    assert_int_equal(next, 9);
    assert_false(dkv_workload_closed_release(w, 9, 20.0, &next));
    assert_int_equal(next, DKV_NO_NEXT);
    dkv_workload_closed_reset(w);
    assert_true(isinf(dkv_workload_get(w, 5)->arrival_s));
    assert_true(dkv_workload_get(w, 1)->arrival_s == 0.0);
    dkv_workload_free(w);

    /* exponential think times: mean close to think_s; staggered first requests */
    c.n_requests = 20000;
    c.n_users = 8;
    c.think_exponential = true;
    c.stagger_first = true;
    c.seed = 3;
    w = synth_ok(&c, NULL);
    double sum = 0;
    for (size_t i = 0; i < dkv_workload_count(w); i++) sum += dkv_workload_get(w, i)->think_s;
    assert_true(fabs(sum / 20000 - 2.0) < 0.06);
    assert_true(dkv_workload_get(w, 0)->arrival_s > 0);
    /* open-loop workloads release nothing */
    dkv_workload_free(w);
    dkv_synth_cfg_default(&c);
    w = synth_ok(&c, NULL);
    assert_false(dkv_workload_closed_release(w, 0, 1.0, &next));
    dkv_workload_free(w);
}

static void test_length_distributions(void **state)
{
    (void)state;
    dkv_synth_cfg c;
    dkv_synth_cfg_default(&c);
    c.n_requests = 40000;
    c.seed = 11;
    dkv_err err = {0};
    assert_int_equal(dkv_len_lognormal_mean_median(2048, 1024, &c.prompt, &err), DKV_OK);
    assert_true(fabs(c.prompt.mu - log(1024.0)) < 1e-12);
    c.gen = dkv_len_uniform(10, 20);
    dkv_workload *w = synth_ok(&c, NULL);
    dkv_workload_summary s = summary(w);
    if (fabs(s.prompt_median - 1024) / 1024 > 0.03) fail_msg("lognormal median %g", s.prompt_median);
    if (fabs(s.prompt_mean - 2048) / 2048 > 0.05) fail_msg("lognormal mean %g", s.prompt_mean);
    assert_int_equal(s.gen_min, 10);
    assert_int_equal(s.gen_max, 20);
    assert_true(fabs(s.gen_mean - 15.0) < 0.1);
    dkv_workload_free(w);

    /* clamps on the distribution */
    c.prompt.min = 512;
    c.prompt.max = 4096;
    w = synth_ok(&c, NULL);
    s = summary(w);
    assert_int_equal(s.prompt_min, 512);
    assert_int_equal(s.prompt_max, 4096);
    dkv_workload_free(w);

    /* empirical: only table values, each about a third of the time */
    const uint32_t vals[] = {100, 200, 300};
    dkv_lengths *t = NULL;
    assert_int_equal(dkv_lengths_from_array(vals, 3, &t, &err), DKV_OK);
    c.prompt = dkv_len_empirical(t);
    c.gen = dkv_len_fixed(64);
    c.n_requests = 30000;
    w = synth_ok(&c, NULL);
    unsigned counts[3] = {0};
    for (size_t i = 0; i < dkv_workload_count(w); i++) {
        uint32_t p = dkv_workload_get(w, i)->prompt_tokens;
        assert_true(p == 100 || p == 200 || p == 300);
        counts[p / 100 - 1]++;
    }
    for (int k = 0; k < 3; k++) assert_true(fabs(counts[k] / 30000.0 - 1.0 / 3) < 0.02);
    dkv_lengths *g = NULL;
    assert_int_equal(dkv_lengths_from_workload(w, DKV_COL_GEN, &g, &err), DKV_OK);
    assert_int_equal(dkv_lengths_count(g), 30000);
    assert_int_equal(dkv_lengths_at(g, 17), 64);
    dkv_lengths_free(g);
    dkv_workload_free(w);
    dkv_lengths_free(t);
    dkv_lengths_free(NULL);
}

static void test_lengths_file(void **state)
{
    (void)state;
    char dir[] = "/tmp/dkv-wl-XXXXXX";
    assert_non_null(mkdtemp(dir));
    char path[256];
    snprintf(path, sizeof path, "%s/lengths.txt", dir);
    FILE *f = fopen(path, "w");
    fputs("# prompt lengths\n120\n\n  340  \n77\n", f);
    fclose(f);
    dkv_lengths *t = NULL;
    dkv_err err = {0};
    assert_int_equal(dkv_lengths_load(path, &t, &err), DKV_OK);
    assert_int_equal(dkv_lengths_count(t), 3);
    assert_int_equal(dkv_lengths_at(t, 1), 340);
    dkv_lengths_free(t);
    f = fopen(path, "w");
    fputs("120\n340\n-5\n", f);
    fclose(f);
    assert_int_equal(dkv_lengths_load(path, &t, &err), DKV_EFORMAT);
    assert_null(t);
    assert_non_null(strstr(err.msg, "lengths.txt:3:"));
    assert_non_null(strstr(err.msg, "(field length)"));
    unlink(path);
    rmdir(dir);
}

static void test_options(void **state)
{
    (void)state;
    dkv_synth_cfg c;
    dkv_synth_cfg_default(&c);
    c.arrival = DKV_ARRIVAL_FIXED;
    c.interval_s = 1.0;
    c.n_requests = 100;
    c.gen = dkv_len_uniform(1, 100);
    dkv_workload_opts o;
    dkv_workload_opts_default(&o);
    o.first_n = 10;
    o.time_scale = 3.0;
    o.rate_scale = 2.0;    /* arrivals * 3 / 2 */
    o.gen_multiple_of = 32;
    o.steps_min = 4;
    o.steps_max = 32;
    o.prompt_max = 300;
    dkv_workload *w = synth_ok(&c, &o);
    assert_int_equal(dkv_workload_count(w), 10);
    for (size_t i = 0; i < 10; i++) {
        const dkv_request *r = dkv_workload_get(w, i);
        assert_true(fabs(r->arrival_s - 1.5 * (double)i) < 1e-12);
        assert_int_equal(r->gen_tokens % 32, 0);
        assert_true(r->gen_tokens >= 32 && r->gen_tokens <= 128);
        assert_int_equal(r->prompt_tokens, 300);
    }
    dkv_workload_free(w);

    /* drawn steps cover the whole range and are reproducible */
    o.first_n = 0;
    c.n_requests = 5000;
    w = synth_ok(&c, &o);
    dkv_workload *w2 = synth_ok(&c, &o);
    uint32_t lo = UINT32_MAX, hi = 0;
    for (size_t i = 0; i < 5000; i++) {
        uint32_t s = dkv_workload_get(w, i)->steps_per_block;
        assert_int_equal(s, dkv_workload_get(w2, i)->steps_per_block);
        lo = s < lo ? s : lo;
        hi = s > hi ? s : hi;
    }
    assert_int_equal(lo, 4);
    assert_int_equal(hi, 32);
    dkv_workload_free(w2);
    /* another seed gives another stream */
    c.arrival = DKV_ARRIVAL_POISSON;
    c.seed = 1;
    dkv_workload_free(w);
    w = synth_ok(&c, NULL);
    c.seed = 2;
    w2 = synth_ok(&c, NULL);
    assert_true(dkv_workload_get(w, 10)->arrival_s != dkv_workload_get(w2, 10)->arrival_s);
    dkv_workload_free(w);
    dkv_workload_free(w2);
    dkv_workload_free(NULL);
}

static void expect_synth_error(const dkv_synth_cfg *c, const dkv_workload_opts *o, const char *needle)
{
    dkv_workload *w = (dkv_workload *)1;
    dkv_err err = {0};
    assert_int_equal(dkv_workload_synth(c, o, &w, &err), DKV_EINVAL);
    assert_null(w);
    if (!strstr(err.msg, needle)) fail_msg("message '%s' lacks '%s'", err.msg, needle);
}

static void test_bad_configs(void **state)
{
    (void)state;
    dkv_synth_cfg c;
    dkv_synth_cfg_default(&c);
    c.rate = -1;
    expect_synth_error(&c, NULL, "'rate' must be > 0 (got -1)");
    dkv_synth_cfg_default(&c);
    c.arrival = DKV_ARRIVAL_GAMMA;
    c.cv = 0;
    expect_synth_error(&c, NULL, "'cv'");
    dkv_synth_cfg_default(&c);
    c.n_requests = 0;
    expect_synth_error(&c, NULL, "n_requests");
    dkv_synth_cfg_default(&c);
    c.arrival = DKV_ARRIVAL_CLOSED;
    c.n_users = 0;
    expect_synth_error(&c, NULL, "n_users");
    dkv_synth_cfg_default(&c);
    c.prompt = dkv_len_uniform(50, 10);
    expect_synth_error(&c, NULL, "synth prompt: uniform");
    dkv_synth_cfg_default(&c);
    c.gen = dkv_len_fixed(0);
    expect_synth_error(&c, NULL, "synth gen");
    dkv_synth_cfg_default(&c);
    c.gen = dkv_len_empirical(NULL);
    expect_synth_error(&c, NULL, "empirical");
    dkv_synth_cfg_default(&c);
    dkv_workload_opts o;
    dkv_workload_opts_default(&o);
    o.time_scale = 0;
    expect_synth_error(&c, &o, "time_scale");
    dkv_workload_opts_default(&o);
    o.steps_min = 9;
    o.steps_max = 4;
    expect_synth_error(&c, &o, "steps_min");
    dkv_len_dist d;
    dkv_err err = {0};
    assert_int_equal(dkv_len_lognormal_mean_median(100, 200, &d, &err), DKV_EINVAL);
    assert_non_null(strstr(err.msg, "mean >= median"));
}

static void test_from_requests_and_summary(void **state)
{
    (void)state;
    const uint64_t h1[] = {5, 6, 7};
    dkv_request in[4];
    memset(in, 0, sizeof in);
    const double arr[] = {3.0, 1.0, 2.0, 1.0};
    const uint32_t P[] = {100, 400, 200, 300}, G[] = {10, 40, 30, 20};
    for (int i = 0; i < 4; i++) {
        in[i].id = (uint64_t)i;
        in[i].arrival_s = arr[i];
        in[i].prompt_tokens = P[i];
        in[i].gen_tokens = G[i];
        in[i].user = DKV_NO_USER;
        in[i].next_of_user = DKV_NO_NEXT;
    }
    in[2].hash_ids = h1;
    in[2].n_hash_ids = 3;
    dkv_workload *w = NULL;
    dkv_err err = {0};
    assert_int_equal(dkv_workload_from_requests(in, 4, NULL, &w, &err), DKV_OK);
    /* sorted by arrival, ties in input order */
    const uint64_t order[] = {1, 3, 2, 0};
    for (int i = 0; i < 4; i++) assert_int_equal(dkv_workload_get(w, i)->id, order[i]);
    const dkv_request *r = dkv_workload_get(w, 2);
    assert_int_equal(r->n_hash_ids, 3);
    assert_true(r->hash_ids != h1 && r->hash_ids[0] == 5 && r->hash_ids[2] == 7);
    assert_null(dkv_workload_get(w, 0)->hash_ids);
    dkv_workload_summary s = summary(w);
    assert_int_equal(s.count, 4);
    assert_true(s.duration_s == 2.0);
    assert_true(fabs(s.rate - 1.5) < 1e-12);
    assert_true(s.prompt_mean == 250.0 && s.prompt_median == 250.0);
    assert_int_equal(s.prompt_max, 400);
    assert_int_equal(s.prompt_min, 100);
    assert_true(s.gen_mean == 25.0 && s.gen_median == 25.0);
    assert_int_equal(s.gen_total, 100);
    dkv_workload_free(w);

    in[1].arrival_s = NAN;
    assert_int_equal(dkv_workload_from_requests(in, 4, NULL, &w, &err), DKV_EINVAL);
    assert_non_null(strstr(err.msg, "arrival_s"));
    assert_int_equal(dkv_workload_summarize(NULL, &s, NULL), DKV_OK);
    assert_int_equal(s.count, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_poisson_rate_and_cv),
        cmocka_unit_test(test_gamma_cv),
        cmocka_unit_test(test_fixed_arrivals),
        cmocka_unit_test(test_closed_loop),
        cmocka_unit_test(test_length_distributions),
        cmocka_unit_test(test_lengths_file),
        cmocka_unit_test(test_options),
        cmocka_unit_test(test_bad_configs),
        cmocka_unit_test(test_from_requests_and_summary),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
