/* test_backend_run.c - the engine with the CUDA backend on a fixed batch of requests, from C
 * (no Lua, no HDF5, so the binary runs on a GPU machine as it is), and the simulator on the
 * same configuration for comparison.  docs/GPU.md ("CUDA backend") records its measurements.
 *
 *   test_backend_run                   smoke test: a tiny model, 4 requests, sparse cache
 *   test_backend_run --model llada --n 32 --prompt 512 --gen 256 --cache sparse --block 32 --rho 0.5
 *                    [--offload none|progressive|plain] [--layout tmajor|layer_major]
 *                    [--capacity-gib 40] [--class-timing 0|1] [--streams 4] [--seed 1]
 *                    [--attn batched|per-item]
 *
 * Prints one summary line per backend (generated tokens/s, steps, step time, latency, PCIe
 * bytes, device memory) and the measured time per kernel class.  Exit 0 when every request
 * finished, 1 otherwise; 77 (SKIP) without a usable GPU; 2 on a bad option (gpu_args.h: checked
 * before the GPU is looked for; --help prints the usage). */
#include "gpu_args.h"
#include "gpu_check.h"
#include "test_backend.h"

#include "sim/sim.h"

typedef struct args {
    const char *model, *cache, *offload, *layout, *attn;
    uint32_t n, prompt, gen, block, streams;
    double rho, capacity_gib;
    int class_timing, cache_mode;   /* cache_mode: --cache parsed (dkv_cache_mode) */
    uint64_t seed;
} args;

static double kt[DKV_KCLASS_N];
static uint64_t kl[DKV_KCLASS_N];

static void on_kernel(void *user, const dkv_kernel_record *r)
{
    (void)user;
    if (r->time_s == r->time_s)
        kt[r->kind] += r->time_s;
    kl[r->kind] += r->n_launches;
}

static const char USAGE[] =
    "  test_backend_run                   smoke test: a tiny model, 4 requests, sparse cache\n"
    "  test_backend_run [--model tiny|llada] [--n N] [--prompt P] [--gen G] [--cache none|prefix|dual|sparse]\n"
    "                   [--block B] [--rho (0, 1]] [--offload none|progressive|plain] [--layout tmajor|layer_major]\n"
    "                   [--capacity-gib GIB] [--class-timing 0|1] [--streams S] [--seed SEED]\n"
    "                   [--attn batched|per-item]\n";

static void parse(int argc, char **argv, args *a)
{
    static const char *const models[] = {"tiny", "llada", NULL}, *const offloads[] = {"none", "progressive", "plain", NULL};
    static const char *const layouts[] = {"tmajor", "layer_major", NULL}, *const attns[] = {"batched", "per-item", NULL};
    *a = (args){.model = "tiny", .cache = "sparse", .cache_mode = DKV_CACHE_SPARSE, .offload = "none", .layout = "tmajor", .attn = "batched", .n = 4,
                .prompt = 64,
                .gen = 32, .block = 16, .streams = 4, .rho = 0.5, .capacity_gib = 1, .class_timing = 1, .seed = 1};
    gpu_args g = gpu_args_start("test_backend_run", USAGE, argc, argv);
    const char *k, *v;
    while (gpu_args_next(&g, &k, &v)) {
        if (!strcmp(k, "--model")) a->model = models[gpu_args_choice(&g, k, v, models)];
        else if (!strcmp(k, "--cache")) {
            if (dkv_names_parse(&dkv_cache_mode_names, v, &a->cache_mode, &err) != DKV_OK)
                gpu_args_fail(&g, "--cache: %s", err.msg);
            a->cache = v;
        }
        else if (!strcmp(k, "--offload")) a->offload = offloads[gpu_args_choice(&g, k, v, offloads)];
        else if (!strcmp(k, "--layout")) a->layout = layouts[gpu_args_choice(&g, k, v, layouts)];
        else if (!strcmp(k, "--attn")) a->attn = attns[gpu_args_choice(&g, k, v, attns)];
        else if (!strcmp(k, "--n")) a->n = (uint32_t)gpu_args_uint(&g, k, v, 1, 1u << 20);
        else if (!strcmp(k, "--prompt")) a->prompt = (uint32_t)gpu_args_uint(&g, k, v, 1, 1u << 20);
        else if (!strcmp(k, "--gen")) a->gen = (uint32_t)gpu_args_uint(&g, k, v, 1, 1u << 20);
        else if (!strcmp(k, "--block")) a->block = (uint32_t)gpu_args_uint(&g, k, v, 1, 1u << 16);
        else if (!strcmp(k, "--streams")) a->streams = (uint32_t)gpu_args_uint(&g, k, v, 1, 64);
        else if (!strcmp(k, "--rho")) a->rho = gpu_args_real(&g, k, v, 0, true, 1);
        else if (!strcmp(k, "--capacity-gib")) a->capacity_gib = gpu_args_real(&g, k, v, 0, true, 1 << 20);
        else if (!strcmp(k, "--class-timing")) a->class_timing = (int)gpu_args_uint(&g, k, v, 0, 1);
        else if (!strcmp(k, "--seed")) a->seed = gpu_args_uint(&g, k, v, 0, UINT64_MAX);
        else gpu_args_fail(&g, "unknown option %s", k);
    }
}

