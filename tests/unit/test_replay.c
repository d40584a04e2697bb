/* test_replay.c - core/replay: a trace file's events through a memory manager (replay.h). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "replay/replay.h"
#include "test_tmpdir.h"

static char g_dir[TEST_TMPDIR_LEN];

static int setup(void **state)
{
    (void)state;
    return test_tmpdir_make(g_dir, "replay");
}

static int teardown(void **state)
{
    (void)state;
    return test_tmpdir_remove(g_dir);
}

static void write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

typedef struct seen { uint64_t n, first_line; char first[256]; } seen;

static void on_anomaly(void *user, uint64_t line, const char *msg, uint64_t n_before)
{
    seen *s = user;
    if (n_before == 0) {
        s->first_line = line;
        snprintf(s->first, sizeof s->first, "%s", msg);
    }
    s->n++;
}

/* Two allocations, a free, a free of an unknown id, a request admit/finish (only the clock): the
 * counts, the anomaly with its line, and the manager's final state. */
static void test_replay_counts(void **state)
{
    (void)state;
    char path[TEST_TMPDIR_LEN + 16];
    snprintf(path, sizeof path, "%s/a.csv", g_dir);
    write_file(path, "time_s,kind,id,bytes,tag,request,sub\n"
                     "0.0,alloc,1,1000,kv,0,\n"
                     "0.5,alloc,2,3000,activation,0,\n"
                     "1.0,free,1,0,kv,0,\n"
                     "1.5,free,9,0,kv,0,\n"
                     "2.0,request,0,0,kv,0,finish\n");
    dkv_mem_options o = dkv_mem_options_default(DKV_MEM_CACHING);
    o.capacity_bytes = 1 << 30;
    dkv_mem *m = NULL;
    dkv_err err = {0};
    assert_int_equal(dkv_mem_new(&o, &m, &err), DKV_OK);
    dkv_replay_result r;
    seen s = {0};
    assert_int_equal(dkv_replay_trace(path, m, on_anomaly, &s, &r, &err), DKV_OK);
    assert_int_equal(r.n_events, 5);
    assert_int_equal(r.n_other, 1);
    assert_int_equal(r.anomalies, 1);
    assert_int_equal(s.n, 1);
    assert_int_equal(s.first_line, 5);   /* the header is line 1 */
    assert_int_equal(r.counts.n_alloc, 2);
    assert_int_equal(r.counts.n_free, 1);
    assert_int_equal(r.counts.n_free_unknown, 1);
    assert_int_equal(r.counts.live, 1);
    assert_true(r.last_time_s == 2.0);
    dkv_mem_stats st;
    dkv_mem_stats_get(m, &st);
    assert_int_equal(st.requested, 3000);
    assert_int_equal(st.peak_requested, 4000);
    dkv_mem_free(m);
}

/* An event earlier than the one before is an error naming the line and the field. */
static void test_replay_time_order(void **state)
{
    (void)state;
    char path[TEST_TMPDIR_LEN + 16];
    snprintf(path, sizeof path, "%s/b.csv", g_dir);
    write_file(path, "time_s,kind,id,bytes,tag,request,sub\n"
                     "1.0,alloc,1,1000,kv,0,\n"
                     "0.5,alloc,2,1000,kv,0,\n");
    dkv_mem_options o = dkv_mem_options_default(DKV_MEM_CACHING);
    dkv_mem *m = NULL;
    dkv_err err = {0};
    assert_int_equal(dkv_mem_new(&o, &m, &err), DKV_OK);
    dkv_replay_result r;
    assert_int_equal(dkv_replay_trace(path, m, NULL, NULL, &r, &err), DKV_EFORMAT);
    assert_non_null(strstr(err.msg, "b.csv:3: field 'time_s'"));
    assert_int_equal(r.n_events, 2);
    assert_int_equal(r.counts.n_alloc, 1);
    /* a file that does not exist: the reader's error, nothing replayed */
    snprintf(path, sizeof path, "%s/none.csv", g_dir);
    assert_int_not_equal(dkv_replay_trace(path, m, NULL, NULL, &r, &err), DKV_OK);
    assert_non_null(strstr(err.msg, "none.csv"));
    assert_int_equal(r.n_events, 0);
    dkv_mem_free(m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_replay_counts),
        cmocka_unit_test(test_replay_time_order),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
