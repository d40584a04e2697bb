/* test_multi_instances.c - k engine instances on one GPU (dkv_engine_run_instances with one CUDA
 * backend per instance, as dkv.execute builds them for cfg.instances.n > 1): k = 2 and 4, pool
 * shared and partitioned, weights shared and copied, timeslice (ticket) and spatial (concurrent
 * streams).  Each run must finish every request, leave the pool empty, keep its peak KV within
 * the pool, give each backend the arena the placement says (one pool of every block, or its
 * partition), and read only KV that was written: the arenas are poisoned with NaN at begin and
 * every item's confidences must be finite.  Request ids: a step plan (and the backend's item report)
 * names a request by its instance engine's own index; the merged results name it by its workload
 * index, unique in the run, with the instance beside it.  Both are checked: every workload request
 * ran on instance (index mod k) (round_robin), and result row g has id g on that instance.  The simulator runs the same configuration (one engine,
 * k instances) and prints beside it.  From C (no Lua, no HDF5): runs on a GPU machine as it is.
 *
 *   test_multi_instances [--model tiny|llada] [--n 16] [--prompt 64] [--gen 32] [--capacity-mib M]
 *                        [--dry-sim 1]   (simulator backends per instance: the set-up checked without a GPU)
 *
 * --capacity-mib 0 (the default): room for about half the requests at once.  Exit 0 when every case passes, 1
 * otherwise, 77 (SKIP) without a usable GPU, 2 on a bad option (gpu_args.h; --help prints the usage). */
#include <math.h>

#include "gpu_args.h"
#include "gpu_check.h"
#include "test_backend.h"

#include "sim/sim.h"

#define KMAX 8

static const char USAGE[] =
    "  test_multi_instances [--model tiny|llada] [--n 16] [--prompt 64] [--gen 32] [--capacity-mib M]\n"
    "                       [--dry-sim 0|1]   (1: simulator backends per instance, the set-up checked without a GPU)\n";

typedef struct seen {
    uint64_t items, bad_conf;
    uint32_t inst, k, n;      /* this instance, instances, requests of the whole workload */
    uint64_t wrong_inst;
    uint8_t *served;          /* (n) shared by the instances: 1 + the instance that ran workload request g */
} seen;

static void on_item(void *user, const dkv_cuda_item_report *r)
{
    seen *s = user;
    s->items++;
    for (uint32_t t = 0; t < r->block_len; t++)
        if (!isfinite(r->conf[t]))
            s->bad_conf++;
    /* The plan's request is the instance engine's own index (its backend's request table): the
     * instance's share of the workload in order.  round_robin with every request at t = 0: local j
     * of instance i is workload request i + j k (the results files carry that global id). */
    uint64_t g = (uint64_t)s->inst + (uint64_t)r->request * s->k;
    if (g >= s->n || (s->served[g] && s->served[g] != s->inst + 1))
        s->wrong_inst++;
    else
        s->served[g] = (uint8_t)(s->inst + 1);
}

typedef struct args {
    const char *model;
    uint32_t n, prompt, gen;
    double capacity_mib;
    int dry;             /* --dry-sim 1: simulator backends per instance, no GPU (checks the set-up here) */
} args;

