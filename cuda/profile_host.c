/* profile_host.c - the host section's hand-over measurement (pr_sec_host calls it; issue 11):
 * how long the GPU idles between the end of one host thread's step and the start of the next
 * step, when the next step belongs to the same thread (resume_s) and when it belongs to another
 * thread that was waiting for the GPU slot (handover_s), the way core/engine/engine_multi.c's
 * timeslice ticket hands the GPU over: the holder waits for its work's end event
 * (cudaEventSynchronize, as cuda/backend.c does), then passes the ticket (mutex, condition variable,
 * broadcast); the next holder wakes, records its start event and launches on its own stream.
 *
 * Each round is a start event, a spin kernel of ROUND_S and an end event on the holder's stream;
 * the gap after round r is cudaEventElapsedTime(end r, start r + 1): both events sit on an idle
 * GPU, so it is the device's idle time between the two steps (the holder's wait returning, the
 * hand-over, the next launch reaching the GPU).  One thread doing every round (the ticket passed
 * to itself) measures resume_s; two threads alternating measure handover_s.  handover_s - resume_s
 * is the cost of waking another thread, which the simulator adds at a timeslice hand-over
 * (docs/COST_MODEL.md "Host time per step").  Medians of N - SKIP gaps; under 0.1 s in all. */
#include <pthread.h>
#include <stdlib.h>

#include "cuda/profile_internal.h"

#define HO_N     200       /* rounds per mode */
#define HO_SKIP  10        /* first gaps left out (lazy set-up of the second stream and thread) */
#define ROUND_S  100e-6    /* GPU work per round: long enough for the waiter to be asleep */

typedef struct ho_ctx {
    cudaStream_t    st[2];
    cudaEvent_t     ev[2 * HO_N];
    pthread_mutex_t mu;
    pthread_cond_t  cv;
    uint32_t        turn;     /* the round that may start */
    uint32_t        stride;   /* 1: one thread does every round; 2: two threads alternate */
    int             device;
    bool            failed;
    dkv_err         err;
} ho_ctx;

typedef struct ho_arg {
    ho_ctx  *h;
    uint32_t id;
} ho_arg;

static void ho_fail(ho_ctx *h, const char *what, cudaError_t e)
{
    pthread_mutex_lock(&h->mu);
    if (!h->failed)
        dkv_err_set(&h->err, DKV_EIO, "dkv profile: host hand-over: %s: %s", what, cudaGetErrorString(e));
    h->failed = true;
    pthread_cond_broadcast(&h->cv);
    pthread_mutex_unlock(&h->mu);
}

static void *ho_worker(void *arg)
{
    ho_arg *a = arg;
    ho_ctx *h = a->h;
    cudaError_t e = cudaSetDevice(h->device);
    if (e != cudaSuccess) {
        ho_fail(h, "cudaSetDevice", e);
        return NULL;
    }
    for (uint32_t r = a->id; r < HO_N; r += h->stride) {
        pthread_mutex_lock(&h->mu);
        while (h->turn != r && !h->failed)
            pthread_cond_wait(&h->cv, &h->mu);
        bool stop = h->failed;
        pthread_mutex_unlock(&h->mu);
        if (stop)
            return NULL;
        dkv_err ke;
        if ((e = cudaEventRecord(h->ev[2 * r], h->st[a->id])) != cudaSuccess ||
            dkv_prof_spin(h->st[a->id], ROUND_S, &ke) != DKV_OK ||
            (e = cudaEventRecord(h->ev[2 * r + 1], h->st[a->id])) != cudaSuccess ||
            (e = cudaEventSynchronize(h->ev[2 * r + 1])) != cudaSuccess) {
            ho_fail(h, "a round", e != cudaSuccess ? e : cudaErrorLaunchFailure);
            return NULL;
        }
        pthread_mutex_lock(&h->mu);
        h->turn = r + 1;
        pthread_cond_broadcast(&h->cv);
        pthread_mutex_unlock(&h->mu);
    }
    return NULL;
}

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* One mode (stride 1 or 2): the median gap between rounds at *gap_s. */
static dkv_status ho_mode(ho_ctx *h, uint32_t stride, double *gap_s, dkv_err *err)
{
    h->turn = 0;
    h->stride = stride;
    pthread_t th[2];
    ho_arg a[2] = {{h, 0}, {h, 1}};
    uint32_t n = 0;
    for (; n < stride; n++)
        if (pthread_create(&th[n], NULL, ho_worker, &a[n]) != 0) {
            pthread_mutex_lock(&h->mu);
            if (!h->failed)
                dkv_err_set(&h->err, DKV_ENOMEM, "dkv profile: host hand-over: could not start a thread");
            h->failed = true;
            pthread_cond_broadcast(&h->cv);
            pthread_mutex_unlock(&h->mu);
            break;
        }
    for (uint32_t i = 0; i < n; i++)
        pthread_join(th[i], NULL);
    if (h->failed) {
        if (err)
            *err = h->err;
        return h->err.code != DKV_OK ? h->err.code : DKV_EIO;
    }
    double g[HO_N];
    uint32_t m = 0;
    for (uint32_t r = HO_SKIP; r + 1 < HO_N; r++) {
        float ms = 0;
        cudaError_t e = cudaEventElapsedTime(&ms, h->ev[2 * r + 1], h->ev[2 * r + 2]);
        if (e != cudaSuccess)
            return dkv_err_set(err, DKV_EIO, "dkv profile: host hand-over: cudaEventElapsedTime: %s",
                               cudaGetErrorString(e));
        g[m++] = 1e-3 * ms;
    }
    qsort(g, m, sizeof *g, cmp_d);
    *gap_s = g[m / 2];
    return DKV_OK;
}

dkv_status pr_host_handover(prof_ctx *P, dkv_err *err)
{
    ho_ctx *h = calloc(1, sizeof *h);
    if (!h)
        return dkv_err_set(err, DKV_ENOMEM, "dkv profile: out of host memory");
    dkv_status st = DKV_OK;
    uint32_t n_ev = 0, n_st = 0;
    cudaError_t e = cudaGetDevice(&h->device);
    for (; e == cudaSuccess && n_st < 2; n_st++)
        e = cudaStreamCreateWithFlags(&h->st[n_st], cudaStreamNonBlocking);
    for (; e == cudaSuccess && n_ev < 2 * HO_N; n_ev++)
        e = cudaEventCreate(&h->ev[n_ev]);
    if (e != cudaSuccess)
        st = dkv_err_set(err, DKV_EIO, "dkv profile: host hand-over: set-up: %s", cudaGetErrorString(e));
    pthread_mutex_init(&h->mu, NULL);
    pthread_cond_init(&h->cv, NULL);
    double one = 0, two = 0;
    if (st == DKV_OK && (st = ho_mode(h, 1, &one, err)) == DKV_OK)
        st = ho_mode(h, 2, &two, err);
    if (st == DKV_OK) {
        P->p->host_resume_s = one;
        P->p->host_handover_s = two;
    }
    pthread_mutex_destroy(&h->mu);
    pthread_cond_destroy(&h->cv);
    for (uint32_t i = 0; i < n_ev; i++)
        cudaEventDestroy(h->ev[i]);
    for (uint32_t i = 0; i < n_st; i++)
        cudaStreamDestroy(h->st[i]);
    free(h);
    return st;
}
