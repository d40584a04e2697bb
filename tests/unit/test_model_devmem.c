/* test_model_devmem.c - core/model/devmem.h: the CUDA backend's buffers counted without CUDA.
 *
 * Fixtures: the bytes the CUDA backend itself reported as allocated (scratch_bytes = its workspaces
 * + its activations) in the hardware session of 2026-12-01 (datasets/hw/2026-12-01/call2,
 * hw_h5.tgz: the :device runs), with the step rows (q_tokens, logit_rows) of the same runs' :real
 * steps.  The count must reproduce them to the byte. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "model/devmem.h"

static dkv_model llada(void)
{
    dkv_model m;
    memset(&m, 0, sizeof m);
    snprintf(m.name, sizeof m.name, "llada-8b");
    m.n_layers = 32, m.hidden = 4096, m.ffn = 12288, m.n_heads = 32, m.n_kv_heads = 32, m.head_dim = 128;
    m.vocab = 126464, m.mask_id = 126336, m.max_len = 4096;
    return m;
}

typedef struct rows { uint32_t T, R; } rows;

static uint64_t scratch(uint32_t max_L, uint64_t canvas, const rows *r, size_t n)
{
    dkv_model m = llada();
    dkv_devmem_cfg c = {.max_L = max_L, .block_len = 32, .canvas_tokens = canvas, .logit_rows = 1024,
                        .attn_streams = 4, .arena_blocks = 129};
    dkv_devmem d;
    dkv_devmem_init(&d, &m, &c);
    for (size_t i = 0; i < n; i++)
        dkv_devmem_rows(&d, r[i].T, r[i].R);
    /* the other parts of the count at begin: the 32 MiB cuBLASLt workspace and the canvases */
    assert_int_equal(d.now.cublaslt_ws, 32ull << 20);
    assert_int_equal(d.now.canvases, canvas * 4);
    assert_int_equal(d.peak, d.bytes);   /* nothing shrinks: the end is the peak */
    return d.now.workspaces + d.now.activations;
}

static void test_hardware_fixtures(void **state)
{
    (void)state;
    /* val:w1:dual: 1 request of 256 + 32, steps (288, 32) then (32, 32) x 3 */
    rows w1[] = {{288, 32}, {32, 32}, {32, 32}, {32, 32}};
    assert_int_equal(scratch(288, 288, w1, 4), 563495680ull);
    /* val:w2:dual: 2 requests of 1024 + 32 */
    rows w2[] = {{2112, 64}, {64, 64}, {64, 64}, {64, 64}};
    assert_int_equal(scratch(1056, 2112, w2, 4), 847004928ull);
    /* ho:vi:dual,b=1: the longest canvas 2465; batch 1 */
    rows vi[] = {{2465, 32}, {32, 32}, {2465, 32}, {32, 32}};
    assert_int_equal(scratch(2465, 4274, vi, 4), 907326720ull);
    /* ho:mc:dual,long: a step of 20395 rows and 256 logit rows grows the activations */
    rows mc[] = {{2112, 32}, {20395, 256}, {256, 256}, {2336, 256}, {20395, 256}};
    assert_int_equal(scratch(3136, 22475, mc, 5), 3664235264ull);
}

static void test_growth_rule(void **state)
{
    (void)state;
    uint32_t T = 0, R = 0;
    assert_true(dkv_devmem_act_grow(100, 0, &T, &R));   /* empty: always allocates, R at least 1 */
    assert_int_equal(T, 125);
    assert_int_equal(R, 1);
    assert_false(dkv_devmem_act_grow(125, 1, &T, &R));
    assert_true(dkv_devmem_act_grow(126, 1, &T, &R));   /* one row over: T + T/4 */
    assert_int_equal(T, 157);
    assert_int_equal(R, 1);
    assert_true(dkv_devmem_act_grow(10, 8, &T, &R));    /* logit rows alone grow R only */
    assert_int_equal(T, 157);
    assert_int_equal(R, 10);
    /* the order matters: 100 then 120 keeps 125 rows, 120 alone takes 150 */
    uint32_t a = 0, b = 0, c = 0, e = 0;
    dkv_devmem_act_grow(100, 1, &a, &b), dkv_devmem_act_grow(120, 1, &a, &b);
    dkv_devmem_act_grow(120, 1, &c, &e);
    assert_int_equal(a, 125);
    assert_int_equal(c, 150);
}

