/* test_io_safetensors.c - the safetensors reader/writer on small files written here, the error
 * messages for broken files, and LLaDA / Dream weights round-tripping through the ref model. */
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

#include "io/safetensors.h"
#include "util/rng.h"
#include "test_tmpdir.h"

static char dir[TEST_TMPDIR_LEN];

static int setup(void **state)
{
    (void)state;
    return test_tmpdir_make(dir, "st");
}

static int teardown(void **state)
{
    (void)state;
    return test_tmpdir_remove(dir);
}

static const char *path(const char *name)
{
    static char buf[4][128];
    static int i;
    i = (i + 1) % 4;
    snprintf(buf[i], sizeof buf[i], "%s/%s", dir, name);
    return buf[i];
}

/* Writes a file from a header string and n data bytes (value = index). */
static void raw_file(const char *p, const char *hdr, size_t ndata)
{
    FILE *f = fopen(p, "wb");
    assert_non_null(f);
    uint64_t n = strlen(hdr);
    for (int i = 0; i < 8; i++)
        fputc((int)((n >> (8 * i)) & 0xff), f);
    fputs(hdr, f);
    for (size_t i = 0; i < ndata; i++)
        fputc((int)(i & 0xff), f);
    fclose(f);
}

static void expect_open_error(const char *p, dkv_status code, const char *s1, const char *s2)
{
    dkv_st *st = (dkv_st *)1;
    dkv_err e = {0};
    assert_int_equal(dkv_st_open(p, &st, &e), code);
    assert_null(st);
    if (!strstr(e.msg, s1) || (s2 && !strstr(e.msg, s2)))
        fail_msg("message '%s' lacks '%s' / '%s'", e.msg, s1, s2 ? s2 : "");
}

static void test_conversions(void **state)
{
    (void)state;
    assert_int_equal(dkv_f32_to_bf16(1.0f), 0x3f80);
    assert_true(dkv_bf16_to_f32(0xc020) == -2.5f);
    assert_int_equal(dkv_f32_to_bf16(1.0f + 0x1p-8f), 0x3f80);          /* tie: to even */
    assert_int_equal(dkv_f32_to_bf16(1.0f + 0x1p-7f + 0x1p-8f), 0x3f82);/* tie: to even (up) */
    assert_int_equal(dkv_f32_to_bf16(INFINITY), 0x7f80);
    assert_true(isnan(dkv_bf16_to_f32(dkv_f32_to_bf16(NAN))));
    assert_int_equal(dkv_f32_to_f16(1.0f), 0x3c00);
    assert_int_equal(dkv_f32_to_f16(65504.0f), 0x7bff);
    assert_int_equal(dkv_f32_to_f16(65520.0f), 0x7c00);                 /* rounds to infinity */
    assert_int_equal(dkv_f32_to_f16(0x1p-24f), 0x0001);                 /* smallest subnormal */
    assert_int_equal(dkv_f32_to_f16(0x1p-25f), 0x0000);                 /* tie: to even (zero) */
    assert_int_equal(dkv_f32_to_f16(-2.0f), 0xc000);
    assert_true(dkv_f16_to_f32(0x0001) == 0x1p-24f);
    assert_true(dkv_f16_to_f32(0x03ff) == 0x3ffp-24f);
    assert_true(isinf(dkv_f16_to_f32(0x7c00)));
    assert_true(isnan(dkv_f16_to_f32(dkv_f32_to_f16(NAN))));
    dkv_rng r;
    dkv_rng_seed(&r, 3);
    for (int i = 0; i < 10000; i++) {
        float x = (float)(dkv_rng_normal(&r) * 100);
        assert_true(fabsf(dkv_f16_to_f32(dkv_f32_to_f16(x)) - x) <= fabsf(x) * 0x1p-11f + 0x1p-24f);
        assert_true(fabsf(dkv_bf16_to_f32(dkv_f32_to_bf16(x)) - x) <= fabsf(x) * 0x1p-8f);
    }
}

