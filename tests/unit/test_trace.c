/* test_trace.c - the trace schema: names, CSV and binary round trips, malformed input. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "trace/trace.h"
#include "util/rng.h"
#include "test_tmpdir.h"

static char dir[TEST_TMPDIR_LEN];

static int setup(void **state)
{
    (void)state;
    return test_tmpdir_make(dir, "trace");
}

static int teardown(void **state)
{
    (void)state;
    return test_tmpdir_remove(dir);
}

static const char *path_of(const char *name)
{
    static char p[2][128];
    static int k;
    k ^= 1;
    snprintf(p[k], sizeof p[k], "%s/%s", dir, name);
    return p[k];
}

static void write_text(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

static dkv_trace_event random_event(dkv_rng *r)
{
    dkv_trace_event e;
    memset(&e, 0, sizeof e);
    e.kind = (uint8_t)dkv_rng_below(r, DKV_EV_KIND_COUNT);
    e.time_s = dkv_rng_uniform(r) * 1000.0;
    e.dur_s = e.kind >= DKV_EV_KERNEL ? dkv_rng_uniform(r) * 1e-3 : 0;
    e.id = dkv_rng_u64(r);
    e.bytes = dkv_rng_u64(r) >> dkv_rng_below(r, 64);
    e.aux = dkv_rng_below(r, 2) ? dkv_rng_u64(r) : 0;
    e.tag = (uint8_t)dkv_rng_below(r, DKV_TRACE_TAG_COUNT);
    e.request = (uint32_t)dkv_rng_u64(r);
    e.instance = (uint16_t)dkv_rng_u64(r);
    e.layer = (uint32_t)dkv_rng_below(r, 80);
    e.step = (uint32_t)dkv_rng_below(r, 1000);
    e.block = (uint32_t)dkv_rng_below(r, 100);
    static const uint8_t nsub[DKV_EV_KIND_COUNT] = {0, 0, 6, 3, 2, 4};
    e.sub = nsub[e.kind] ? (uint8_t)dkv_rng_below(r, nsub[e.kind]) : 0;
    return e;
}

static void assert_event_equal(const dkv_trace_event *a, const dkv_trace_event *b)
{
    assert_true(a->time_s == b->time_s);
    assert_true(a->dur_s == b->dur_s);
    assert_int_equal(a->id, b->id);
    assert_int_equal(a->bytes, b->bytes);
    assert_int_equal(a->aux, b->aux);
    assert_int_equal(a->request, b->request);
    assert_int_equal(a->instance, b->instance);
    assert_int_equal(a->layer, b->layer);
    assert_int_equal(a->step, b->step);
    assert_int_equal(a->block, b->block);
    assert_int_equal(a->kind, b->kind);
    assert_int_equal(a->tag, b->tag);
    assert_int_equal(a->sub, b->sub);
}

static void round_trip(dkv_trace_file_format fmt, const char *name)
{
    dkv_rng r;
    dkv_rng_seed(&r, 11);
    dkv_err e = {0};
    enum { N = 2000 };
    dkv_trace_event *ev = malloc(N * sizeof *ev);
    dkv_trace_writer *w;
    assert_int_equal(dkv_trace_writer_open(path_of(name), fmt, &w, &e), DKV_OK);
    dkv_trace_sink sink = dkv_trace_writer_sink(w);
    for (int i = 0; i < N; i++) {
        ev[i] = random_event(&r);
        assert_int_equal(dkv_trace_emit(&sink, &ev[i], &e), DKV_OK);
    }
    assert_int_equal(dkv_trace_writer_close(w, &e), DKV_OK);
    dkv_trace_buf b = {0};
    assert_int_equal(dkv_trace_read_all(path_of(name), &b, &e), DKV_OK);
    assert_int_equal(b.n, N);
    for (int i = 0; i < N; i++)
        assert_event_equal(&ev[i], &b.ev[i]);
    dkv_trace_reader *rd;
    assert_int_equal(dkv_trace_reader_open(path_of(name), &rd, &e), DKV_OK);
    assert_int_equal(dkv_trace_reader_format(rd), fmt);
    dkv_trace_reader_close(rd);
    dkv_trace_buf_clear(&b);
    free(ev);
}

static void test_round_trip_csv(void **state)
{
    (void)state;
    round_trip(DKV_TRACE_CSV, "rt.csv");
    assert_int_equal(dkv_trace_file_format_for_path("x.csv"), DKV_TRACE_CSV);
    assert_int_equal(dkv_trace_file_format_for_path("x.dkvt"), DKV_TRACE_BIN);
}

static void test_round_trip_binary(void **state)
{
    (void)state;
    round_trip(DKV_TRACE_BIN, "rt.dkvt");
}

static void test_csv_subset_names_comments(void **state)
{
    (void)state;
    const char *p = path_of("subset.csv");
    write_text(p, "# a comment\n"
                  "kind,time_s,bytes,id,tag,sub\n"
                  "\n"
                  "alloc,0.5,4096,7,kv,\n"
                  "  free , 1.25 ,,7,kv,\n"
                  "xfer,2,100,1,staging,d2h\n"
                  "phase,3,,,,reuse\n"
                  "kernel,4,10,1,,2\n");
    dkv_trace_buf b = {0};
    dkv_err e = {0};
    assert_int_equal(dkv_trace_read_all(p, &b, &e), DKV_OK);
    assert_int_equal(b.n, 5);
    assert_int_equal(b.ev[0].kind, DKV_EV_ALLOC);
    assert_int_equal(b.ev[0].bytes, 4096);
    assert_int_equal(b.ev[0].tag, DKV_TRACE_TAG_KV);
    assert_true(b.ev[1].time_s == 1.25);
    assert_int_equal(b.ev[1].kind, DKV_EV_FREE);
    assert_int_equal(b.ev[1].bytes, 0);
    assert_int_equal(b.ev[2].sub, DKV_XFER_D2H);
    assert_int_equal(b.ev[3].sub, DKV_PHASE_REUSE);
    assert_int_equal(b.ev[4].sub, DKV_KERNEL_ATTENTION);
    assert_string_equal(dkv_trace_sub_name(DKV_EV_REQUEST, DKV_REQ_ADMIT), "admit");
    assert_string_equal(dkv_trace_sub_name(DKV_EV_ALLOC, 0), "");
    dkv_trace_buf_clear(&b);
}

/* Each malformed input: the message names the file, the line and the field. */
static void expect_error(const char *text, const char *want1, const char *want2)
{
    const char *p = path_of("bad.csv");
    write_text(p, text);
    dkv_trace_buf b = {0};
    dkv_err e = {0};
    assert_int_equal(dkv_trace_read_all(p, &b, &e), DKV_EFORMAT);
    if (!strstr(e.msg, want1) || (want2 && !strstr(e.msg, want2)))
        fail_msg("message '%s' lacks '%s' / '%s'", e.msg, want1, want2 ? want2 : "");
    assert_non_null(strstr(e.msg, "bad.csv"));
    dkv_trace_buf_clear(&b);
}

