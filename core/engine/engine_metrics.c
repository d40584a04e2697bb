/* engine_metrics.c - per-request, per-step and memory records, and the run summary. */
#include "engine/engine_impl.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "policy/cost.h"

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double dkv_percentile(double *v, size_t n, double pct)
{
    if (n == 0)
        return NAN;
    qsort(v, n, sizeof *v, cmp_double);
    if (pct <= 0)
        return v[0];
    if (pct >= 100)
        return v[n - 1];
    double pos = pct / 100.0 * (double)(n - 1);
    size_t i = (size_t)pos;
    double f = pos - (double)i;
    return i + 1 < n ? v[i] + f * (v[i + 1] - v[i]) : v[i];
}

dkv_status eng_result_new(eng *e, dkv_err *err)
{
    e->res = calloc(1, sizeof *e->res);
    if (!e->res)
        return dkv_err_set(err, DKV_ENOMEM, "engine: out of host memory");
    return DKV_OK;
}

dkv_status eng_push_step(eng *e, const dkv_step_record *s)
{
    dkv_engine_result *r = e->res;
    if (r->n_steps == r->cap_steps) {
        size_t nc = r->cap_steps ? 2 * r->cap_steps : 1024;
        dkv_step_record *n = realloc(r->steps, nc * sizeof *n);
        if (!n)
            return DKV_ENOMEM;
        r->steps = n;
        r->cap_steps = nc;
    }
    r->steps[r->n_steps++] = *s;
    return DKV_OK;
}

dkv_status eng_push_mem(eng *e, double time_s, uint64_t reserved)
{
    dkv_engine_result *r = e->res;
    if (r->n_mem == r->cap_mem) {
        size_t nc = r->cap_mem ? 2 * r->cap_mem : 1024;
        dkv_mem_record *n = realloc(r->mem, nc * sizeof *n);
        if (!n)
            return DKV_ENOMEM;
        r->mem = n;
        r->cap_mem = nc;
    }
    dkv_mem_record *m = &r->mem[r->n_mem++];
    m->time_s = time_s;
    m->weights = e->tag_now[DKV_MEM_TAG_WEIGHTS];
    m->kv = e->tag_now[DKV_MEM_TAG_KV];
    m->activation = e->tag_now[DKV_MEM_TAG_ACTIVATION];
    m->logits = e->tag_now[DKV_MEM_TAG_LOGITS];
    m->staging = e->tag_now[DKV_MEM_TAG_STAGING];
    m->host = e->host_now;
    m->allocated = e->alloc_now;
    m->reserved = reserved;
    return DKV_OK;
}

/* One request's record at the end of the run (NaN for what never happened). */
static void fill_record(dkv_req_record *q, const ereq *r, uint8_t status)
{
    bool done = r->state == RS_DONE;
    q->id = r->src->id;
    q->instance = r->inst;
    q->status = status;
    q->route = r->route;
    q->prompt_tokens = r->src->prompt_tokens;
    q->gen_tokens = r->src->gen_tokens;
    q->steps = r->refresh + r->reuse;
    q->refresh_steps = r->refresh;
    q->reuse_steps = r->reuse;
    q->preempted_steps = r->preempted_steps;
    q->arrival_s = isfinite(r->arrival) ? r->arrival : NAN;
    q->start_s = r->start;         /* NaN until it happens */
    q->first_block_s = r->first_block;
    q->finish_s = done ? r->finish : NAN;
    q->latency_s = done ? r->finish - r->arrival : NAN;
    q->queue_s = r->started ? r->start - r->arrival : NAN;
    q->tpot_s = done && r->src->gen_tokens ? (r->finish - r->start) / r->src->gen_tokens : NAN;
    q->kv_peak_bytes = r->kv_peak;
}

/* Fragmentation, reuse, failures and peaks of the KV managers (summed when partitioned) and of
 * the device manager. */
