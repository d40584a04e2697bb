/* test_workload_readers.c - the trace readers on small files written here, and on the real
 * Azure code trace when ../shared/datasets has it. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "workload/workload.h"
#include "test_tmpdir.h"

static char g_dir[TEST_TMPDIR_LEN];

static int make_dir(void **state)
{
    (void)state;
    return test_tmpdir_make(g_dir, "readers");
}

static int remove_dir(void **state)
{
    (void)state;
    return test_tmpdir_remove(g_dir);
}

/* Writes text to g_dir/name and returns the path (static buffer). */
static const char *put(const char *name, const char *text)
{
    static char path[256];
    snprintf(path, sizeof path, "%s/%s", g_dir, name);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
    return path;
}

static dkv_workload *read_ok(const char *path, dkv_trace_format fmt, const dkv_workload_opts *o)
{
    dkv_workload *w = NULL;
    dkv_err err = {0};
    if (dkv_workload_read(path, fmt, o, &w, &err) != DKV_OK) fail_msg("read failed: %s", err.msg);
    return w;
}

static void expect_error(const char *path, dkv_trace_format fmt, const char *where, const char *field)
{
    dkv_workload *w = NULL;
    dkv_err err = {0};
    assert_int_equal(dkv_workload_read(path, fmt, NULL, &w, &err), DKV_EFORMAT);
    assert_null(w);
    if (!strstr(err.msg, where)) fail_msg("message '%s' lacks '%s'", err.msg, where);
    if (field && !strstr(err.msg, field)) fail_msg("message '%s' lacks '%s'", err.msg, field);
}

static const char *const AZURE =
    "TIMESTAMP,ContextTokens,GeneratedTokens\n"
    "2023-11-16 18:17:03.9799600,4808,10\n"
    "2023-11-16 18:17:04.0319600,3180,8\r\n"
    "\n"
    "2023-11-16 18:17:06.9799600,100,300\n"
    "2023-11-16 23:59:59.5,7,1\n"
    "2023-11-17 00:00:00.5,9,2";   /* no final newline, crosses midnight */

static void test_azure(void **state)
{
    (void)state;
    const char *p = put("azure.csv", AZURE);
    dkv_workload *w = read_ok(p, DKV_FMT_AUTO, NULL);
    assert_int_equal(dkv_workload_count(w), 5);
    const dkv_request *r = dkv_workload_requests(w);
    assert_true(r[0].arrival_s == 0.0);
    assert_true(fabs(r[1].arrival_s - 0.052) < 1e-6);
    assert_true(fabs(r[2].arrival_s - 3.0) < 1e-6);
    assert_true(fabs(r[4].arrival_s - r[3].arrival_s - 1.0) < 1e-6);
    assert_true(fabs(r[3].arrival_s - (5 * 3600 + 42 * 60 + 59.5 - 3.97996)) < 1e-6);
    assert_int_equal(r[0].prompt_tokens, 4808);
    assert_int_equal(r[1].gen_tokens, 8);
    assert_int_equal(r[2].id, 2);
    assert_int_equal(r[0].n_hash_ids, 0);
    assert_string_equal(dkv_workload_source(w), p);
    dkv_workload_free(w);

    /* first_n and time scaling */
    dkv_workload_opts o;
    dkv_workload_opts_default(&o);
    o.first_n = 3;
    o.time_scale = 0.5;
    w = read_ok(p, DKV_FMT_AZURE, &o);
    assert_int_equal(dkv_workload_count(w), 3);
    assert_true(fabs(dkv_workload_get(w, 2)->arrival_s - 1.5) < 1e-6);
    dkv_workload_free(w);
}