static void test_csv_malformed(void **state)
{
    (void)state;
    const char *H = "time_s,kind,id,bytes,tag\n";
    char buf[256];
    snprintf(buf, sizeof buf, "%s0,alloc,1,10,kv\n0.1,alloc,2,1x,kv\n", H);
    expect_error(buf, ":3: field 'bytes'", "'1x'");
    snprintf(buf, sizeof buf, "%s0,alloc,1,10,kv\n\n0.1,allc,2,10,kv\n", H);
    expect_error(buf, ":4: field 'kind'", "allc");
    snprintf(buf, sizeof buf, "%s0,alloc,1,-10,kv\n", H);
    expect_error(buf, ":2: field 'bytes'", NULL);
    snprintf(buf, sizeof buf, "%s0,alloc,1,10,kvv\n", H);
    expect_error(buf, ":2: field 'tag'", "kvv");
    snprintf(buf, sizeof buf, "%s,alloc,1,10,kv\n", H);
    expect_error(buf, ":2: field 'time_s'", "missing");
    snprintf(buf, sizeof buf, "%snan,alloc,1,10,kv\n", H);
    expect_error(buf, ":2: field 'time_s'", NULL);
    snprintf(buf, sizeof buf, "%s0,alloc,1,10\n", H);
    expect_error(buf, ":2: 4 fields", "header has 5");
    snprintf(buf, sizeof buf, "%s0,alloc,99999999999999999999,10,kv\n", H);
    expect_error(buf, ":2: field 'id'", NULL);
    expect_error("time_s,kind,instance\n0,alloc,70000\n", ":2: field 'instance'", NULL);
    expect_error("time_s,kind,sub\n0,phase,h2d\n", ":2: field 'sub'", "refresh");
    expect_error("time_s,kind,sub\n0,phase,7\n", ":2", "'sub'");
    expect_error("time_s,kind,dur_s\n0,kernel,-1\n", ":2: field 'dur_s'", NULL);
    expect_error("time_s,knd\n", ":1: unknown column 'knd'", NULL);
    expect_error("time_s,bytes\n", ":1", "'kind'");
    expect_error("time_s,kind,kind\n", "appears twice", NULL);
    expect_error("", "empty trace", NULL);
}