static void test_write_then_read(void **state)
{
    (void)state;
    dkv_st_writer *w = NULL;
    assert_int_equal(dkv_st_writer_new(&w, NULL), DKV_OK);
    float a[6] = {1.5f, -2, 3.25f, 0.1f, 1e-3f, 7}, b[3] = {0.3f, -0.7f, 11};
    uint64_t sa[2] = {2, 3}, sb[1] = {3}, si[1] = {2};
    int64_t ints[2] = {-1, 42};
    assert_int_equal(dkv_st_writer_add_f32(w, "a", DKV_ST_F32, 2, sa, a, NULL), DKV_OK);
    assert_int_equal(dkv_st_writer_add_f32(w, "b.bf16", DKV_ST_BF16, 1, sb, b, NULL), DKV_OK);
    assert_int_equal(dkv_st_writer_add_f32(w, "b.f16", DKV_ST_F16, 1, sb, b, NULL), DKV_OK);
    assert_int_equal(dkv_st_writer_add_raw(w, "ids", "I64", 1, si, ints, sizeof ints, NULL), DKV_OK);
    assert_int_equal(dkv_st_writer_meta(w, "format", "pt", NULL), DKV_OK);
    assert_int_equal(dkv_st_writer_write(w, path("x.safetensors"), NULL), DKV_OK);
    dkv_st_writer_free(w);
    dkv_st_writer_free(NULL);

    FILE *f = fopen(path("x.safetensors"), "rb");
    uint8_t len[8];
    assert_int_equal(fread(len, 1, 8, f), 8);
    fclose(f);
    assert_int_equal(len[0] % 8, 0);   /* data 8-byte aligned */

    dkv_st *st = NULL;
    dkv_err e = {0};
    assert_int_equal(dkv_st_open(path("x.safetensors"), &st, &e), DKV_OK);
    assert_int_equal(dkv_st_count(st), 4);
    assert_string_equal(dkv_st_at(st, 0)->name, "a");
    assert_null(dkv_st_at(st, 4));
    assert_string_equal(dkv_st_metadata(st, "format"), "pt");
    assert_null(dkv_st_metadata(st, "nope"));
    assert_null(dkv_st_find(st, "nope"));
    const dkv_st_tensor *t = dkv_st_find(st, "a");
    assert_int_equal(t->dtype, DKV_ST_F32);
    assert_int_equal(t->ndim, 2);
    assert_int_equal(t->shape[1], 3);
    float out[6];
    assert_int_equal(dkv_st_read_f32(st, t, out, 6, &e), DKV_OK);
    assert_memory_equal(out, a, sizeof a);
    t = dkv_st_find(st, "b.bf16");
    assert_string_equal(t->dtype_name, "BF16");
    assert_int_equal(dkv_st_read_f32(st, t, out, 3, &e), DKV_OK);
    for (int i = 0; i < 3; i++)
        assert_true(out[i] == dkv_bf16_to_f32(dkv_f32_to_bf16(b[i])) && fabsf(out[i] - b[i]) < 0.01f * fabsf(b[i]));
    t = dkv_st_find(st, "b.f16");
    assert_int_equal(dkv_st_read_f32(st, t, out, 3, &e), DKV_OK);
    for (int i = 0; i < 3; i++)
        assert_true(fabsf(out[i] - b[i]) < 0.001f * fabsf(b[i]));
    t = dkv_st_find(st, "ids");
    assert_memory_equal(dkv_st_data(st, t), ints, sizeof ints);
    assert_int_equal(dkv_st_read_f32(st, t, out, 2, &e), DKV_EUNSUPPORTED);
    assert_non_null(strstr(e.msg, "'ids'"));
    assert_non_null(strstr(e.msg, "I64"));
    assert_int_equal(dkv_st_read_f32(st, dkv_st_find(st, "a"), out, 5, &e), DKV_EINVAL);
    assert_non_null(strstr(e.msg, "tensor 'a': shape [2, 3] has 6 elements, expected 5"));
    dkv_st_close(st);
    dkv_st_close(NULL);
}

