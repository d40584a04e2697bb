/* test_policy_offload.c - progressive offload: phase boundaries, conserved bytes, the plain
 * baseline moving more, hand-traced transfers. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "policy/offload.h"
#include "test_policy_fixtures.h"

static void test_phase_boundaries_exact(void **state)
{
    (void)state;
    dkv_offload_config c;
    dkv_offload_config_default(&c);
    /* 96 steps (3 blocks of 32): phase 2 exactly at step 32, phase 3 exactly at step 64 */
    assert_int_equal(dkv_offload_phase(&c, 0, 96), 1);
    assert_int_equal(dkv_offload_phase(&c, 31, 96), 1);
    assert_int_equal(dkv_offload_phase(&c, 32, 96), 2);
    assert_int_equal(dkv_offload_phase(&c, 63, 96), 2);
    assert_int_equal(dkv_offload_phase(&c, 64, 96), 3);
    assert_int_equal(dkv_offload_phase(&c, 95, 96), 3);
    /* 10 steps: 10/3 = 3.33 -> phase 2 from step 4; 20/3 = 6.67 -> phase 3 from step 7 */
    assert_int_equal(dkv_offload_phase(&c, 3, 10), 1);
    assert_int_equal(dkv_offload_phase(&c, 4, 10), 2);
    assert_int_equal(dkv_offload_phase(&c, 6, 10), 2);
    assert_int_equal(dkv_offload_phase(&c, 7, 10), 3);
    /* degenerate thresholds */
    c.t1 = c.t2 = 0;
    assert_int_equal(dkv_offload_phase(&c, 0, 10), 3);
    c.t1 = c.t2 = 1;
    assert_int_equal(dkv_offload_phase(&c, 9, 10), 1);
    /* rank: round(0.3 * 128) = 38; never below 1 */
    dkv_offload_config_default(&c);
    assert_int_equal(dkv_offload_rank(&c, 128), 38);
    assert_int_equal(dkv_offload_rank(&c, 1), 1);
}

/* A dual-cache-like request of 6 steps: Refresh (writes all 1000 bytes) at steps 0 and 4,
 * Reuse (writes the 100-byte working set, reads all) otherwise. */
static const struct {
    uint64_t write;
} trace6[6] = {{1000}, {100}, {100}, {100}, {1000}, {100}};

typedef struct totals {
    uint64_t h2d, d2h, compress;
} totals;

static totals run6(dkv_offload_mode mode, uint64_t h2d_expect[6], uint64_t d2h_expect[6])
{
    dkv_model m = tiny_model(); /* head_dim 4: rank round(1.2) = 1 */
    dkv_offload_config c;
    dkv_offload_config_default(&c);
    c.mode = mode;
    dkv_offload_state st = {0};
    totals t = {0};
    for (uint32_t i = 0; i < 6; i++) {
        dkv_offload_step s = {.step = i, .n_steps = 6, .total_bytes = 1000, .working_bytes = 100,
                              .read_bytes = 1000, .write_bytes = trace6[i].write};
        dkv_offload_orders o;
        dkv_err e = {0};
        assert_int_equal(dkv_offload_decide(&c, &m, &s, &st, &o, &e), DKV_OK);
        /* bytes conserved: offloaded + resident = total, every step */
        assert_true(o.resident_bytes + o.offloaded_bytes == 1000);
        assert_true(st.gpu_raw + st.host_raw + st.host_lowrank == st.total);
        assert_true(o.resident_bytes == st.gpu_raw);
        if (h2d_expect)
            assert_true(o.h2d_bytes == h2d_expect[i]);
        if (d2h_expect)
            assert_true(o.d2h_bytes == d2h_expect[i]);
        t.h2d += o.h2d_bytes;
        t.d2h += o.d2h_bytes;
        t.compress += o.compress_bytes;
        if (mode == DKV_OFFLOAD_PROGRESSIVE) {
            assert_int_equal(o.phase, i < 2 ? 1 : i < 4 ? 2 : 3);
            /* phases 2 and 3 keep the minimum: the working set */
            assert_true(o.resident_bytes == (i < 2 ? 1000 : 100));
            if (i == 2) {
                assert_true(o.compress_bytes == 900);
                assert_float_equal(o.compress_flops, 2.0 * 1 * 450, 0); /* 2 r FLOPs per element */
            }
        }
        if (mode == DKV_OFFLOAD_PLAIN)
            assert_true(o.resident_bytes == 0);
    }
    return t;
}

static void test_progressive_trace(void **state)
{
    (void)state;
    /* step 2: 900 cold bytes -> 270-byte approximation out; step 3: fetched back (270);
     * step 4: the Refresh rewrites it, then 900 raw out; step 5: fetched raw (900) */
    uint64_t h2d[6] = {0, 0, 0, 270, 0, 900};
    uint64_t d2h[6] = {0, 0, 270, 0, 900, 0};
    totals p = run6(DKV_OFFLOAD_PROGRESSIVE, h2d, d2h);
    assert_true(p.h2d == 1170 && p.d2h == 1170 && p.compress == 900);
}

