/* test_workload_prompts.c - the byte tokenizer, and prompts files (JSONL with text or token ids)
 * on small files written here: requests, their tokens, and the file:line errors of bad lines. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "workload/tokenizer.h"
#include "workload/workload.h"
#include "test_tmpdir.h"

static char g_dir[TEST_TMPDIR_LEN];

static int make_dir(void **state)
{
    (void)state;
    return test_tmpdir_make(g_dir, "prompts");
}

static int remove_dir(void **state)
{
    (void)state;
    return test_tmpdir_remove(g_dir);
}

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

static dkv_tokenizer byte_tok(void)
{
    dkv_tokenizer t;
    dkv_err err = {0};
    assert_int_equal(dkv_tokenizer_init(&t, DKV_TOKENIZER_BYTE, 264, 256, &err), DKV_OK);
    return t;
}

/* ------------------------------------------------------------------ tokenizer */

static void test_byte_roundtrip(void **state)
{
    (void)state;
    dkv_tokenizer t = byte_tok();
    const char text[] = "caf\xC3\xA9 \x01\xFF";   /* UTF-8 and arbitrary bytes are bytes */
    uint32_t ids[16];
    size_t n = 0;
    dkv_err err = {0};
    assert_int_equal(dkv_tok_encode(&t, text, sizeof text - 1, ids, 16, &n, &err), DKV_OK);
    assert_int_equal(n, 8);
    assert_int_equal(ids[0], 'c');
    assert_int_equal(ids[3], 0xC3);
    assert_int_equal(ids[7], 0xFF);
    char out[16];
    assert_int_equal(dkv_tok_decode(&t, ids, n, out, sizeof out), 8);
    assert_memory_equal(out, text, sizeof text);
    assert_int_equal(dkv_tok_encode(&t, text, sizeof text - 1, ids, 4, &n, &err), DKV_ERANGE);
}

static void test_byte_decode_specials(void **state)
{
    (void)state;
    dkv_tokenizer t = byte_tok();
    const uint32_t ids[] = {'a', DKV_TOK_BYTE_MASK, 'b', 260, DKV_TOK_NONE, DKV_TOK_BYTE_END, 'z'};
    char out[32];
    /* mask "_", reserved and "no token" U+FFFD, the end token ends the text */
    assert_int_equal(dkv_tok_decode(&t, ids, 7, out, sizeof out), 9);
    assert_string_equal(out, "a_b\xEF\xBF\xBD\xEF\xBF\xBD");
    /* truncation like snprintf: the length it would need, NUL-terminated */
    assert_int_equal(dkv_tok_decode(&t, ids, 3, out, 3), 3);
    assert_string_equal(out, "a_");
}

static void test_tokenizer_errors(void **state)
{
    (void)state;
    dkv_tokenizer t;
    dkv_tokenizer_kind k;
    dkv_err err = {0};
    assert_int_equal(dkv_tokenizer_parse("byte", &k, &err), DKV_OK);
    assert_int_equal(k, DKV_TOKENIZER_BYTE);
    assert_int_equal(dkv_tokenizer_parse("bpe", &k, &err), DKV_EINVAL);
    assert_non_null(strstr(err.msg, "'bpe'"));
    assert_int_equal(dkv_tokenizer_init(&t, DKV_TOKENIZER_BYTE, 126464, 126336, &err), DKV_EINVAL);
    assert_non_null(strstr(err.msg, "mask_id 126336"));
    assert_int_equal(dkv_tokenizer_init(&t, DKV_TOKENIZER_NONE, 126464, 126336, &err), DKV_OK);
    uint32_t ids[4];
    size_t n;
    assert_int_equal(dkv_tok_encode(&t, "x", 1, ids, 4, &n, &err), DKV_EUNSUPPORTED);
    char out[4] = "zz";
    assert_int_equal(dkv_tok_decode(&t, ids, 0, out, sizeof out), 0);
    assert_string_equal(out, "");
}

/* ------------------------------------------------------------------ prompts files */

static dkv_workload *read_prompts(const char *path, const dkv_tokenizer *t, const dkv_workload_opts *o,
                                  dkv_status want, const char *msg1, const char *msg2)
{
    dkv_prompts_cfg c = {.tok = t, .vocab = 264, .gen = 32, .interval_s = 0.5};
    dkv_workload *w = NULL;
    dkv_err err = {0};
    dkv_status rc = dkv_workload_prompts(path, &c, o, &w, &err);
    if (rc != want) fail_msg("status %d, want %d: %s", rc, want, err.msg);
    if (msg1 && !strstr(err.msg, msg1)) fail_msg("message '%s' lacks '%s'", err.msg, msg1);
    if (msg2 && !strstr(err.msg, msg2)) fail_msg("message '%s' lacks '%s'", err.msg, msg2);
    if (want != DKV_OK) assert_null(w);
    return w;
}