static int one_case(const args *a, const dkv_model *m, const dkv_gpu *g, dkv_workload *w, uint32_t k, bool shared,
                    bool shared_weights, bool spatial)
{
    dkv_engine_config c;
    dkv_engine_config_default(&c);
    c.model = m, c.gpu = g, c.workload = w;
    c.decode.cache = DKV_CACHE_DUAL;
    c.decode.block_len = 32;
    c.sizing.block_tokens = 32;
    c.max_num_seqs = 4;
    c.mem.capacity_bytes = (uint64_t)llround(a->capacity_mib * 1048576.0);
    c.n_instances = k;
    c.placement.mode = shared ? DKV_PLACE_SHARED : DKV_PLACE_PARTITIONED;
    c.shared_weights = shared_weights;
    c.gpu_share = spatial ? DKV_SHARE_SPATIAL : DKV_SHARE_TIMESLICE;
    uint64_t kvbpt = dkv_model_kv_bytes_per_token(m), bb = 32 * kvbpt;
    /* the simulator: one engine, k instances */
    dkv_backend sim;
    dkv_sim_options so = dkv_sim_options_default();
    OK(dkv_sim_backend_new(&so, &sim, &err));
    c.backend = &sim;
    dkv_engine_result *rs = NULL;
    OK(dkv_engine_run(&c, &rs, &err));
    dkv_backend_free(&sim);
    /* the device: k backends as dkv.execute makes them */
    dkv_placement_config pc = c.placement;
    pc.n_instances = k;
    dkv_quota q[KMAX];
    OK(dkv_placement_quotas(&pc, c.mem.capacity_bytes, bb, q, &err));
    dkv_backend be[KMAX], *bp[KMAX];
    dkv_cuda_backend_report rep[KMAX];
    seen sn[KMAX];
    memset(rep, 0, sizeof rep);
    memset(sn, 0, sizeof sn);
    uint32_t nw = (uint32_t)dkv_workload_count(w);
    uint8_t *served = calloc(nw ? nw : 1, 1);
    if (!served) {
        fprintf(stderr, "test_multi_instances: out of memory\n");
        exit(1);
    }
    for (uint32_t i = 0; i < k; i++) {
        dkv_cuda_backend_options o = backend_options_for(&c);
        o.arena_instances = shared ? k : 1;
        o.arena_instance = shared ? i : 0;
        o.share_from = i ? &be[0] : NULL;
        o.share_weights = i && shared_weights;
        o.share_pool = i && shared;
        o.poison = true;
        o.report = &rep[i];
        sn[i].inst = i, sn[i].k = k, sn[i].n = nw, sn[i].served = served;
        o.on_item = on_item;
        o.on_item_user = &sn[i];
        if (a->dry)
            OK(dkv_sim_backend_new(&so, &be[i], &err));
        else
            OK(dkv_cuda_backend_new(&o, &be[i], &err));
        bp[i] = &be[i];
    }
    c.backend = &be[0];
    dkv_instances_options io = {.backends = bp, .gpu_lock = !spatial, .real_clock = !a->dry};
    dkv_engine_result *r = NULL;
    dkv_status st = dkv_engine_run_instances(&c, &io, &r, &err);
    int fail = 0;
    char why[768] = "";
    if (st != DKV_OK) {
        snprintf(why, sizeof why, "run failed: %s", err.msg);
        fail = 1;
    }
    const dkv_run_summary *s = r ? dkv_engine_result_summary(r) : NULL;
    const dkv_run_summary *ss = dkv_engine_result_summary(rs);
    uint64_t items = 0, bad = 0, wrong = 0, steps = 0;
    for (uint32_t gi = 0; gi < nw && !a->dry; gi++)   /* every request ran, on its round_robin instance */
        wrong += served[gi] != gi % k + 1;
    for (uint32_t i = 0; i < k && !a->dry; i++) {
        items += sn[i].items, bad += sn[i].bad_conf, wrong += sn[i].wrong_inst, steps += rep[i].steps;
        uint64_t want_blocks = shared ? c.mem.capacity_bytes / bb : q[i].max_blocks;
        if (!fail && rep[i].arena_blocks != want_blocks) {
            snprintf(why, sizeof why, "instance %u: arena of %llu blocks, placement says %llu", i,
                     (unsigned long long)rep[i].arena_blocks, (unsigned long long)want_blocks);
            fail = 1;
        }
        if (!fail && i && shared_weights && rep[i].weights_bytes != 0) {
            snprintf(why, sizeof why, "instance %u loaded its own weights although they are shared", i);
            fail = 1;
        }
    }
    size_t nq = 0;
    const dkv_req_record *rq = r ? dkv_engine_result_requests(r, &nq) : NULL;
    for (size_t j = 0; !fail && j < nq; j++)   /* the results: workload ids, unique in the run */
        if (rq[j].id != j || rq[j].instance != j % k)
            snprintf(why, sizeof why, "result row %zu: request id %llu on instance %u, want id %zu on instance %zu", j,
                     (unsigned long long)rq[j].id, rq[j].instance, j, j % k), fail = 1;
    if (!fail && nq != nw)
        snprintf(why, sizeof why, "%zu result rows for %u requests", nq, nw), fail = 1;
    if (!fail && s->n_done != s->n_requests)
        snprintf(why, sizeof why, "%llu of %llu requests done", (unsigned long long)s->n_done,
                 (unsigned long long)s->n_requests), fail = 1;
    else if (!fail && s->end_allocated_kv != 0)
        snprintf(why, sizeof why, "%llu bytes of KV left in the pool", (unsigned long long)s->end_allocated_kv), fail = 1;
    else if (!fail && (s->peak_tag[DKV_MEM_TAG_KV] == 0 || s->peak_tag[DKV_MEM_TAG_KV] > c.mem.capacity_bytes))
        snprintf(why, sizeof why, "peak KV %llu outside (0, pool %llu]", (unsigned long long)s->peak_tag[DKV_MEM_TAG_KV],
                 (unsigned long long)c.mem.capacity_bytes), fail = 1;
    else if (!fail && !a->dry && (bad || wrong || items == 0 || steps != s->n_steps))
        snprintf(why, sizeof why, "%llu non-finite confidences, %llu requests unserved or on the wrong instance, %llu items, "
                 "%llu device steps vs %llu engine steps", (unsigned long long)bad, (unsigned long long)wrong,
                 (unsigned long long)items, (unsigned long long)steps, (unsigned long long)s->n_steps), fail = 1;
    printf("%s k=%u %-11s weights %-6s %-9s | real: %.1f tok/s, %.3f s, p99 %.3f s, peak KV %.2f MiB, frag int %.4f "
           "ext@peak %.4f, reuse %.3f, %llu steps | sim: %.1f tok/s, peak KV %.2f MiB, frag int %.4f ext@peak %.4f, "
           "reuse %.3f%s%s\n",
           fail ? "FAIL" : "PASS", k, shared ? "shared" : "partitioned", shared_weights ? "shared" : "copies",
           spatial ? "spatial" : "timeslice", s ? s->tokens_per_s : 0, s ? s->sim_time_s : 0, s ? s->latency_p99_s : 0,
           s ? s->peak_tag[DKV_MEM_TAG_KV] / 1048576.0 : 0, s ? s->kv_internal_frag_peak : 0,
           s ? s->kv_external_frag_at_peak : 0, s ? s->block_reuse_rate : 0, s ? (unsigned long long)s->n_steps : 0ull,
           ss->tokens_per_s, ss->peak_tag[DKV_MEM_TAG_KV] / 1048576.0, ss->kv_internal_frag_peak,
           ss->kv_external_frag_at_peak, ss->block_reuse_rate, fail ? ": " : "", why);
    for (uint32_t i = 0; i < k; i++) {
        dkv_backend_free(&be[i]);
        dkv_cuda_backend_report_clear(&rep[i]);
    }
    dkv_engine_result_free(r);
    dkv_engine_result_free(rs);
    free(served);
    return fail;
}