static void test_plain_moves_more(void **state)
{
    (void)state;
    /* plain: everything written goes out after the step; a Reuse fetches the 900 it does not compute */
    uint64_t h2d[6] = {0, 900, 900, 900, 0, 900};
    uint64_t d2h[6] = {1000, 100, 100, 100, 1000, 100};
    totals pl = run6(DKV_OFFLOAD_PLAIN, h2d, d2h);
    totals pr = run6(DKV_OFFLOAD_PROGRESSIVE, NULL, NULL);
    totals no = run6(DKV_OFFLOAD_NONE, NULL, NULL);
    assert_true(pl.h2d == 3600 && pl.d2h == 2400);
    assert_true(pl.h2d + pl.d2h > pr.h2d + pr.d2h);
    assert_true(no.h2d + no.d2h == 0);
}

static void test_growing_kv_goes_to_gpu(void **state)
{
    (void)state;
    /* prefix-cache-like growth: new KV appears on the GPU, then phase 3 moves the cold part out */
    dkv_model m = tiny_model();
    dkv_offload_config c;
    dkv_offload_config_default(&c);
    c.mode = DKV_OFFLOAD_PROGRESSIVE;
    c.t1 = c.t2 = 0.5;
    dkv_offload_state st = {0};
    dkv_offload_orders o;
    dkv_err e = {0};
    dkv_offload_step s = {.step = 0, .n_steps = 4, .total_bytes = 500, .working_bytes = 100, .read_bytes = 500,
                          .write_bytes = 500};
    assert_int_equal(dkv_offload_decide(&c, &m, &s, &st, &o, &e), DKV_OK);
    assert_true(st.gpu_raw == 500 && o.d2h_bytes == 0);
    s.step = 2;
    s.total_bytes = 800;
    s.write_bytes = 300;
    assert_int_equal(dkv_offload_decide(&c, &m, &s, &st, &o, &e), DKV_OK);
    assert_int_equal(o.phase, 3);
    assert_true(o.d2h_bytes == 700 && st.host_raw == 700 && st.gpu_raw == 100);
    /* a shrinking request is a state error naming the field */
    s.step = 3;
    s.total_bytes = 700;
    assert_int_equal(dkv_offload_decide(&c, &m, &s, &st, &o, &e), DKV_ESTATE);
    assert_non_null(strstr(e.msg, "total_bytes"));
}

static void test_offload_validation_names_field(void **state)
{
    (void)state;
    dkv_offload_config c;
    dkv_err e = {0};
    const char *fields[] = {"offload.t1", "offload.t2", "offload.lowrank_ratio", "offload.mode"};
    for (int i = 0; i < 4; i++) {
        dkv_offload_config_default(&c);
        switch (i) {
        case 0: c.t1 = -0.1; break;
        case 1: c.t2 = 0.2; break; /* below t1 */
        case 2: c.lowrank_ratio = 0; break;
        case 3: c.mode = (dkv_offload_mode)9; break;
        }
        dkv_status st = dkv_offload_config_validate(&c, &e);
        assert_int_not_equal(st, DKV_OK);
        if (!strstr(e.msg, fields[i]))
            fail_msg("'%s' does not name %s", e.msg, fields[i]);
    }
    int mm;
    assert_int_not_equal(dkv_names_parse(&dkv_offload_mode_names, "progresive", &mm, &e), DKV_OK);
    assert_non_null(strstr(e.msg, "offload.mode"));
    assert_int_equal(dkv_names_parse(&dkv_offload_mode_names, "plain", &mm, &e), DKV_OK);
    assert_int_equal(mm, DKV_OFFLOAD_PLAIN);
    /* step arguments */
    dkv_model m = tiny_model();
    dkv_offload_config_default(&c);
    dkv_offload_state st = {0};
    dkv_offload_orders o;
    dkv_offload_step s = {.step = 5, .n_steps = 5, .total_bytes = 10};
    assert_int_equal(dkv_offload_decide(&c, &m, &s, &st, &o, &e), DKV_EINVAL);
    assert_non_null(strstr(e.msg, "step"));
    s = (dkv_offload_step){.step = 0, .n_steps = 5, .total_bytes = 10, .working_bytes = 11};
    assert_int_equal(dkv_offload_decide(&c, &m, &s, &st, &o, &e), DKV_EINVAL);
    assert_non_null(strstr(e.msg, "working_bytes"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_phase_boundaries_exact),
        cmocka_unit_test(test_progressive_trace),
        cmocka_unit_test(test_plain_moves_more),
        cmocka_unit_test(test_growing_kv_goes_to_gpu),
        cmocka_unit_test(test_offload_validation_names_field),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