static void test_azure_malformed(void **state)
{
    (void)state;
    const char *p = put("bad.csv",
                        "TIMESTAMP,ContextTokens,GeneratedTokens\n"
                        "2023-11-16 18:17:03.9,4808,10\n"
                        "2023-11-16 18:17:04.0,31x0,8\n"
                        "2023-11-16 18:17:05.0,3180\n"
                        "2023-11-16 18:17:99.0,1,2\n"
                        "2023-11-16 18:17:06.0,3180,-4\n"
                        "2023-11-16 18:17:07.0,5,6\n");
    expect_error(p, DKV_FMT_AUTO, "bad.csv:3: expected a non-negative integer, got '31x0'", "(field ContextTokens)");
    dkv_workload_opts o;
    dkv_workload_opts_default(&o);
    o.lenient = true;
    dkv_workload *w = read_ok(p, DKV_FMT_AZURE, &o);
    assert_int_equal(dkv_workload_count(w), 2);
    assert_int_equal(dkv_workload_skipped(w), 4);
    assert_true(fabs(dkv_workload_get(w, 1)->arrival_s - 3.1) < 1e-9);
    dkv_workload_summary s;
    assert_int_equal(dkv_workload_summarize(w, &s, NULL), DKV_OK);
    assert_int_equal(s.skipped, 4);
    dkv_workload_free(w);

    p = put("short.csv", "TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:17:05.0,3180\n");
    expect_error(p, DKV_FMT_AZURE, "short.csv:2: expected 3 fields, got 2", "(field GeneratedTokens)");
    p = put("time.csv", "TIMESTAMP,ContextTokens,GeneratedTokens\n\n2023/11/16 18:17:05,1,2\n");
    expect_error(p, DKV_FMT_AZURE, "time.csv:3: bad timestamp", "(field TIMESTAMP)");
    p = put("neg.csv", "TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:17:05,1,-2\n");
    expect_error(p, DKV_FMT_AZURE, "neg.csv:2:", "(field GeneratedTokens)");
    p = put("hdr.csv", "TIMESTAMP,Context,GeneratedTokens\n2023-11-16 18:17:05,1,2\n");
    expect_error(p, DKV_FMT_AZURE, "hdr.csv:1: azure header lacks column 'ContextTokens'", "(field ContextTokens)");
    expect_error(p, DKV_FMT_AUTO, "hdr.csv:1: unrecognised CSV header", "(field header)");
    p = put("empty.csv", "TIMESTAMP,ContextTokens,GeneratedTokens\n");
    expect_error(p, DKV_FMT_AZURE, "empty.csv: no requests", NULL);
    /* every line bad, lenient: still an error, with the reason */
    p = put("allbad.csv", "TIMESTAMP,ContextTokens,GeneratedTokens\nx,1,2\n");
    dkv_err err = {0};
    dkv_workload *w2 = NULL;
    assert_int_equal(dkv_workload_read(p, DKV_FMT_AZURE, &o, &w2, &err), DKV_EFORMAT);
    assert_non_null(strstr(err.msg, "every line was malformed"));
    assert_int_equal(dkv_workload_read("/nonexistent/x.csv", DKV_FMT_AUTO, NULL, &w2, &err), DKV_ENOENT);
    assert_non_null(strstr(err.msg, "/nonexistent/x.csv"));
}

static void test_mooncake(void **state)
{
    (void)state;
    const char *p = put("mc.jsonl",
                        "{\"timestamp\": 0, \"input_length\": 6955, \"output_length\": 52, \"hash_ids\": [46, 47, 48]}\n"
                        "{\"timestamp\": 1500, \"input_length\": 512, \"output_length\": 1, \"hash_ids\": [],"
                        " \"note\": {\"a\": [1, \"x\\\"y\", null, true]}}\n"
                        "\n"
                        "  {\"hash_ids\":[9007199254740993],\"output_length\":3.0,\"input_length\":1e3,\"timestamp\":750}  \n");
    dkv_workload *w = read_ok(p, DKV_FMT_AUTO, NULL);
    assert_int_equal(dkv_workload_count(w), 3);
    const dkv_request *r = dkv_workload_requests(w);
    /* sorted by arrival: rows 0, 2, 1 */
    assert_int_equal(r[0].id, 0);
    assert_int_equal(r[1].id, 2);
    assert_int_equal(r[2].id, 1);
    assert_true(r[1].arrival_s == 0.75 && r[2].arrival_s == 1.5);
    assert_int_equal(r[0].prompt_tokens, 6955);
    assert_int_equal(r[0].gen_tokens, 52);
    assert_int_equal(r[0].n_hash_ids, 3);
    assert_true(r[0].hash_ids[0] == 46 && r[0].hash_ids[2] == 48);
    assert_int_equal(r[2].n_hash_ids, 0);
    assert_null(r[2].hash_ids);
    assert_int_equal(r[1].prompt_tokens, 1000);
    assert_int_equal(r[1].gen_tokens, 3);
    assert_true(r[1].hash_ids[0] == 9007199254740993ULL);
    dkv_workload_free(w);
}