static void test_offload_buffers(void **state)
{
    (void)state;
    dkv_model m = llada();
    dkv_devmem_cfg c = {.max_L = 2048, .block_len = 32, .canvas_tokens = 4096, .attn_streams = 1, .arena_blocks = 10};
    dkv_devmem d;
    dkv_devmem_init(&d, &m, &c);
    uint64_t base = d.bytes;
    /* logit_rows 0 means the backend's default, 1024 rows of fp32 logits */
    assert_int_equal(dkv_devmem_workspace_bytes(&m, &c),
                     dkv_devmem_workspace_bytes(&m, &(dkv_devmem_cfg){.max_L = 2048, .block_len = 32,
                                                                      .logit_rows = 1024}));
    dkv_devmem_compressor(&d);
    uint64_t lr = dkv_devmem_lowrank_bytes(2048, 128, 64, 256), proj = dkv_devmem_lowrank_proj_bytes(&m, 2048);
    /* X and E alone: 2 x 256 x 2048 x 128 fp32 */
    assert_true(lr > 2ull * 256 * 2048 * 128 * 4);
    /* the projection: (2048 vectors) x (2048 x 64 + 64 x 128) x (4 + 2) bytes + errors + 1 KiB */
    assert_int_equal(proj, 2048ull * (2048 * 64 + 64 * 128) * 6 + 2048 * 4 + 1024);
    assert_int_equal(d.bytes, base + lr + proj);
    dkv_devmem_compressor(&d);   /* once */
    assert_int_equal(d.bytes, base + lr + proj);
    dkv_devmem_gather(&d, 1000);
    dkv_devmem_gather(&d, 500);  /* never shrinks */
    dkv_devmem_lowrank_in(&d, 300);
    assert_int_equal(d.now.gather, 1000);
    assert_int_equal(d.bytes, base + lr + proj + 1300);
    dkv_devmem_fp8(&d);
    assert_int_equal(d.now.fp8_scales, 10ull * 32 * 2 * 32 * 4);
    /* compress tokens: 10 blocks held, the last 2 offloaded raw, 3 compressed, 32 tokens a block */
    assert_int_equal(dkv_devmem_compress_tokens(10, 2, 3, 32, 4096), 96);
    assert_int_equal(dkv_devmem_compress_tokens(10, 2, 30, 32, 100), 100);   /* capped at max_L */
    assert_int_equal(dkv_devmem_compress_tokens(2, 5, 3, 32, 4096), 0);
    /* the order's rank: its size ratio x head_dim, clamped to [1, 64] and to its tokens */
    assert_int_equal(dkv_devmem_compress_rank(300, 1000, 64, 4096), 19);
    assert_int_equal(dkv_devmem_compress_rank(150, 1000, 64, 4096), 10);
    assert_int_equal(dkv_devmem_compress_rank(0, 0, 128, 4096), 38);        /* no device bytes: 0.3 */
    assert_int_equal(dkv_devmem_compress_rank(1000, 1000, 128, 4096), 64);  /* the compressor's largest */
    assert_int_equal(dkv_devmem_compress_rank(1, 1000, 64, 4096), 1);
    assert_int_equal(dkv_devmem_compress_rank(300, 1000, 64, 5), 5);
    /* the whole order (block bytes 1000, 32 tokens a block): 10 blocks held, 2 offloaded raw (1,500
     * bytes: 2 blocks), 3 compressed (3,000 device bytes at 900 PCIe bytes: ratio 0.3) */
    dkv_devmem_range g = dkv_devmem_compress_range(10, 1500, 3000, 900, 1000, 32, 4096, 320, 64);
    assert_true(g.start == 5 && g.end == 8 && g.m_tok == 96 && g.rank == 19);
    g = dkv_devmem_compress_range(10, 1500, 3000, 900, 1000, 32, 4096, 200, 64);   /* the item holds 200 rows */
    assert_true(g.start == 5 && g.end == 8 && g.m_tok == 40 && g.rank == 19);
    g = dkv_devmem_compress_range(10, 1500, 3000, 900, 1000, 32, 4096, 160, 64);   /* none past 160 */
    assert_true(g.m_tok == 0 && g.rank == 0);
    g = dkv_devmem_compress_range(10, 1500, 3000, 900, 1000, 32, 50, 320, 64);     /* capped at max_L */
    assert_true(g.m_tok == 50 && g.rank == 19);
    g = dkv_devmem_compress_range(10, 1500, 3000, 900, 0, 32, 4096, 320, 64);      /* no geometry: nothing */
    assert_true(g.start == 0 && g.end == 0 && g.m_tok == 0);
    /* bf16 Q (m x r) and B (r x D) per matrix: one 32-token block of the tiny model (24 matrices,
     * D 64) at r 19 is 87,552 bytes: less than its bf16 block (98,304), more than e4m3 (49,152);
     * at r 10 46,080, less than e4m3 */
    assert_int_equal(dkv_devmem_lowrank_form_bytes(24, 32, 19, 64), 87552);
    assert_int_equal(dkv_devmem_lowrank_form_bytes(24, 32, 10, 64), 46080);
    assert_int_equal(dkv_devmem_lowrank_form_bytes(1, 96, 19, 64), 6080);   /* 3 blocks: < 6,144 e4m3 */
}

