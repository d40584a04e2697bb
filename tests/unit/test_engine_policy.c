/* test_engine_policy.c - the policies' one table (core/engine/engine_policy.c, engine.h
 * "dkv_engine_policy"): every entry is well formed (a unique name, its config inside
 * dkv_engine_config, keys inside its config, used_if naming an enum key), the table's defaults are
 * each policy's own, and dkv_engine_config_validate reaches every entry that can refuse a value (a
 * bad value of each is refused, naming it; routing has no bad value: routing.c accepts every value
 * of its two fields, so no test can see whether validation reaches it). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "engine/engine.h"

static void test_table_well_formed(void **state)
{
    (void)state;
    assert_true(dkv_engine_n_policies >= 6);
    for (size_t i = 0; i < dkv_engine_n_policies; i++) {
        const dkv_engine_policy *e = &dkv_engine_policies[i];
        const dkv_policy *p = e->policy;
        assert_non_null(p);
        assert_non_null(p->name);
        assert_non_null(p->set_default);
        assert_non_null(p->validate);
        assert_true(e->offset + p->config_bytes <= sizeof(dkv_engine_config));
        for (size_t j = 0; j < i; j++) {
            if (strcmp(dkv_engine_policies[j].policy->name, p->name) == 0)
                fail_msg("policy '%s' registered twice", p->name);
            size_t a = dkv_engine_policies[j].offset, b = a + dkv_engine_policies[j].policy->config_bytes;
            if (e->offset < b && a < e->offset + p->config_bytes)
                fail_msg("policies '%s' and '%s' share config bytes", dkv_engine_policies[j].policy->name, p->name);
        }
        size_t n = 0;
        for (const dkv_policy_key *k = p->keys; k && k->name; k++, n++) {
            size_t w = k->type == DKV_POLICY_KEY_NUM ? sizeof(double) : k->type == DKV_POLICY_KEY_UINT ? sizeof(uint32_t)
                       : k->type == DKV_POLICY_KEY_BOOL ? sizeof(bool) : sizeof(int);
            if (k->offset + w > p->config_bytes)
                fail_msg("%s.%s lies outside its config", p->name, k->name);
            if (k->type == DKV_POLICY_KEY_ENUM && (!k->names || k->names->n < 1))
                fail_msg("%s.%s: an enum key without names", p->name, k->name);
            if (k->used_if) {
                const dkv_policy_key *c = p->keys;
                while (c->name && strcmp(c->name, k->used_if) != 0)
                    c++;
                if (!c->name || c->type != DKV_POLICY_KEY_ENUM || !k->used_mask)
                    fail_msg("%s.%s: used_if '%s' is not an enum key of the policy", p->name, k->name, k->used_if);
            }
        }
        assert_true(n <= DKV_POLICY_MAX_KEYS);
    }
}

/* dkv_engine_config_default sets each policy by its own _default (but for the two fields that
 * come from the preset: logit.max_num_logits and retention.rho / seed). */
static void test_defaults_are_the_policies(void **state)
{
    (void)state;
    dkv_engine_config c;
    dkv_engine_config_default(&c);
    dkv_layout_config y;
    memset(&y, 0, sizeof y);   /* padding: as dkv_engine_config_default's memset */
    dkv_layout_config_default(&y);
    assert_memory_equal(&c.layout, &y, sizeof y);
    dkv_offload_config o;
    memset(&o, 0, sizeof o);   /* padding: as dkv_engine_config_default's memset */
    dkv_offload_config_default(&o);
    assert_memory_equal(&c.offload, &o, sizeof o);
    dkv_lifecycle_config f;
    memset(&f, 0, sizeof f);   /* padding: as dkv_engine_config_default's memset */
    dkv_lifecycle_config_default(&f);
    assert_memory_equal(&c.lifecycle, &f, sizeof f);
    dkv_routing_config r;
    memset(&r, 0, sizeof r);   /* padding: as dkv_engine_config_default's memset */
    dkv_routing_config_default(&r);
    assert_memory_equal(&c.routing, &r, sizeof r);
    dkv_logit_config l;
    dkv_logit_config_default(&l);
    assert_int_equal(c.logit.max_num_logits, 0);   /* from the preset */
    assert_int_equal(c.logit.upcast_bytes, l.upcast_bytes);
    dkv_retention_config t;
    dkv_retention_config_default(&t);
    assert_true(c.retention.rho < 0);
    assert_int_equal(c.retention.set, t.set);
    assert_int_equal(c.retention.mode, t.mode);
}

/* ---------------------------------------------------------------- validation */

static dkv_model tiny_model(void)
{
    dkv_model m = {.name = "tiny", .n_layers = 2, .hidden = 64, .ffn = 128, .n_heads = 4, .n_kv_heads = 4,
                   .head_dim = 16, .vocab = 100, .mask_id = 99, .max_len = 1024, .rope_theta = 10000,
                   .weight_dtype = DKV_DTYPE_BF16, .kv_dtype = DKV_DTYPE_BF16, .act_dtype = DKV_DTYPE_BF16};
    return m;
}