static void test_mooncake_malformed(void **state)
{
    (void)state;
    const char *good = "{\"timestamp\": 1, \"input_length\": 5, \"output_length\": 6, \"hash_ids\": [1]}\n";
    char text[2048];
    struct { const char *line, *field; } cases[] = {
        {"{\"timestamp\": 2, \"input_length\": 5, \"hash_ids\": [1]}", "(field output_length)"},
        {"{\"timestamp\": 2, \"input_length\": -5, \"output_length\": 6}", "(field input_length)"},
        {"{\"timestamp\": 2, \"input_length\": 5, \"output_length\": 6, \"hash_ids\": [1, 2.5]}", "(field hash_ids)"},
        {"{\"timestamp\": 2, \"input_length\": 5, \"output_length\": 6} x", "(field line)"},
        {"{\"timestamp\": 2, \"timestamp\": 3, \"input_length\": 5, \"output_length\": 6}", "(field timestamp)"},
        {"{\"timestamp\": \"2\", \"input_length\": 5, \"output_length\": 6}", "(field timestamp)"},
        {"{\"timestamp\": 2, \"input_length\": 5 \"output_length\": 6}", "(field object)"},
        {"[1, 2]", "(field line)"},
        {"{\"timestamp\": 2, \"input_length\": 5, \"output_length\": 6, \"x\": tru}", "(field x)"},
        {"{\"timestamp\": 2, \"input_length\": 05, \"output_length\": 6}", "(field input_length)"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        snprintf(text, sizeof text, "%s%s\n%s", good, cases[i].line, good);
        const char *p = put("bad.jsonl", text);
        expect_error(p, DKV_FMT_MOONCAKE, "bad.jsonl:2:", cases[i].field);
    }
    snprintf(text, sizeof text, "%s%s\n%s\n%s", good, cases[0].line, cases[3].line, good);
    const char *p = put("lenient.jsonl", text);
    dkv_workload_opts o;
    dkv_workload_opts_default(&o);
    o.lenient = true;
    dkv_workload *w = read_ok(p, DKV_FMT_AUTO, &o);
    assert_int_equal(dkv_workload_count(w), 2);
    assert_int_equal(dkv_workload_skipped(w), 2);
    /* the skipped line's hash ids did not leak into the next request */
    assert_int_equal(dkv_workload_get(w, 1)->n_hash_ids, 1);
    assert_true(dkv_workload_get(w, 1)->hash_ids[0] == 1);
    dkv_workload_free(w);
}

static void test_vidur(void **state)
{
    (void)state;
    const char *p = put("vidur.csv",
                        "request_id,arrived_at,num_prefill_tokens,num_decode_tokens,extra\n"
                        "0,10.5,2048,128.0,a\n"
                        "1,10.25,\"100\",7,b\n"
                        "2,12.0,300,9,\"c,d\"\n");
    dkv_workload *w = read_ok(p, DKV_FMT_AUTO, NULL);
    assert_int_equal(dkv_workload_count(w), 3);
    const dkv_request *r = dkv_workload_requests(w);
    assert_int_equal(r[0].id, 1);
    assert_true(r[0].arrival_s == 0.0 && r[1].arrival_s == 0.25 && r[2].arrival_s == 1.75);
    assert_int_equal(r[1].gen_tokens, 128);
    assert_int_equal(r[0].prompt_tokens, 100);
    dkv_workload_free(w);
    p = put("vbad.csv", "arrived_at,num_prefill_tokens,num_decode_tokens\n1.0,2,3\nabc,2,3\n");
    expect_error(p, DKV_FMT_VIDUR, "vbad.csv:3: bad number of seconds, got 'abc'", "(field arrived_at)");
    p = put("vbad2.csv", "arrived_at,num_prefill_tokens,num_decode_tokens\n1.0,2.5,3\n");
    expect_error(p, DKV_FMT_VIDUR, "vbad2.csv:2:", "(field num_prefill_tokens)");
}

static void test_burstgpt(void **state)
{
    (void)state;
    const char *p = put("burst.csv",
                        "Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type\n"
                        "5,ChatGPT,472,18,490,Conversation log\n"
                        "45,ChatGPT,1087,0,1087,Conversation log\n"
                        "118,GPT-4,417,245,662,API log\n");
    dkv_workload *w = read_ok(p, DKV_FMT_AUTO, NULL);
    assert_int_equal(dkv_workload_count(w), 3);
    const dkv_request *r = dkv_workload_requests(w);
    assert_true(r[0].arrival_s == 0.0 && r[1].arrival_s == 40.0 && r[2].arrival_s == 113.0);
    assert_int_equal(r[1].gen_tokens, 0); /* failed request, kept as read */
    assert_int_equal(r[2].prompt_tokens, 417);
    dkv_workload_free(w);
    /* rounding gives it one block */
    dkv_workload_opts o;
    dkv_workload_opts_default(&o);
    o.gen_multiple_of = 32;
    w = read_ok(p, DKV_FMT_BURSTGPT, &o);
    assert_int_equal(dkv_workload_get(w, 1)->gen_tokens, 32);
    assert_int_equal(dkv_workload_get(w, 2)->gen_tokens, 256);
    dkv_workload_free(w);
    p = put("bbad.csv", "Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type\n"
                        "5,ChatGPT,472,,490,Conversation log\n");
    expect_error(p, DKV_FMT_AUTO, "bbad.csv:2:", "(field Response tokens)");
    /* an explicit format that does not match the header */
    expect_error(p, DKV_FMT_AZURE, "lacks column 'ContextTokens'", NULL);

    int f;
    dkv_err err = {0};
    assert_int_equal(dkv_names_parse(&dkv_trace_format_names, "BurstGPT", &f, &err), DKV_OK);
    assert_int_equal(f, DKV_FMT_BURSTGPT);
    assert_int_equal(dkv_names_parse(&dkv_trace_format_names, "sharegpt", &f, &err), DKV_EINVAL);
    assert_string_equal(dkv_trace_format_name(DKV_FMT_MOONCAKE), "mooncake");
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void test_azure_real_trace(void **state)
{
    (void)state;
    char path[1024];
    const char *root = getenv("ROOT");
    snprintf(path, sizeof path, "%s%s../shared/datasets/AzureLLMInferenceTrace_code.csv", root ? root : "",
             root ? "/" : "");
    if (access(path, R_OK) != 0) {
        printf("skip: %s not present (the Azure code trace lives outside the repo)\n", path);
        skip();
    }
    double t0 = now_s();
    dkv_workload *w = read_ok(path, DKV_FMT_AUTO, NULL);
    double dt = now_s() - t0;
    dkv_workload_summary s;
    assert_int_equal(dkv_workload_summarize(w, &s, NULL), DKV_OK);
    printf("azure code trace: %llu requests, %.1f s, %.2f req/s, prompt mean %.1f median %.0f max %u, "
           "gen mean %.1f median %.0f max %u; read in %.1f ms\n",
           (unsigned long long)s.count, s.duration_s, s.rate, s.prompt_mean, s.prompt_median, s.prompt_max,
           s.gen_mean, s.gen_median, s.gen_max, dt * 1e3);
    assert_int_equal(s.count, 8819);
    assert_int_equal(s.skipped, 0);
    assert_true(fabs(s.prompt_mean - 2048) < 5);
    assert_int_equal(s.prompt_max, 7437);
    assert_true(dt < 2.0); /* milliseconds in practice; generous for valgrind */
    dkv_workload_free(w);
}

/* The sample traces the project ships (datasets/workloads) stay readable. */
static void test_shipped_samples(void **state)
{
    (void)state;
    const char *root = getenv("ROOT");
    const char *files[] = {"azure_sample.csv", "mooncake_sample.jsonl", "vidur_sample.csv", "burstgpt_sample.csv"};
    const dkv_trace_format fmts[] = {DKV_FMT_AZURE, DKV_FMT_MOONCAKE, DKV_FMT_VIDUR, DKV_FMT_BURSTGPT};
    char path[1024];
    for (int i = 0; i < 4; i++) {
        snprintf(path, sizeof path, "%s%sdatasets/workloads/%s", root ? root : "", root ? "/" : "", files[i]);
        if (i == 0 && access(path, R_OK) != 0) {
            printf("skip: %s not found (run from the repository root or set ROOT)\n", path);
            skip();
        }
        dkv_workload *w = read_ok(path, DKV_FMT_AUTO, NULL);
        dkv_workload *w2 = read_ok(path, fmts[i], NULL);
        assert_int_equal(dkv_workload_count(w), 48);
        assert_int_equal(dkv_workload_count(w2), 48);
        assert_int_equal(dkv_workload_skipped(w), 0);
        if (fmts[i] == DKV_FMT_MOONCAKE) {
            unsigned shared = 0;
            for (size_t j = 0; j < 48; j++) {
                const dkv_request *r = dkv_workload_get(w, j);
                assert_int_equal(r->n_hash_ids, (r->prompt_tokens + 511) / 512);
                for (size_t k = 0; k < j; k++)
                    shared += dkv_workload_get(w, k)->hash_ids[0] == r->hash_ids[0];
            }
            assert_true(shared > 0); /* some requests extend an earlier prefix */
        }
        dkv_workload_free(w);
        dkv_workload_free(w2);
    }
    snprintf(path, sizeof path, "%s%sdatasets/workloads/gen_lengths_sample.txt", root ? root : "", root ? "/" : "");
    dkv_lengths *t = NULL;
    dkv_err err = {0};
    assert_int_equal(dkv_lengths_load(path, &t, &err), DKV_OK);
    assert_int_equal(dkv_lengths_count(t), 48);
    dkv_lengths_free(t);
}

/* Issue 12 defect 15: workload.file = "/dev/zero" was read without bound (outside every limit). */
static void test_unbounded_files(void **state)
{
    (void)state;
    dkv_workload *w = NULL;
    dkv_lengths *t = NULL;
    dkv_err err = {0};
    assert_int_equal(dkv_workload_read("/dev/zero", DKV_FMT_VIDUR, NULL, &w, &err), DKV_EFORMAT);
    assert_null(w);
    if (!strstr(err.msg, "/dev/zero:1: NUL byte at byte 0: not a text file")) fail_msg("message '%s'", err.msg);
    assert_int_equal(dkv_lengths_load("/dev/zero", &t, &err), DKV_EFORMAT);
    assert_null(t);
    /* a NUL further on names its line */
    char text[64] = "arrived_at,num_prefill_tokens,num_decode_tokens\n0.5,1,2\n1,x";
    const char *p = put("nul.csv", text);
    FILE *f = fopen(p, "ab");
    fputc(0, f);
    fclose(f);
    expect_error(p, DKV_FMT_VIDUR, ":3: NUL byte at byte 59", NULL);
    /* a regular file over the limit is refused before it is read */
    const char *ok = "arrived_at,num_prefill_tokens,num_decode_tokens\n0.5,1,2\n1,3,4\n";   /* 62 bytes */
    assert_int_equal(strlen(ok), 62);
    dkv_workload_opts o;
    dkv_workload_opts_default(&o);
    o.max_file_bytes = 61;
    assert_int_equal(dkv_workload_read(put("big.csv", ok), DKV_FMT_VIDUR, &o, &w, &err), DKV_EFORMAT);
    if (!strstr(err.msg, "big.csv: 62 bytes, more than the readers' limit of 61 bytes")) fail_msg("message '%s'", err.msg);
    o.max_file_bytes = 62;   /* exactly at the limit is fine */
    w = read_ok(put("big.csv", ok), DKV_FMT_VIDUR, &o);
    assert_int_equal(dkv_workload_count(w), 2);
    dkv_workload_free(w);
    /* a stream without end (a FIFO fed forever) stops at the limit */
    char fifo[TEST_TMPDIR_LEN + 16];
    snprintf(fifo, sizeof fifo, "%s/fifo", g_dir);
    assert_int_equal(mkfifo(fifo, 0600), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        signal(SIGPIPE, SIG_DFL);
        FILE *wf = fopen(fifo, "w");
        fputs("arrived_at,num_prefill_tokens,num_decode_tokens\n", wf);
        for (;;)
            fputs("0.5,1,2\n", wf);   /* ends by SIGPIPE when the reader gives up */
    }
    o.max_file_bytes = 1 << 20;
    assert_int_equal(dkv_workload_read(fifo, DKV_FMT_VIDUR, &o, &w, &err), DKV_EFORMAT);
    if (!strstr(err.msg, "more than the readers' limit of 1048576 bytes (a stream without end?)"))
        fail_msg("message '%s'", err.msg);
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_azure),
        cmocka_unit_test(test_azure_malformed),
        cmocka_unit_test(test_mooncake),
        cmocka_unit_test(test_mooncake_malformed),
        cmocka_unit_test(test_vidur),
        cmocka_unit_test(test_burstgpt),
        cmocka_unit_test(test_azure_real_trace),
        cmocka_unit_test(test_shipped_samples),
        cmocka_unit_test(test_unbounded_files),
    };
    return cmocka_run_group_tests(tests, make_dir, remove_dir);
}