static void test_broken_files_named(void **state)
{
    (void)state;
    const char *ok = "{\"x\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}";
    raw_file(path("ok"), ok, 8);
    dkv_st *st = NULL;
    assert_int_equal(dkv_st_open(path("ok"), &st, NULL), DKV_OK);
    dkv_st_close(st);
    raw_file(path("trunc"), ok, 5);
    expect_open_error(path("trunc"), DKV_EFORMAT, "tensor 'x': field 'data_offsets'", "truncated");
    raw_file(path("overlap"), "{\"x\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
             "\"y\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[4,12]}}", 12);
    expect_open_error(path("overlap"), DKV_EFORMAT, "'x' [0, 8) and 'y' [4, 12) overlap", NULL);
    raw_file(path("size"), "{\"x\":{\"dtype\":\"F32\",\"shape\":[3],\"data_offsets\":[0,8]}}", 8);
    expect_open_error(path("size"), DKV_EFORMAT, "tensor 'x': field 'data_offsets'", "needs 12");
    raw_file(path("dtype"), "{\"x\":{\"dtype\":\"Q4\",\"shape\":[2],\"data_offsets\":[0,8]}}", 8);
    expect_open_error(path("dtype"), DKV_EFORMAT, "tensor 'x': field 'dtype': unknown dtype 'Q4'", NULL);
    raw_file(path("noshape"), "{\"x\":{\"dtype\":\"F32\",\"data_offsets\":[0,8]}}", 8);
    expect_open_error(path("noshape"), DKV_EFORMAT, "tensor 'x': field 'shape' is missing", NULL);
    raw_file(path("neg"), "{\"x\":{\"dtype\":\"F32\",\"shape\":[-2],\"data_offsets\":[0,8]}}", 8);
    expect_open_error(path("neg"), DKV_EFORMAT, "tensor 'x': field 'shape'", NULL);
    raw_file(path("json"), "{\"x\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}", 8);
    expect_open_error(path("json"), DKV_EFORMAT, "header JSON", NULL);
    raw_file(path("dup"), "{\"x\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,1]},"
             "\"x\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[1,2]}}", 2);
    expect_open_error(path("dup"), DKV_EFORMAT, "tensor 'x' appears twice", NULL);
    /* a header length larger than the file */
    FILE *f = fopen(path("hdrlen"), "wb");
    const uint8_t big[12] = {0xff, 0xff, 0, 0, 0, 0, 0, 0, '{', '}', ' ', ' '};
    fwrite(big, 1, sizeof big, f);
    fclose(f);
    expect_open_error(path("hdrlen"), DKV_EFORMAT, "header length 65535 does not fit", "truncated");
    raw_file(path("tiny"), "", 0);
    assert_int_equal(truncate(path("tiny"), 3), 0);
    expect_open_error(path("tiny"), DKV_EFORMAT, "too short", NULL);
    expect_open_error(path("absent"), DKV_ENOENT, "cannot open", NULL);
    /* issue 12 defect 10: an unknown field whose key or value is an unterminated string made jskip()
     * free the pointer jstring() left uninitialised (ASan: bad-free; release: a crash) */
    raw_file(path("unterm_val"), "{\"_s\": {\"k\": \"p", 0);
    expect_open_error(path("unterm_val"), DKV_EFORMAT, "unterminated string", NULL);
    raw_file(path("unterm_key"), "{\"_s\": {\"k", 0);
    expect_open_error(path("unterm_key"), DKV_EFORMAT, "unterminated string", NULL);
    raw_file(path("unterm_str"), "{\"x\":{\"dtype\":\"F32\",\"z\":\"p", 0);
    expect_open_error(path("unterm_str"), DKV_EFORMAT, "unterminated string", NULL);
    /* unknown fields are skipped; metadata with an escaped string; an empty tensor */
    raw_file(path("extra"), "{\"__metadata__\":{\"a\\\"b\":\"c\\u00e9\"},\"e\":{\"dtype\":\"F16\",\"shape\":[0],"
             "\"data_offsets\":[0,0],\"note\":[1,{\"z\":null}]}}  ", 0);
    assert_int_equal(dkv_st_open(path("extra"), &st, NULL), DKV_OK);
    assert_string_equal(dkv_st_metadata(st, "a\"b"), "c\xc3\xa9");
    assert_int_equal(dkv_st_find(st, "e")->numel, 0);
    dkv_st_close(st);
}

static void test_names(void **state)
{
    (void)state;
    char n[160];
    assert_int_equal(dkv_st_name(DKV_ST_NAMING_LLADA, "layers.3.wq", n, sizeof n, NULL), DKV_OK);
    assert_string_equal(n, "model.transformer.blocks.3.q_proj.weight");
    dkv_st_name(DKV_ST_NAMING_LLADA, "layers.31.w_gate", n, sizeof n, NULL);
    assert_string_equal(n, "model.transformer.blocks.31.ff_proj.weight");
    dkv_st_name(DKV_ST_NAMING_LLADA, "layers.0.w_down", n, sizeof n, NULL);
    assert_string_equal(n, "model.transformer.blocks.0.ff_out.weight");
    dkv_st_name(DKV_ST_NAMING_LLADA, "layers.0.wo", n, sizeof n, NULL);
    assert_string_equal(n, "model.transformer.blocks.0.attn_out.weight");
    dkv_st_name(DKV_ST_NAMING_LLADA, "lm_head", n, sizeof n, NULL);
    assert_string_equal(n, "model.transformer.ff_out.weight");
    dkv_st_name(DKV_ST_NAMING_DREAM, "layers.5.bk", n, sizeof n, NULL);
    assert_string_equal(n, "model.layers.5.self_attn.k_proj.bias");
    dkv_st_name(DKV_ST_NAMING_DREAM, "layers.5.ffn_norm", n, sizeof n, NULL);
    assert_string_equal(n, "model.layers.5.post_attention_layernorm.weight");
    dkv_st_name(DKV_ST_NAMING_DREAM, "ln_f", n, sizeof n, NULL);
    assert_string_equal(n, "model.norm.weight");
    dkv_st_name(DKV_ST_NAMING_DREAM, "lm_head", n, sizeof n, NULL);
    assert_string_equal(n, "lm_head.weight");
    dkv_err e = {0};
    assert_int_equal(dkv_st_name(DKV_ST_NAMING_DREAM, "layers.5.wz", n, sizeof n, &e), DKV_ENOENT);
    assert_non_null(strstr(e.msg, "layers.5.wz"));
}

