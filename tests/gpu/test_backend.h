/* test_backend.h - what the CUDA backend's GPU programs share: the H200 and LLaDA-8B figures
 * as C structs (the Lua presets are not linked here), a fixed-arrival workload, and an engine
 * configuration around the CUDA backend. */
#ifndef DKV_TESTS_GPU_TEST_BACKEND_H
#define DKV_TESTS_GPU_TEST_BACKEND_H

#include <stdio.h>
#include <string.h>

#include "cuda/backend.h"
#include "engine/engine.h"
#include "workload/workload.h"

/* datasets/presets/gpu/h200.lua */
static inline dkv_gpu h200(void)
{
    dkv_gpu g;
    memset(&g, 0, sizeof g);
    snprintf(g.name, sizeof g.name, "h200");
    g.hbm_bytes = 139.8 * 1073741824.0, g.hbm_bw = 4292e9, g.flops_bf16 = 790e12, g.flops_fp32 = 67e12;
    g.pcie_h2d_pinned = 55.5e9, g.pcie_d2h_pinned = 55.3e9, g.pcie_bidir_pinned = 101.4e9;
    g.pcie_h2d_pageable = 8.8e9, g.pcie_d2h_pageable = 15.5e9, g.launch_overhead_s = 4e-6;
    g.malloc_s = 35e-6, g.free_s = 38e-6, g.cost_per_hour = 3.8, g.n_sms = 132, g.l2_bytes = 60 * 1048576.0;
    g.max_num_logits = 16384, g.max_num_batched_tokens = 32768, g.retention = 0.3;
    return g;
}

/* datasets/presets/model/llada-8b.lua */
static inline dkv_model llada8b(void)
{
    dkv_model m = {.n_layers = 32, .hidden = 4096, .ffn = 12288, .n_heads = 32, .n_kv_heads = 32, .head_dim = 128,
                   .vocab = 126464, .mask_id = 126336, .max_len = 4096, .rope_theta = 500000.0,
                   .weight_dtype = DKV_DTYPE_BF16, .kv_dtype = DKV_DTYPE_BF16, .act_dtype = DKV_DTYPE_BF16};
    snprintf(m.name, sizeof m.name, "llada-8b");
    return m;
}

/* n requests arriving at t = 0 with prompts P[i] (or P[0] for all when np == 1) and generation G. */
static inline dkv_workload *fixed_workload(size_t n, const uint32_t *P, size_t np, uint32_t G, dkv_err *e)
{
    dkv_request *r = calloc(n, sizeof *r);
    for (size_t i = 0; i < n; i++)
        r[i] = (dkv_request){.id = i, .arrival_s = 0, .prompt_tokens = P[np == 1 ? 0 : i], .gen_tokens = G,
                             .user = DKV_NO_USER, .next_of_user = DKV_NO_NEXT};
    dkv_workload_opts o;
    dkv_workload_opts_default(&o);
    dkv_workload *w = NULL;
    if (dkv_workload_from_requests(r, n, &o, &w, e) != DKV_OK)
        w = NULL;
    free(r);
    return w;
}

/* The CUDA backend options that match an engine configuration (what l_execute.c sets): the KV
 * layout.  Block size, arena blocks, staging, the decode settings and the weights come from the
 * engine through dkv_backend_setup at begin. */
static inline dkv_cuda_backend_options backend_options_for(const dkv_engine_config *c)
{
    dkv_cuda_backend_options o = dkv_cuda_backend_options_default();
    o.layout = c->layout.layout == DKV_LAYOUT_LAYER_MAJOR ? DKV_KV_LAYER_MAJOR : DKV_KV_TOKEN_MAJOR;
    return o;
}

#endif