static void test_binary_malformed(void **state)
{
    (void)state;
    dkv_err e = {0};
    const char *p = path_of("bad.dkvt");
    dkv_trace_writer *w;
    assert_int_equal(dkv_trace_writer_open(p, DKV_TRACE_BIN, &w, &e), DKV_OK);
    dkv_trace_event ev = {.kind = DKV_EV_ALLOC, .bytes = 5, .id = 1};
    assert_int_equal(dkv_trace_writer_put(w, &ev, &e), DKV_OK);
    assert_int_equal(dkv_trace_writer_put(w, &ev, &e), DKV_OK);
    ev.kind = 42;   /* the writer refuses a bad event */
    assert_int_equal(dkv_trace_writer_put(w, &ev, &e), DKV_EFORMAT);
    assert_non_null(strstr(e.msg, "'kind'"));
    assert_int_equal(dkv_trace_writer_close(w, &e), DKV_OK);
    /* corrupt record 2's kind byte, then truncate a third record */
    FILE *f = fopen(p, "r+b");
    fseek(f, 32 + 64 + 58, SEEK_SET);
    fputc(9, f);
    fclose(f);
    dkv_trace_buf b = {0};
    assert_int_equal(dkv_trace_read_all(p, &b, &e), DKV_EFORMAT);
    assert_non_null(strstr(e.msg, "record 2"));
    assert_non_null(strstr(e.msg, "'kind'"));
    assert_int_equal(b.n, 1);
    dkv_trace_buf_clear(&b);
    f = fopen(p, "r+b");
    fseek(f, 32 + 64 + 58, SEEK_SET);
    fputc(0, f);
    fseek(f, 0, SEEK_END);
    fwrite("xxxx", 1, 4, f);
    fclose(f);
    assert_int_equal(dkv_trace_read_all(p, &b, &e), DKV_EFORMAT);
    assert_non_null(strstr(e.msg, "record 3 is truncated"));
    assert_int_equal(b.n, 2);
    dkv_trace_buf_clear(&b);
    write_text(p, "DKVTRACE\x02");
    assert_int_equal(dkv_trace_read_all(p, &b, &e), DKV_EFORMAT);
    assert_non_null(strstr(e.msg, "truncated"));
    assert_int_equal(dkv_trace_read_all(path_of("missing.csv"), &b, &e), DKV_ENOENT);
    assert_non_null(strstr(e.msg, "missing.csv"));
    dkv_trace_reader_close(NULL);
    assert_int_equal(dkv_trace_writer_close(NULL, &e), DKV_OK);
}

static void test_names_and_parsers(void **state)
{
    (void)state;
    dkv_err e = {0};
    int k, t;
    uint8_t s;
    for (int i = 0; i < DKV_EV_KIND_COUNT; i++) {
        assert_int_equal(dkv_names_parse(&dkv_trace_kind_names, dkv_trace_kind_name((dkv_trace_kind)i), &k, &e), DKV_OK);
        assert_int_equal(k, i);
    }
    for (int i = 0; i < DKV_TRACE_TAG_COUNT; i++) {
        assert_int_equal(dkv_names_parse(&dkv_trace_tag_names, dkv_trace_tag_name((dkv_trace_tag)i), &t, &e), DKV_OK);
        assert_int_equal(t, i);
    }
    assert_int_equal(dkv_trace_sub_parse(DKV_EV_REQUEST, "finish", &s, &e), DKV_OK);
    assert_int_equal(s, DKV_REQ_FINISH);
    assert_int_equal(dkv_trace_sub_parse(DKV_EV_ALLOC, "finish", &s, &e), DKV_EINVAL);
    assert_int_equal(dkv_names_parse(&dkv_trace_kind_names, "malloc", &k, &e), DKV_EINVAL);
    assert_non_null(strstr(e.msg, "alloc, free, kernel, xfer, phase or request"));
    assert_string_equal(dkv_trace_kind_name(DKV_EV_KIND_COUNT), "?");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_round_trip_csv),
        cmocka_unit_test(test_round_trip_binary),
        cmocka_unit_test(test_csv_subset_names_comments),
        cmocka_unit_test(test_csv_malformed),
        cmocka_unit_test(test_binary_malformed),
        cmocka_unit_test(test_names_and_parsers),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