static dkv_model small(int dream)
{
    dkv_model m = {.n_layers = 2, .hidden = 16, .ffn = 24, .n_heads = 4, .n_kv_heads = dream ? 2 : 4,
                   .head_dim = 4, .vocab = 40, .mask_id = 39, .max_len = 64, .rope_theta = 5e5,
                   .qkv_bias = dream != 0};
    snprintf(m.name, sizeof m.name, "%s", dream ? "dream-tiny" : "llada-tiny");
    return m;
}

static void test_llada_roundtrip_f32_and_bf16(void **state)
{
    (void)state;
    dkv_model m = small(0);
    dkv_ref_weights *src = NULL, *dst = NULL;
    assert_int_equal(dkv_ref_weights_new(&m, 1e-5f, &src, NULL), DKV_OK);
    assert_int_equal(dkv_ref_weights_new(&m, 1e-5f, &dst, NULL), DKV_OK);
    dkv_ref_weights_randomize(src, 77);
    dkv_err e = {0};
    assert_int_equal(dkv_st_save_ref(src, DKV_ST_NAMING_LLADA, DKV_ST_F32, path("llada.safetensors"), &e), DKV_OK);
    dkv_st *st = NULL;
    assert_int_equal(dkv_st_open(path("llada.safetensors"), &st, &e), DKV_OK);
    assert_non_null(dkv_st_find(st, "model.transformer.blocks.1.up_proj.weight"));
    assert_int_equal(dkv_st_find(st, "model.transformer.blocks.1.k_proj.weight")->shape[0], 16);
    dkv_st_naming nm = DKV_ST_NAMING_DREAM;
    assert_int_equal(dkv_st_detect_naming(&st, 1, &nm, &e), DKV_OK);
    assert_int_equal(nm, DKV_ST_NAMING_LLADA);
    uint32_t unused = 99;
    assert_int_equal(dkv_st_load_ref(&st, 1, nm, dst, &unused, &e), DKV_OK);
    assert_int_equal(unused, 0);
    assert_memory_equal(src->mem, dst->mem, src->n_floats * sizeof(float));
    dkv_st_close(st);
    /* bf16 storage: values come back rounded to bf16 */
    assert_int_equal(dkv_st_save_ref(src, DKV_ST_NAMING_LLADA, DKV_ST_BF16, path("llada16.safetensors"), &e), DKV_OK);
    assert_int_equal(dkv_st_open(path("llada16.safetensors"), &st, &e), DKV_OK);
    assert_int_equal(dkv_st_load_ref(&st, 1, DKV_ST_NAMING_LLADA, dst, NULL, &e), DKV_OK);
    for (size_t i = 0; i < src->n_floats; i++)
        assert_true(dst->mem[i] == dkv_bf16_to_f32(dkv_f32_to_bf16(src->mem[i])));
    dkv_st_close(st);
    /* the same file into a model of another FFN width: the shape error names the tensor */
    dkv_model m2 = m;
    m2.ffn = 32;
    dkv_ref_weights *other = NULL;
    assert_int_equal(dkv_ref_weights_new(&m2, 1e-5f, &other, NULL), DKV_OK);
    assert_int_equal(dkv_st_open(path("llada.safetensors"), &st, &e), DKV_OK);
    assert_int_equal(dkv_st_load_ref(&st, 1, DKV_ST_NAMING_LLADA, other, NULL, &e), DKV_EFORMAT);
    assert_non_null(strstr(e.msg, "model.transformer.blocks.0.ff_proj.weight': field 'shape': expected [32, 16], got [24, 16]"));
    /* and read as Dream, the first missing tensor is named */
    assert_int_equal(dkv_st_load_ref(&st, 1, DKV_ST_NAMING_DREAM, dst, NULL, &e), DKV_ENOENT);
    assert_non_null(strstr(e.msg, "model.embed_tokens.weight"));
    dkv_st_close(st);
    dkv_ref_weights_free(other);
    dkv_ref_weights_free(src);
    dkv_ref_weights_free(dst);
}

