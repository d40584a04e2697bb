/* test_engine_policy.c - the policies' one table (core/engine/engine_policy.c, engine.h
 * "dkv_engine_policy"): every entry is well formed (a unique name, its config inside
 * dkv_engine_config, keys inside its config, used_if naming an enum key), the table's defaults are
 * each policy's own, and validation reaches every entry (a bad value of each is refused, naming it). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

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

/* Each entry's validate is the policy's own: a config refused by the policy is refused through
 * the table (lifecycle: deferred with no delay; layout: an out-of-range enum). */
static void test_validate_through_table(void **state)
{
    (void)state;
    dkv_engine_config c;
    dkv_engine_config_default(&c);
    int seen = 0;
    for (size_t i = 0; i < dkv_engine_n_policies; i++) {
        const dkv_policy *p = dkv_engine_policies[i].policy;
        void *cfg = dkv_engine_policy_config(&c, i);
        dkv_err err = {0};
        if (p == &dkv_lifecycle_policy) {
            dkv_lifecycle_config *f = cfg;
            assert_int_equal(p->validate(f, &err), DKV_OK);
            f->rule = DKV_RELEASE_DEFERRED, f->delay_steps = 0, f->delay_s = 0;
            assert_int_not_equal(p->validate(f, &err), DKV_OK);
            assert_int_not_equal(dkv_lifecycle_config_validate(f, &err), DKV_OK);
            seen++;
        } else if (p == &dkv_layout_policy) {
            dkv_layout_config *y = cfg;
            assert_int_equal(p->validate(y, &err), DKV_OK);
            y->layout = (dkv_layout)7;
            assert_int_not_equal(p->validate(y, &err), DKV_OK);
            seen++;
        }
    }
    assert_int_equal(seen, 2);
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
