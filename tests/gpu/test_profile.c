/* test_profile.c - dkv profile's measurement on the GPU (cuda/profile.h), at a small model and the
 * quick grid: every section runs without an error or a skipped shape, every table has rows whose
 * statistics are ordered (0 < p10 <= median <= p90) and plausible against the GPU's own limits
 * (a GEMM no faster than 2 PFLOP/s, no table's call under 1 us), larger GEMMs take longer,
 * copies take longer for more bytes, the host enqueue figures are positive, the sustained section runs only when
 * asked and then gives every shape its windows' clocks (the duty runs: whole steps, each cycle its step and the idle asked), and a deadline of 0 s stops the run at once with
 * complete = false.  Prints "SKIP: ..." and exits 77 without a GPU. */
#include "gpu_check.h"

#include "cuda/profile.h"

static dkv_model small(void)
{
    dkv_model m = {.name = "small", .n_layers = 4, .hidden = 1024, .ffn = 2816, .n_heads = 8, .n_kv_heads = 2,
                   .head_dim = 128, .vocab = 32000, .mask_id = 31999, .max_len = 4096, .rope_theta = 10000.0};
    return m;
}

static void expect(int ok, const char *what)
{
    printf("%s %s\n", ok ? "PASS" : "FAIL", what);
    g_failures += !ok;
}

static const dkv_prof_table *find(const dkv_prof *p, const char *name)
{
    for (uint32_t i = 0; i < p->n_tables; i++)
        if (strcmp(p->tables[i].name, name) == 0)
            return &p->tables[i];
    return NULL;
}