typedef struct split_ctx {
    dkv_st_writer *w[2];
    int i;
} split_ctx;

static dkv_status split_one(void *vctx, const char *canon, float *data, uint32_t d0, uint32_t d1)
{
    split_ctx *c = vctx;
    char name[160];
    dkv_st_name(DKV_ST_NAMING_DREAM, canon, name, sizeof name, NULL);
    uint64_t shape[2] = {d0, d1};
    return dkv_st_writer_add_f32(c->w[c->i++ % 2], name, DKV_ST_F16, d1 ? 2 : 1, shape, data, NULL);
}

static void test_dream_sharded_with_bias_and_tied(void **state)
{
    (void)state;
    dkv_model m = small(1);
    m.tied_embeddings = true;
    dkv_ref_weights *src = NULL, *dst = NULL;
    assert_int_equal(dkv_ref_weights_new(&m, 1e-6f, &src, NULL), DKV_OK);
    assert_int_equal(dkv_ref_weights_new(&m, 1e-6f, &dst, NULL), DKV_OK);
    dkv_ref_weights_randomize(src, 5);
    split_ctx c = {{NULL, NULL}, 0};
    dkv_st_writer_new(&c.w[0], NULL);
    dkv_st_writer_new(&c.w[1], NULL);
    assert_int_equal(dkv_ref_weights_foreach(src, split_one, &c), DKV_OK);
    uint64_t one = 1;
    float extra = 1;
    dkv_st_writer_add_f32(c.w[1], "model.rotary_emb.inv_freq", DKV_ST_F32, 1, &one, &extra, NULL);
    assert_int_equal(dkv_st_writer_write(c.w[0], path("dream-1.safetensors"), NULL), DKV_OK);
    assert_int_equal(dkv_st_writer_write(c.w[1], path("dream-2.safetensors"), NULL), DKV_OK);
    dkv_st_writer_free(c.w[0]);
    dkv_st_writer_free(c.w[1]);
    dkv_st *files[2] = {NULL, NULL};
    dkv_err e = {0};
    assert_int_equal(dkv_st_open(path("dream-2.safetensors"), &files[0], &e), DKV_OK);
    assert_int_equal(dkv_st_open(path("dream-1.safetensors"), &files[1], &e), DKV_OK);
    assert_non_null(dkv_st_find(files[0], "model.layers.0.self_attn.q_proj.bias") ?
                    dkv_st_find(files[0], "model.layers.0.self_attn.q_proj.bias") :
                    dkv_st_find(files[1], "model.layers.0.self_attn.q_proj.bias"));
    dkv_st_naming nm;
    assert_int_equal(dkv_st_detect_naming(files, 2, &nm, &e), DKV_OK);
    assert_int_equal(nm, DKV_ST_NAMING_DREAM);
    uint32_t unused = 0;
    assert_int_equal(dkv_st_load_ref(files, 2, nm, dst, &unused, &e), DKV_OK);
    assert_int_equal(unused, 1);   /* the inv_freq buffer */
    for (size_t i = 0; i < src->n_floats; i++)
        assert_true(dst->mem[i] == dkv_f16_to_f32(dkv_f32_to_f16(src->mem[i])));
    assert_ptr_equal(dst->lm_head, dst->wte);
    /* one shard alone: a missing tensor is named */
    assert_int_equal(dkv_st_load_ref(files, 1, nm, dst, NULL, &e), DKV_ENOENT);
    assert_non_null(strstr(e.msg, "is missing"));
    dkv_st_close(files[0]);
    dkv_st_close(files[1]);
    dkv_ref_weights_free(src);
    dkv_ref_weights_free(dst);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_conversions),
        cmocka_unit_test(test_write_then_read),
        cmocka_unit_test(test_broken_files_named),
        cmocka_unit_test(test_names),
        cmocka_unit_test(test_llada_roundtrip_f32_and_bf16),
        cmocka_unit_test(test_dream_sharded_with_bias_and_tied),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