int main(int argc, char **argv)
{
    static const char *const models[] = {"tiny", "llada", NULL};
    args a = {.model = "tiny", .n = 16, .prompt = 64, .gen = 32, .capacity_mib = 0};
    gpu_args ga = gpu_args_start("test_multi_instances", USAGE, argc, argv);
    const char *opt, *val;
    while (gpu_args_next(&ga, &opt, &val)) {
        if (!strcmp(opt, "--model")) a.model = models[gpu_args_choice(&ga, opt, val, models)];
        else if (!strcmp(opt, "--n")) a.n = (uint32_t)gpu_args_uint(&ga, opt, val, 1, 1u << 20);
        else if (!strcmp(opt, "--prompt")) a.prompt = (uint32_t)gpu_args_uint(&ga, opt, val, 1, 1u << 20);
        else if (!strcmp(opt, "--gen")) a.gen = (uint32_t)gpu_args_uint(&ga, opt, val, 1, 1u << 20);
        else if (!strcmp(opt, "--capacity-mib")) a.capacity_mib = gpu_args_real(&ga, opt, val, 0, false, 1 << 30);
        else if (!strcmp(opt, "--dry-sim")) a.dry = (int)gpu_args_uint(&ga, opt, val, 0, 1);
        else gpu_args_fail(&ga, "unknown option %s", opt);
    }
    if (!a.dry)
        skip_without_gpu();
    dkv_model m = llada8b();
    if (!strcmp(a.model, "tiny"))
        m = (dkv_model){.name = "tiny", .n_layers = 2, .hidden = 256, .ffn = 512, .n_heads = 4, .n_kv_heads = 2,
                        .head_dim = 64, .vocab = 1000, .mask_id = 999, .max_len = 512, .rope_theta = 10000.0,
                        .weight_dtype = DKV_DTYPE_BF16, .kv_dtype = DKV_DTYPE_BF16, .act_dtype = DKV_DTYPE_BF16};
    dkv_gpu g = h200();
    if (a.capacity_mib <= 0) {   /* room for about half the requests at once: instances contend */
        double blk = 32.0 * (double)dkv_model_kv_bytes_per_token(&m);
        a.capacity_mib = (double)((a.prompt + a.gen + 31) / 32) * (a.n / 2 + 1) * blk / 1048576.0;
    }
    dkv_workload *w = fixed_workload(a.n, &a.prompt, 1, a.gen, &err);
    if (!w) {
        fprintf(stderr, "workload: %s\n", err.msg);
        return 1;
    }
    printf("config: %s, %u requests x (%u + %u), dual cache, block 32, 4 sequences per instance, pool %.2f MiB\n",
           m.name, a.n, a.prompt, a.gen, a.capacity_mib);
    int fails = 0;
    static const uint32_t ks[] = {2, 4};
    for (int ki = 0; ki < 2; ki++)
        for (int sh = 1; sh >= 0; sh--)
            fails += one_case(&a, &m, &g, w, ks[ki], sh, true, false);
    fails += one_case(&a, &m, &g, w, 2, true, false, false);   /* a weight copy per instance */
    fails += one_case(&a, &m, &g, w, 2, true, true, true);     /* concurrent streams, no ticket */
    dkv_workload_free(w);
    printf("%s: %d case(s) failed\n", fails ? "FAIL" : "PASS", fails);
    return fails ? 1 : 0;
}