static void summarize_memory(eng *e, dkv_run_summary *s)
{
    double sum_int = 0, sum_ext = 0, w = 0;
    uint64_t hits = 0, total = 0, peak_res = 0;
    uint32_t n_mgr = 0;
    for (uint32_t i = 0; i < e->n_kvm; i++) {
        dkv_mem_stats ms;
        dkv_mem_stats_get(e->kvm[i], &ms);
        if (ms.peak_internal_frag > s->kv_internal_frag_peak)
            s->kv_internal_frag_peak = ms.peak_internal_frag;
        if (ms.peak_external_frag > s->kv_external_frag_peak)
            s->kv_external_frag_peak = ms.peak_external_frag;
        if (ms.external_frag_at_peak > s->kv_external_frag_at_peak)
            s->kv_external_frag_at_peak = ms.external_frag_at_peak;
        sum_int += ms.mean_internal_frag;
        sum_ext += ms.mean_external_frag;
        w += 1;
        hits += ms.reuse_hits;
        total += ms.reuse_total;
        s->alloc_failures += ms.n_failed;
        s->alloc_failures_frag += ms.n_failed_frag;
        s->end_allocated_kv += e->kvm[i] == e->dev ? ms.allocated - e->tag_now[DKV_MEM_TAG_WEIGHTS] : ms.allocated;
        peak_res = ms.peak_reserved > peak_res ? ms.peak_reserved : peak_res;
        n_mgr++;
    }
    s->kv_internal_frag_mean = w ? sum_int / w : 0;
    s->kv_external_frag_mean = w ? sum_ext / w : 0;
    s->block_reuse_rate = total ? (double)hits / (double)total : 0;
    {
        dkv_mem_stats ms;
        dkv_mem_stats_get(e->dev, &ms);
        s->dev_internal_frag_peak = ms.peak_internal_frag;
        s->dev_external_frag_peak = ms.peak_external_frag;
        s->end_allocated_device = e->dev_is_kv ? e->tag_now[DKV_MEM_TAG_WEIGHTS] : ms.allocated;
        if (!e->dev_is_kv) {
            peak_res = ms.peak_reserved > peak_res ? ms.peak_reserved : peak_res;
            n_mgr++;
            s->alloc_failures += ms.n_failed;
            s->alloc_failures_frag += ms.n_failed_frag;
        }
    }
    /* One manager: its own event-exact peak.  Several (KV pools + the device allocator): their
     * combined reserved at each step's peak point (all of the step's acquisitions done, none of its
     * releases), never below any single manager's peak. */
    s->peak_reserved = n_mgr > 1 && e->res_step_max > peak_res ? e->res_step_max : peak_res;
}

/* The latency part of a summary from the finished requests' latencies (lat, n_lat), their
 * first-block delays (fb, n_fb) and the sums of queueing time and time per output token; NaN
 * when no request finished.  lat and fb are reordered (percentiles).  Shared by one engine's
 * summary and the merged summary of threaded instances (engine_multi.c). */
void eng_summary_latency(dkv_run_summary *s, double *lat, size_t n_lat, double *fb, size_t n_fb, double q_sum,
                         double tpot_sum)
{
    if (n_lat) {
        double sum = 0;
        for (size_t i = 0; i < n_lat; i++)
            sum += lat[i];
        s->latency_mean_s = sum / (double)n_lat;
        s->latency_p50_s = dkv_percentile(lat, n_lat, 50);
        s->latency_p95_s = dkv_percentile(lat, n_lat, 95);
        s->latency_p99_s = dkv_percentile(lat, n_lat, 99);
        s->first_block_p50_s = dkv_percentile(fb, n_fb, 50);
        s->first_block_p99_s = dkv_percentile(fb, n_fb, 99);
        s->queue_mean_s = q_sum / (double)n_lat;
        s->tpot_mean_s = tpot_sum / (double)n_lat;
    } else {
        s->latency_mean_s = s->latency_p50_s = s->latency_p95_s = s->latency_p99_s = NAN;
        s->first_block_p50_s = s->first_block_p99_s = s->queue_mean_s = s->tpot_mean_s = NAN;
    }
}