int main(int argc, char **argv)
{
    args a;
    parse(argc, argv, &a);
    skip_without_gpu();
    dkv_model m = llada8b();
    if (!strcmp(a.model, "tiny"))
        m = (dkv_model){.name = "tiny", .n_layers = 2, .hidden = 256, .ffn = 512, .n_heads = 4, .n_kv_heads = 2,
                        .head_dim = 64, .vocab = 1000, .mask_id = 999, .max_len = 512, .rope_theta = 10000.0};
    dkv_gpu g = h200();
    dkv_workload *w = fixed_workload(a.n, &a.prompt, 1, a.gen, &err);
    if (!w) {
        fprintf(stderr, "workload: %s\n", err.msg);
        return 1;
    }
    dkv_engine_config c;
    dkv_engine_config_default(&c);
    c.model = &m, c.gpu = &g, c.workload = w;
    c.decode.cache = (dkv_cache_mode)a.cache_mode;
    c.decode.block_len = a.block;
    c.retention.rho = a.rho;
    c.sizing.block_tokens = 32;
    uint64_t cap = (uint64_t)(a.capacity_gib * 1073741824.0);
    c.mem.capacity_bytes = cap;
    c.offload.mode = !strcmp(a.offload, "progressive") ? DKV_OFFLOAD_PROGRESSIVE
                     : !strcmp(a.offload, "plain")     ? DKV_OFFLOAD_PLAIN : DKV_OFFLOAD_NONE;
    c.layout.layout = !strcmp(a.layout, "layer_major") ? DKV_LAYOUT_LAYER_MAJOR : DKV_LAYOUT_TMAJOR;
    c.max_num_batched_tokens = g.max_num_batched_tokens;
    c.logit.max_num_logits = g.max_num_logits;
    c.on_kernel = on_kernel;

    /* the simulator on the same configuration */
    dkv_backend sim;
    dkv_sim_options so = dkv_sim_options_default();
    OK(dkv_sim_backend_new(&so, &sim, &err));
    c.backend = &sim;
    c.on_kernel = NULL;
    dkv_engine_result *rs = NULL;
    OK(dkv_engine_run(&c, &rs, &err));
    const dkv_run_summary *ss = dkv_engine_result_summary(rs);
    dkv_backend_free(&sim);

    dkv_cuda_backend_report rep;
    memset(&rep, 0, sizeof rep);
    dkv_cuda_backend_options o = backend_options_for(&c);
    o.seed = a.seed, o.attn_streams = a.streams, o.class_timing = a.class_timing != 0, o.report = &rep;
    o.attn_per_item = !strcmp(a.attn, "per-item");
    if (c.offload.mode != DKV_OFFLOAD_NONE) {
        uint64_t kvbpt = dkv_model_kv_bytes_per_token(&m), slot = (uint64_t)(a.prompt + a.gen + 31) / 32 * 32 * kvbpt;
        o.staging_bytes = (uint64_t)a.n * ((a.prompt + a.gen + 31) / 32) * 32 * kvbpt;
        o.host_bytes = (uint64_t)a.n * slot;
    }
    dkv_backend be;
    OK(dkv_cuda_backend_new(&o, &be, &err));
    c.backend = &be;
    c.on_kernel = on_kernel;
    dkv_engine_result *r = NULL;
    OK(dkv_engine_run(&c, &r, &err));
    const dkv_run_summary *s = dkv_engine_result_summary(r);
    size_t nst;
    const dkv_step_record *st = dkv_engine_result_steps(r, &nst);
    double tmax = 0, tsum = 0;
    for (size_t i = 0; i < nst; i++) {
        tsum += st[i].time_s;
        tmax = st[i].time_s > tmax ? st[i].time_s : tmax;
    }
    printf("config: %s, %u requests, prompt %u, gen %u, %s cache, block %u, rho %.2f, offload %s, layout %s, "
           "pool %.1f GiB, attention %s, streams %u, class timing %d\n", m.name, a.n, a.prompt, a.gen, a.cache, a.block,
           a.rho, a.offload, a.layout, a.capacity_gib, a.attn, a.streams, a.class_timing);
    printf("device: %s; weights %.2f GiB, arena %.2f GiB (%llu blocks of %.1f MiB), scratch %.2f GiB, host tier %.2f GiB\n",
           rep.device, rep.weights_bytes / 1073741824.0, rep.arena_bytes / 1073741824.0,
           (unsigned long long)rep.arena_blocks, rep.block_bytes / 1048576.0, rep.scratch_bytes / 1073741824.0,
           rep.host_tier_bytes / 1073741824.0);
    printf("cuda: %llu/%llu done, %.1f tokens/s, %llu steps, mean step %.2f ms (max %.2f), gpu %.3f s of wall %.3f s, "
           "latency p50 %.3f s p99 %.3f s, mean batch %.1f, PCIe h2d %.3e d2h %.3e bytes (ordered %.3e / %.3e), "
           "copy time %.3f s, peak device use %.2f GiB, compress err %.3f (%llu)\n",
           (unsigned long long)s->n_done, (unsigned long long)s->n_requests, s->tokens_per_s,
           (unsigned long long)s->n_steps, 1e3 * tsum / (nst ? nst : 1), 1e3 * tmax, rep.gpu_time_s, rep.wall_time_s,
           s->latency_p50_s, s->latency_p99_s, s->mean_batch, (double)rep.pcie_h2d_bytes, (double)rep.pcie_d2h_bytes,
           (double)rep.xfer_h2d_counted, (double)rep.xfer_d2h_counted, rep.copy_time_s,
           (rep.mem_total_bytes - rep.mem_free_min_bytes) / 1073741824.0,
           rep.n_compress ? rep.compress_err_sum / rep.n_compress : 0.0, (unsigned long long)rep.n_compress);
    printf("sim:  %llu/%llu done, %.1f tokens/s, %llu steps, latency p50 %.3f s, PCIe h2d %.3e d2h %.3e bytes\n",
           (unsigned long long)ss->n_done, (unsigned long long)ss->n_requests, ss->tokens_per_s,
           (unsigned long long)ss->n_steps, ss->latency_p50_s, ss->pcie_h2d_bytes, ss->pcie_d2h_bytes);
    double tot = 0;
    for (int k = 0; k < DKV_KCLASS_N; k++)
        tot += kt[k];
    printf("kernel classes (measured, all steps):");
    for (int k = 0; k < DKV_KCLASS_N; k++)
        if (kl[k])
            printf(" %s %.3f s (%.0f%%, %llu launches);", dkv_kernel_class_name((dkv_kernel_class)k), kt[k],
                   tot > 0 ? 100 * kt[k] / tot : 0, (unsigned long long)kl[k]);
    printf("\n");
    int ok = s->n_done == s->n_requests;
    dkv_cuda_backend_report_clear(&rep);
    dkv_engine_result_free(r);
    dkv_engine_result_free(rs);
    dkv_backend_free(&be);
    dkv_workload_free(w);
    printf("%s\n", ok ? "PASS" : "FAIL: not every request finished");
    return ok ? 0 : 1;
}