static dkv_gpu tiny_gpu(void)
{
    dkv_gpu g = {.name = "toy", .hbm_bytes = 256.0 * 1048576, .hbm_bw = 1e12, .flops_bf16 = 1e14, .flops_fp32 = 1e13,
                 .pcie_h2d_pinned = 1e10, .pcie_d2h_pinned = 1e10, .pcie_bidir_pinned = 1.8e10,
                 .pcie_h2d_pageable = 5e9, .pcie_d2h_pageable = 5e9, .cost_per_hour = 2.0, .max_num_logits = 1024,
                 .max_num_batched_tokens = 8192, .retention = 0.5};
    return g;
}

static const dkv_backend_i no_iface = {.name = "none"};   /* validation never runs it */

typedef struct vfx {
    dkv_model m;
    dkv_gpu g;
    dkv_backend be;
    dkv_workload *w;
} vfx;

/* A config that dkv_engine_config_validate accepts (asserted), to spoil one field of. */
static void valid_config(vfx *f, dkv_engine_config *c)
{
    dkv_engine_config_default(c);
    c->model = &f->m;
    c->gpu = &f->g;
    c->backend = &f->be;
    c->workload = f->w;
    c->decode.block_len = 16;
    c->sizing.block_tokens = 16;
    c->mem.capacity_bytes = 4u << 20;
    c->device_capacity_bytes = 64u << 20;
    c->decode.cache = DKV_CACHE_SPARSE;   /* retention is checked only there (engine_policy.c sparse_mode) */
    dkv_err e = {0};
    if (dkv_engine_config_validate(c, &e) != DKV_OK)
        fail_msg("the base config is refused: %s", e.msg);
}

/* Sets one bad field of the policy's config (in c); false: the policy has no bad value. */
static bool spoil(const dkv_policy *p, dkv_engine_config *c)
{
    if (p == &dkv_logit_policy)
        c->logit.upcast_bytes = 3;                          /* "logit.upcast_bytes = 3: must be 0, 2, 4 or 8" */
    else if (p == &dkv_layout_policy)
        c->layout.layout = (dkv_layout)7;                   /* "layout.layout = 7: not a layout" */
    else if (p == &dkv_offload_policy)
        c->offload.t1 = 2;                                  /* "offload.t1 = 2: must be in [0, 1]" */
    else if (p == &dkv_lifecycle_policy)   /* "lifecycle.delay_steps and ...: a deferred rule needs a delay" */
        c->lifecycle.rule = DKV_RELEASE_DEFERRED, c->lifecycle.delay_steps = 0, c->lifecycle.delay_s = 0;
    else if (p == &dkv_retention_policy)
        c->retention.set = (dkv_retain_set)7;               /* "retention.set = 7: expected per_head or shared" */
    else if (p == &dkv_routing_policy)
        return false;   /* routing.c: "every value of both fields is meaningful" */
    else
        fail_msg("policy '%s' has no case here: give it a bad value", p->name);
    return true;
}

/* For each entry of the table, a default config with one bad field of that policy is refused by
 * dkv_engine_config_validate (the engine's loop over the table), with a message naming the policy
 * ("<name>.<field> ..." as each _validate spells it). */
static void test_validate_through_table(void **state)
{
    (void)state;
    vfx f = {.m = tiny_model(), .g = tiny_gpu(), .be = {.iface = &no_iface}};
    dkv_request rq = {.arrival_s = 0, .prompt_tokens = 64, .gen_tokens = 32, .user = DKV_NO_USER,
                      .next_of_user = DKV_NO_NEXT};
    dkv_err e = {0};
    assert_int_equal(dkv_workload_from_requests(&rq, 1, NULL, &f.w, &e), DKV_OK);
    dkv_engine_config c;
    size_t refused = 0, none = 0;
    for (size_t i = 0; i < dkv_engine_n_policies; i++) {
        const dkv_policy *p = dkv_engine_policies[i].policy;
        valid_config(&f, &c);
        if (!spoil(p, &c)) {
            /* routing: the extremes of its fields pass (were a value refused, it should be tested above) */
            assert_ptr_equal(p, &dkv_routing_policy);
            c.routing.enabled = true, c.routing.threshold_tokens = UINT32_MAX;
            assert_int_equal(dkv_engine_config_validate(&c, &e), DKV_OK);
            none++;
            continue;
        }
        memset(&e, 0, sizeof e);
        if (dkv_engine_config_validate(&c, &e) == DKV_OK)
            fail_msg("a bad %s config passes dkv_engine_config_validate", p->name);
        char prefix[64];
        snprintf(prefix, sizeof prefix, "%s.", p->name);
        if (strncmp(e.msg, prefix, strlen(prefix)) != 0)
            fail_msg("bad %s config: the error '%s' does not name the policy ('%s...')", p->name, e.msg, prefix);
        assert_int_not_equal(p->validate(dkv_engine_policy_config(&c, i), &e), DKV_OK);   /* the policy's own */
        refused++;
    }
    assert_int_equal(refused + none, dkv_engine_n_policies);
    assert_int_equal(none, 1);
    /* retention applies in the sparse cache mode only: the same bad value passes in the dual mode */
    valid_config(&f, &c);
    c.decode.cache = DKV_CACHE_DUAL;
    c.retention.set = (dkv_retain_set)7;
    assert_int_equal(dkv_engine_config_validate(&c, &e), DKV_OK);
    dkv_workload_free(f.w);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_table_well_formed),
        cmocka_unit_test(test_defaults_are_the_policies),
        cmocka_unit_test(test_validate_through_table),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