void eng_summarize(eng *e, double wall_s)
{
    dkv_engine_result *res = e->res;
    dkv_run_summary *s = &res->sum;
    memset(s, 0, sizeof *s);
    res->n_req = e->n;
    res->req = calloc(e->n ? e->n : 1, sizeof *res->req);
    double *lat = malloc((e->n ? e->n : 1) * sizeof *lat);
    double *fb = malloc((e->n ? e->n : 1) * sizeof *fb);
    size_t n_lat = 0, n_fb = 0;
    double last_finish = 0, q_sum = 0, tpot_sum = 0;
    s->n_requests = e->n;
    for (size_t i = 0; i < e->n; i++) {
        ereq *r = &e->rq[i];
        bool done = r->state == RS_DONE;
        uint8_t status = r->state == RS_DONE || r->state == RS_FAILED ? r->status : DKV_REQ_UNFINISHED;
        if (res->req)
            fill_record(&res->req[i], r, status);
        switch (status) {
        case DKV_REQ_DONE: s->n_done++; break;
        case DKV_REQ_OOM: s->n_oom++; break;
        case DKV_REQ_TOO_LONG: s->n_too_long++; break;
        default: s->n_unfinished++; break;
        }
        s->request_steps += r->refresh + r->reuse;
        s->refresh_steps += r->refresh;
        s->reuse_steps += r->reuse;
        if (!done)
            continue;
        s->gen_tokens += r->src->gen_tokens;
        s->prompt_tokens += r->src->prompt_tokens;
        if (r->finish > last_finish)
            last_finish = r->finish;
        if (lat)
            lat[n_lat++] = r->finish - r->arrival;
        if (fb)
            fb[n_fb++] = r->first_block - r->arrival;
        q_sum += r->start - r->arrival;
        tpot_sum += r->src->gen_tokens ? (r->finish - r->start) / r->src->gen_tokens : 0;
    }
    s->n_steps = e->step_index;
    s->n_preempted = e->n_preempted;
    s->preempted_steps = e->preempted_steps;
    s->rho_clamped = e->ret.n_clamped;
    s->sim_time_s = last_finish > e->now ? last_finish : e->now;
    s->busy_s = e->busy_s;
    s->gpu_busy_frac = s->sim_time_s > 0 ? e->compute_s / s->sim_time_s : 0;
    s->roofline_frac = e->compute_s > 0 ? e->roofline_s / e->compute_s : 0;
    s->throughput_rps = s->sim_time_s > 0 ? (double)s->n_done / s->sim_time_s : 0;
    s->tokens_per_s = s->sim_time_s > 0 ? (double)s->gen_tokens / s->sim_time_s : 0;
    eng_summary_latency(s, lat, n_lat, fb, n_fb, q_sum, tpot_sum);
    free(lat);
    free(fb);
    s->mean_batch = e->step_index ? (double)e->items_total / (double)e->step_index : 0;
    s->phase_pred_accuracy = e->pred_total ? (double)e->pred_ok / (double)e->pred_total : NAN;
    s->budget_overruns = e->overruns;
    s->hbm_read_bytes = e->hbm_rd;
    s->hbm_write_bytes = e->hbm_wr;
    s->pcie_h2d_bytes = e->pcie_h2d;
    s->pcie_d2h_bytes = e->pcie_d2h;
    s->flops = e->flops;
    s->alloc_time_s = e->alloc_s;
    for (int t = 0; t < DKV_MEM_TAG_COUNT; t++)
        s->peak_tag[t] = e->tag_peak[t];
    s->peak_host_bytes = e->host_peak;
    s->peak_allocated = e->alloc_peak;
    s->kv_capacity_bytes = e->kv_capacity;
    s->device_capacity_bytes = e->dev_capacity;
    summarize_memory(e, s);
    eng_devmem_summary(e, s);
    s->cost_per_hour = e->c.cost_per_hour >= 0 ? e->c.cost_per_hour : e->g->cost_per_hour;
    s->cost_per_mtok = dkv_cost_per_mtok(s->cost_per_hour, 1, s->tokens_per_s);
    s->wall_s = wall_s;
}

const dkv_run_summary *dkv_engine_result_summary(const dkv_engine_result *r)
{
    return r ? &r->sum : NULL;
}

const dkv_req_record *dkv_engine_result_requests(const dkv_engine_result *r, size_t *n)
{
    *n = r ? r->n_req : 0;
    return r ? r->req : NULL;
}

const dkv_step_record *dkv_engine_result_steps(const dkv_engine_result *r, size_t *n)
{
    *n = r ? r->n_steps : 0;
    return r ? r->steps : NULL;
}

const dkv_mem_record *dkv_engine_result_memory(const dkv_engine_result *r, size_t *n)
{
    *n = r ? r->n_mem : 0;
    return r ? r->mem : NULL;
}

void dkv_engine_result_free(dkv_engine_result *r)
{
    if (!r)
        return;
    free(r->req);
    free(r->steps);
    free(r->mem);
    free(r);
}
