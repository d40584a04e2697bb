/* test_policy_fixtures.h - shared model/GPU fixtures of the policy tests (header-only). */
#ifndef DKV_TEST_POLICY_FIXTURES_H
#define DKV_TEST_POLICY_FIXTURES_H

#include <string.h>

#include "model/model.h"

/* 2 layers, 2 KV heads, head_dim 4, bf16: 32 KV bytes per token-layer, 64 per token. */
static inline dkv_model tiny_model(void)
{
    dkv_model m;
    memset(&m, 0, sizeof m);
    strcpy(m.name, "tiny");
    m.n_layers = 2;
    m.hidden = 8;
    m.ffn = 16;
    m.n_heads = 2;
    m.n_kv_heads = 2;
    m.head_dim = 4;
    m.vocab = 100;
    m.mask_id = 99;
    m.max_len = 1024;
    m.rope_theta = 10000;
    m.weight_dtype = m.kv_dtype = m.act_dtype = DKV_DTYPE_BF16;
    return m;
}

static inline dkv_model llada8b(void)
{
    dkv_model m;
    memset(&m, 0, sizeof m);
    strcpy(m.name, "llada-8b");
    m.n_layers = 32;
    m.hidden = 4096;
    m.ffn = 12288;
    m.n_heads = 32;
    m.n_kv_heads = 32;
    m.head_dim = 128;
    m.vocab = 126464;
    m.mask_id = 126336;
    m.max_len = 4096;
    m.rope_theta = 500000;
    m.weight_dtype = m.kv_dtype = m.act_dtype = DKV_DTYPE_BF16;
    return m;
}

/* A GPU with bandwidth 1e12 B/s and a two-point curve: 8 B -> 0.25, 64 B -> 0.75. */
static inline dkv_gpu toy_gpu(void)
{
    dkv_gpu g;
    memset(&g, 0, sizeof g);
    strcpy(g.name, "toy");
    g.hbm_bytes = 80.0 * 1073741824.0;
    g.hbm_bw = 1e12;
    g.flops_bf16 = 1e15;
    g.pcie_h2d_pinned = g.pcie_d2h_pinned = 5e10;
    g.pcie_h2d_pageable = g.pcie_d2h_pageable = 1e10;
    g.n_bw_curve = 2;
    g.bw_curve[0] = (dkv_bw_point){8, 0.25};
    g.bw_curve[1] = (dkv_bw_point){64, 0.75};
    return g;
}

#endif
