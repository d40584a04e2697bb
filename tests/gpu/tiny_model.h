/* tiny_model.h - what the GPU programs on the project's trained tiny dLLM share: the model
 * preset as a C struct (datasets/presets/model/tiny-dllm.lua; the Lua presets are not linked
 * here), its weights loaded the way dkv.execute loads them (dkv_st_load_weights, core/io), the
 * prompts file read the way a `workload = {prompts = {file = ...}}` reads it (dkv_workload_prompts
 * with the byte tokenizer), and an engine configuration around the CUDA backend. */
#ifndef DKV_TESTS_GPU_TINY_MODEL_H
#define DKV_TESTS_GPU_TINY_MODEL_H

#include "test_backend.h"

#include "io/safetensors.h"
#include "ref/ref.h"
#include "workload/tokenizer.h"

#define TINY_WEIGHTS "datasets/models/tiny-dllm/model.safetensors"
#define TINY_PROMPTS "datasets/workloads/tiny_prompts.jsonl"

/* datasets/presets/model/tiny-dllm.lua */
static inline dkv_model tiny_dllm(void)
{
    dkv_model m = {.n_layers = 6, .hidden = 384, .ffn = 768, .n_heads = 6, .n_kv_heads = 2, .head_dim = 64,
                   .vocab = 264, .mask_id = 256, .max_len = 512, .rope_theta = 10000.0,
                   .weight_dtype = DKV_DTYPE_BF16, .kv_dtype = DKV_DTYPE_BF16, .act_dtype = DKV_DTYPE_BF16};
    snprintf(m.name, sizeof m.name, "tiny-dllm");
    return m;
}

/* The weights (rms_eps 1e-5, the preset's) or exit 1 with the loader's message. */
static inline dkv_ref_weights *tiny_weights(const dkv_model *m)
{
    const char *p = TINY_WEIGHTS;
    dkv_ref_weights *w = NULL;
    dkv_err e = {0};
    if (dkv_st_load_weights(&p, 1, m, 1e-5f, &w, &e) != DKV_OK) {
        fprintf(stderr, "%s: %s\n", TINY_WEIGHTS, e.msg);
        exit(1);
    }
    return w;
}

/* The first first_n prompts of the file (0: all), each generating gen tokens (lines with "gen"
 * keep theirs). */
static inline dkv_workload *tiny_prompts(const dkv_model *m, uint32_t gen, size_t first_n, dkv_tokenizer *tok)
{
    dkv_err e = {0};
    if (dkv_tokenizer_init(tok, DKV_TOKENIZER_BYTE, m->vocab, m->mask_id, &e) != DKV_OK) {
        fprintf(stderr, "tokenizer: %s\n", e.msg);
        exit(1);
    }
    dkv_prompts_cfg pc = {.tok = tok, .vocab = m->vocab, .gen = gen, .interval_s = 0};
    dkv_workload *w = NULL;
    dkv_workload_opts o;
    dkv_workload_opts_default(&o);
    o.first_n = first_n;
    if (dkv_workload_prompts(TINY_PROMPTS, &pc, &o, &w, &e) != DKV_OK) {
        fprintf(stderr, "%s\n", e.msg);
        exit(1);
    }
    return w;
}

/* An engine configuration for the tiny model: cache mode, block_len 32, `steps` steps per block,
 * pool blocks of 32 tokens in 256 MiB. */
static inline void tiny_config(dkv_engine_config *c, dkv_model *m, dkv_gpu *g, dkv_workload *w, dkv_cache_mode cache,
                               uint32_t steps)
{
    dkv_engine_config_default(c);
    c->model = m, c->gpu = g, c->workload = w;
    c->decode.cache = cache;
    c->decode.block_len = 32;
    c->decode.steps_per_block = steps;
    c->sizing.block_tokens = 32;
    c->mem.capacity_bytes = 256ull << 20;
    c->max_num_batched_tokens = g->max_num_batched_tokens;
    c->logit.max_num_logits = g->max_num_logits;
}

#endif