int main(void)
{
    char desc[256];
    if (dkv_cuda_probe(desc, sizeof desc, &err) != DKV_OK) {
        printf("SKIP: %s\n", err.msg);
        return 77;
    }
    dkv_model m = small();
    dkv_prof_opts o = dkv_prof_opts_default();
    o.models = &m, o.n_models = 1, o.quick = true, o.repeats = 5, o.warmup = 1;
    dkv_prof *p = NULL;
    OK(dkv_prof_run(&o, &p, &err));
    expect(p->complete && p->n_skipped == 0, "complete, nothing skipped");
    static const char *const want[] = {"qkv", "o", "ffn", "lm_head", "attn", "kv_store", "elementwise", "kv_gather",
                                       "gemm", "compress"};
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        const dkv_prof_table *t = find(p, want[i]);
        char what[128];
        snprintf(what, sizeof what, "table %s has rows", want[i]);
        expect(t && t->n > 0, what);
        int ordered = 1;
        for (size_t r = 0; t && r < t->n; r++) {
            const dkv_prof_row *w = &t->rows[r];
            ordered &= w->p10_s > 0 && w->p10_s <= w->median_s && w->median_s <= w->p90_s && w->median_s > 1e-6 &&
                       w->launches > 0 && isfinite(w->first_s);
        }
        snprintf(what, sizeof what, "table %s: 1 us < p10 <= median <= p90, launches > 0", want[i]);
        expect(t && ordered, what);
    }
    const dkv_prof_table *g = find(p, "gemm");
    int rate_ok = 1, grows = 1;
    for (size_t r = 0; g && r < g->n; r++) {
        const dkv_prof_row *w = &g->rows[r];
        rate_ok &= 2.0 * w->f[0] * w->f[1] * w->f[2] / w->median_s < 2e15;
        if (r > 0 && w->f[1] == g->rows[r - 1].f[1] && w->f[2] == g->rows[r - 1].f[2] && w->f[0] >= 8 * g->rows[r - 1].f[0])
            grows &= w->median_s > g->rows[r - 1].median_s;
    }
    expect(g && rate_ok, "gemm: under 2 PFLOP/s");
    expect(g && grows, "gemm: 8x the rows takes longer (same n, k)");
    int copies = p->n_copy >= 4;
    for (uint32_t i = 0; i + 2 < p->n_copy; i++)
        copies &= p->copy[i + 2].dir == p->copy[i].dir && p->copy[i + 2].bytes > p->copy[i].bytes &&
                  p->copy[i + 2].alone_s > p->copy[i].alone_s && p->copy[i].contended_s > 0;
    expect(copies, "copy: more bytes take longer, contended times measured");
    expect(p->compute_alone_s > 0 && p->compute_beside_s > 0, "copy: the load's GEMM alone and beside copies");
    expect(p->host_launch_s > 0 && p->host_gemm_launch_s > 0, "host: enqueue per launch");
    expect(strlen(p->gpu) > 0 && p->driver > 0 && p->runtime > 0, "provenance: GPU, driver, runtime");
    expect(p->n_sustained == 0 && p->sustain_s == 0, "sustained: not run without sustain_s");
    printf("profile --quick: %.1f s measured, %.1f s estimated (%s)\n", p->wall_s, p->est_s, desc);
    dkv_prof_free(p);
    /* the sustained section alone (dkv profile --grid sustained --sustain 0.4 --quick): the layer GEMMs at 512 and
     * 4,096 rows, then the attention, then the whole layer at 512 and 4,096 rows; each run lasts about sustain_s of
     * GPU time and reads a clock in every window */
    dkv_prof_opts so = o;
    so.sections = 1u << DKV_PROF_S_SUSTAINED, so.sustain_s = 0.4;
    OK(dkv_prof_run(&so, &p, &err));
    int runs_ok = p->complete && p->n_sustained == 5 && p->n_tables == 0;
    for (uint32_t i = 0; runs_ok && i < p->n_sustained; i++) {
        const dkv_prof_sustained *r = &p->sustained[i];
        double gpu_s = r->calls * r->call_s;
        runs_ok &= r->calls >= 4 && gpu_s > 0.25 * so.sustain_s && gpu_s < 4 * so.sustain_s;
        for (int w = 0; w < DKV_PROF_SUSTAIN_WIN; w++)
            runs_ok &= r->mhz[w] > 100 && r->mhz[w] < 5000;
        printf("sustained %s rows %.0f: %u calls of %.3g ms, SM clock %.0f %.0f %.0f %.0f MHz\n",
               dkv_prof_sustain_kind(r->kind), r->rows, r->calls, 1e3 * r->call_s, r->mhz[0],
               r->mhz[1], r->mhz[2], r->mhz[3]);
    }
    expect(runs_ok, "sustained: 5 runs, each about sustain_s of GPU time with a clock in every window");
    expect(p->n_sustained == 5 && p->sustained[0].kind == DKV_PROF_SUSTAIN_GEMM && p->sustained[2].kind == DKV_PROF_SUSTAIN_ATTN &&
               p->sustained[3].kind == DKV_PROF_SUSTAIN_LAYER && p->sustained[1].call_s > p->sustained[0].call_s &&
               p->sustained[3].call_s > p->sustained[0].call_s && p->sustained[4].call_s > p->sustained[1].call_s,
           "sustained: the GEMMs at 4,096 rows take longer a call than at 512, then the attention, then the whole layer "
           "(longer than its GEMMs alone at each row count)");
    dkv_prof_free(p);
    /* the duty runs (--sustain-gaps 0,20 --quick): the whole layer at 1,024 rows in steps of the model's layer count,
     * no idle then 20 ms idle after each step; a step's start to the next's holds the step's GPU time and the idle */
    so.sustain_gaps_s[0] = 0, so.sustain_gaps_s[1] = 0.02, so.n_sustain_gaps = 2;
    OK(dkv_prof_run(&so, &p, &err));
    int duty_ok = p->complete && p->n_sustained == 2;
    for (uint32_t i = 0; duty_ok && i < 2; i++) {
        const dkv_prof_sustained *r = &p->sustained[i];
        double step_s = r->step_calls * r->call_s;
        duty_ok &= r->kind == DKV_PROF_SUSTAIN_DUTY && r->step_calls == so.models[0].n_layers && r->rows == 1024 &&
                   r->gap_s == so.sustain_gaps_s[i] && r->calls % r->step_calls == 0 && step_s > 0 &&
                   r->cycle_s >= step_s + r->gap_s && r->cycle_s < step_s + r->gap_s + 0.02;
        for (int w = 0; w < DKV_PROF_SUSTAIN_WIN; w++)
            duty_ok &= r->mhz[w] > 100 && r->mhz[w] < 5000;
        printf("sustained duty rows %.0f gap %.0f ms: %u calls of %.3g ms, a step's cycle %.3g ms, SM clock %.0f %.0f "
               "%.0f %.0f MHz\n", r->rows, 1e3 * r->gap_s, r->calls, 1e3 * r->call_s, 1e3 * r->cycle_s, r->mhz[0],
               r->mhz[1], r->mhz[2], r->mhz[3]);
    }
    expect(duty_ok, "sustained duty: 2 runs of whole steps, each cycle its step's GPU time plus the idle asked "
                    "(within 20 ms), a clock in every window");
    dkv_prof_free(p);
    /* a deadline already passed: nothing measured, incomplete, not an error */
    o.deadline_s = 1e-9;
    OK(dkv_prof_run(&o, &p, &err));
    size_t rows = 0;
    for (uint32_t i = 0; i < p->n_tables; i++)
        rows += p->tables[i].n;
    expect(!p->complete && strstr(p->incomplete, "deadline") != NULL && rows == 0, "deadline: stops, says so");
    dkv_prof_free(p);
    printf("%s\n", g_failures ? "FAILED" : "ALL PASS");
    return g_failures ? 1 : 0;
}