static void test_prompts_text_and_tokens(void **state)
{
    (void)state;
    dkv_tokenizer t = byte_tok();
    const char *p = put("a.jsonl", "{\"text\": \"Hi\\n\\u00e9\\ud83d\\ude00\"}\n"
                                   "\n"
                                   "  {\"tokens\": [1, 2, 256, 263], \"gen\": 64}  \r\n"
                                   "{\"gen\":8,\"text\":\"\\\"q\\\"\"}");
    dkv_workload *w = read_prompts(p, &t, NULL, DKV_OK, NULL, NULL);
    assert_int_equal(dkv_workload_count(w), 3);
    const dkv_request *r = dkv_workload_get(w, 0);
    /* "Hi\n" + U+00E9 (2 bytes) + U+1F600 (4 bytes) */
    assert_int_equal(r->prompt_tokens, 9);
    assert_int_equal(r->gen_tokens, 32);
    const uint32_t want0[9] = {'H', 'i', '\n', 0xC3, 0xA9, 0xF0, 0x9F, 0x98, 0x80};
    assert_memory_equal(r->tokens, want0, sizeof want0);
    r = dkv_workload_get(w, 1);
    assert_int_equal(r->prompt_tokens, 4);
    assert_int_equal(r->gen_tokens, 64);
    assert_int_equal(r->tokens[2], 256);
    assert_true(fabs(r->arrival_s - 0.5) < 1e-12);
    r = dkv_workload_get(w, 2);
    assert_int_equal(r->gen_tokens, 8);
    assert_int_equal(r->prompt_tokens, 3);
    assert_int_equal(r->tokens[0], '"');
    assert_non_null(strstr(dkv_workload_source(w), "prompts:"));
    dkv_workload_free(w);
}

static void test_prompts_options(void **state)
{
    (void)state;
    dkv_tokenizer t = byte_tok();
    const char *p = put("b.jsonl", "{\"text\": \"abcdef\"}\n{\"text\": \"gh\"}\n{\"text\": \"ij\"}\n");
    dkv_workload_opts o;
    dkv_workload_opts_default(&o);
    o.first_n = 2;
    o.prompt_max = 4;
    o.gen_multiple_of = 32;
    dkv_workload *w = read_prompts(p, &t, &o, DKV_OK, NULL, NULL);
    assert_int_equal(dkv_workload_count(w), 2);
    assert_int_equal(dkv_workload_get(w, 0)->prompt_tokens, 4);   /* the first 4 tokens */
    assert_int_equal(dkv_workload_get(w, 0)->tokens[3], 'd');
    assert_int_equal(dkv_workload_get(w, 1)->tokens[1], 'h');
    /* copies keep the tokens */
    dkv_workload *c = NULL;
    dkv_err err = {0};
    assert_int_equal(dkv_workload_from_requests(dkv_workload_requests(w), 2, NULL, &c, &err), DKV_OK);
    assert_int_equal(dkv_workload_get(c, 1)->tokens[0], 'g');
    assert_ptr_not_equal(dkv_workload_get(c, 1)->tokens, dkv_workload_get(w, 1)->tokens);
    dkv_workload_free(c);
    dkv_workload_free(w);
    dkv_workload_opts_default(&o);
    o.prompt_min = 8;
    read_prompts(p, &t, &o, DKV_EINVAL, "prompt_min", NULL);
    dkv_workload_opts_default(&o);
    o.lenient = true;
    read_prompts(p, &t, &o, DKV_EINVAL, "lenient", NULL);
}

static void test_prompts_errors(void **state)
{
    (void)state;
    dkv_tokenizer t = byte_tok(), none;
    dkv_err err = {0};
    assert_int_equal(dkv_tokenizer_init(&none, DKV_TOKENIZER_NONE, 264, 256, &err), DKV_OK);
    static const struct {
        const char *text, *where, *what;
    } cases[] = {
        {"{\"text\": \"ok\"}\n{\"txt\": \"x\"}\n", ":2:", "unknown key"},
        {"{\"text\": \"a\", \"tokens\": [1]}\n", ":1:", "not both"},
        {"{\"gen\": 4}\n", ":1:", "needs 'text' or 'tokens'"},
        {"{\"tokens\": [1, 264]}\n", ":1:", "vocabulary of 264"},
        {"{\"tokens\": [1, -2]}\n", ":1:", "(field tokens)"},
        {"{\"tokens\": [1.5]}\n", ":1:", "expected an integer"},
        {"{\"tokens\": []}\n", ":1:", "empty (field tokens)"},
        {"{\"text\": \"\"}\n", ":1:", "empty (field text)"},
        {"{\"text\": \"a\", \"gen\": 0}\n", ":1:", "(field gen)"},
        {"{\"text\": \"a\", \"text\": \"b\"}\n", ":1:", "duplicate key (field text)"},
        {"{\"text\": \"a\\q\"}\n", ":1:", "bad escape"},
        {"{\"text\": \"\\ud800x\"}\n", ":1:", "surrogate"},
        {"{\"text\": \"open\n", ":1:", "unterminated"},
        {"{\"text\": \"a\"} x\n", ":1:", "trailing"},
        {"[1, 2]\n", ":1:", "JSON object"},
        {"\n\n", "no prompts", NULL},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        read_prompts(put("bad.jsonl", cases[i].text), &t, NULL, DKV_EFORMAT, cases[i].where, cases[i].what);
    /* text without a tokenizer: the message says to give token ids */
    const char *p = put("c.jsonl", "{\"tokens\": [5]}\n{\"text\": \"a\"}\n");
    read_prompts(p, &none, NULL, DKV_EFORMAT, ":2:", "give token ids");
    read_prompts(p, NULL, NULL, DKV_EFORMAT, ":2:", "(field text)");
    char missing[300];
    snprintf(missing, sizeof missing, "%s/none.jsonl", g_dir);
    dkv_prompts_cfg c = {.tok = &t, .vocab = 264, .gen = 32};
    dkv_workload *w = NULL;
    assert_int_not_equal(dkv_workload_prompts(missing, &c, NULL, &w, &err), DKV_OK);
    assert_non_null(strstr(err.msg, "none.jsonl"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_byte_roundtrip),
        cmocka_unit_test(test_byte_decode_specials),
        cmocka_unit_test(test_tokenizer_errors),
        cmocka_unit_test(test_prompts_text_and_tokens),
        cmocka_unit_test(test_prompts_options),
        cmocka_unit_test(test_prompts_errors),
    };
    return cmocka_run_group_tests(tests, make_dir, remove_dir);
}