/* A request's low-rank form (one rule for cuda/arena.c and the engine's count): stored by a COMPRESS
 * order over blocks [5, 8); a fetch rebuilds from it only when [5, 8) lies within the fetched
 * positions [n_chain, n_tb); a raw offload of the chain's last blocks that reaches into [5, 8) drops it,
 * one that stops before it does not.  Until session 36 the engine counted the form's buffer at every
 * fetch of the request after its compression, 270 MB more than the backend at bg:dual+prog. */
static void test_lowrank_form(void **state)
{
    (void)state;
    dkv_devmem_lr_form f = {0};
    assert_false(dkv_devmem_lr_rebuilds(&f, 0, 100));   /* none stored */
    dkv_devmem_range g = {.start = 5, .end = 8, .m_tok = 96, .rank = 19};
    dkv_devmem_lr_stored(&f, &g);
    assert_true(f.valid && f.start == 5 && f.end == 8 && f.m_tok == 96 && f.rank == 19);
    assert_int_equal(dkv_devmem_lr_bytes(&f, 1, 64), 6080);
    assert_true(dkv_devmem_lr_rebuilds(&f, 5, 8));       /* the fetched positions are exactly the form's */
    assert_true(dkv_devmem_lr_rebuilds(&f, 2, 10));
    assert_false(dkv_devmem_lr_rebuilds(&f, 6, 10));     /* block 5 is held on the device: no rebuild */
    assert_false(dkv_devmem_lr_rebuilds(&f, 5, 7));      /* block 7 is not fetched */
    dkv_devmem_lr_offload(&f, 5, 2000, 1000);            /* blocks 3 and 4 raw: before the form */
    assert_true(f.valid);
    dkv_devmem_lr_offload(&f, 10, 2000, 0);              /* no geometry: nothing */
    assert_true(f.valid);
    dkv_devmem_lr_offload(&f, 10, 2500, 1000);           /* blocks 7, 8 and 9 raw: into [5, 8) */
    assert_false(f.valid);
    assert_false(dkv_devmem_lr_rebuilds(&f, 2, 10));
    dkv_devmem_lr_stored(&f, &g);
    dkv_devmem_lr_offload(&f, 7, 100000, 1000);          /* every block of a 7-block chain: [0, 7) */
    assert_false(f.valid);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_hardware_fixtures),
        cmocka_unit_test(test_growth_rule),
        cmocka_unit_test(test_offload_buffers),
        cmocka_unit_test(test_lowrank_form),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
