/* engine.h - the iteration-level serving loop: workload in, step plans to a backend, metrics out.
 *
 * The engine decides WHAT happens (DESIGN.md): which requests run each step and in which phase,
 * which KV memory is taken, kept, offloaded or freed, how logits are chunked.  A backend
 * (engine/backend.h; sim/ or cuda/) says what each step costs.  The engine never knows which.
 *
 *     dkv_engine_config c;
 *     dkv_engine_config_default(&c);
 *     c.model = &model; c.gpu = &gpu; c.workload = w; c.backend = &be;
 *     c.sched = DKV_SCHED_PHASE;
 *     dkv_engine_result *r = NULL;
 *     if (dkv_engine_run(&c, &r, &err) != DKV_OK) ...;      // r may be set (partial) on DKV_EINTR
 *     const dkv_run_summary *s = dkv_engine_result_summary(r);
 *     dkv_engine_result_free(r);
 *
 * ---- Each iteration (per instance) ----
 *   1. arrivals up to the clock join the instance's waiting queue (instances take arrivals
 *      round-robin or least-loaded);
 *   2. the scheduler picks request-steps (see dkv_sched_kind) under max_num_seqs and the token
 *      budget max_num_batched_tokens, budgeting each step by its PREDICTED phase;
 *   3. memory: each picked step grows its request's KV to what the step needs (decode.h's
 *      resident tokens, or what the offload policy keeps); a step whose KV cannot be had is
 *      dropped this iteration (the request waits, keeping what it holds).  Then the step's
 *      activations (sum of the items' activation peaks, FFN intermediate included) and the
 *      logits' transient peak (logit.h, chunked by max_num_logits) are taken from the device
 *      manager; if they do not fit, the youngest items are dropped until they do;
 *   4. policies: layout (contiguous run length of cached-KV reads, reorder copies), progressive
 *      offload (fetch / compress / offload orders), sparse retention (per block rho), routing;
 *   5. the plan goes to the backend; the clock advances by the step time plus the modelled
 *      allocator time (cudaMalloc/cudaFree of the managers during the step);
 *   6. commit: decode states advance, offloaded KV is freed, transients are released (deferred
 *      under the lifecycle policy), finished requests release everything.
 *
 * ---- Memory: waiting, not preempting, unless stuck ----
 * KV lives in the KV manager (mem.kind: static / caching / blockpool) with the KV budget of
 * dLLM-Serve's sizing rule (kv_frac of HBM - weights - margin); weights, activations, logits,
 * staging and routed ("plain path") KV live in a device manager (caching model) holding the
 * rest.  With mem.kind = caching one manager holds everything (PyTorch-style serving).
 * A request is admitted when its first step gets its KV; otherwise it waits (FCFS: later
 * requests wait behind it).  A running request whose step cannot grow its KV waits too,
 * keeping its memory.  If an iteration can run nothing at all while requests hold KV (every
 * one of them blocked), the most recently admitted blocked request is PREEMPTED: all its KV is
 * released and it restarts its current block (a block's first step recomputes the canvas, so
 * only the in-block steps are repeated; counted in n_preempted / preempted_steps).  A request
 * that cannot run even alone on an empty manager is failed as unservable (status OOM), counted
 * in the summary; the run continues.  Requests whose canvas exceeds the model's max_len fail
 * with status TOO_LONG.
 * With mem.kind = static each request also reserves max_len tokens of KV at admission
 * (the "native" baseline); the reservation is returned when it finishes.
 *
 * ---- Multi-instance ----
 * n_instances engines (each its own scheduler, queues, weights unless shared_weights) on one
 * GPU.  KV pool: placement.mode shared (one manager; block pool quotas from placement.h) or
 * partitioned (one manager per instance, capacity = its quota).  GPU time:
 *   DKV_SHARE_TIMESLICE  the GPU runs one instance's step at a time, instances taking turns
 *                        round-robin among those with work (MPS-less time slicing); an
 *                        instance busy on the host (step_host_s after its step) is skipped,
 *                        so several instances fill each other's host gaps.  The GPU is free
 *                        again step_release_s after a step (the holder's serial host work);
 *                        an instance B that was waiting for it (ready by then) takes it over
 *                        from the holder A after a further handover_s (the engine_multi.c
 *                        ticket: A waits for its step's end, does its post-step bookkeeping,
 *                        passes the ticket, B's thread wakes and launches); A itself goes on
 *                        after step_release_s + step_host_s (docs/COST_MODEL.md "Host time
 *                        per step");
 *   DKV_SHARE_SPATIAL    the steps of all instances with work in a round run concurrently
 *                        (MPS): their plans are merged into one and costed together, weights
 *                        streamed once per instance (n_weight_streams); all advance together.
 *
 * Phase prediction: before each step the scheduler predicts the request's phase from what it
 * knows (steps done, the configured steps per block, the cache mode); the decode model then
 * gives the actual one.  With exact_phase the scheduler uses the decode model's own peek.
 * Accuracy = predicted == actual over all request-steps run.
 */
#ifndef DKV_ENGINE_ENGINE_H
#define DKV_ENGINE_ENGINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "decode/decode.h"
#include "engine/backend.h"
#include "mem/mem.h"
#include "model/model.h"
#include "policy/layout.h"
#include "policy/lifecycle.h"
#include "policy/logit.h"
#include "policy/offload.h"
#include "policy/placement.h"
#include "policy/retention.h"
#include "policy/routing.h"
#include "policy/sizing.h"
#include "util/names.h"
#include "util/status.h"
#include "workload/workload.h"

typedef enum dkv_sched_kind {
    DKV_SCHED_STATIC = 0,  /* FCFS static batching: a batch of up to max_num_seqs is formed when
                              the engine is idle and runs until all its requests finish */
    DKV_SCHED_FCFS,        /* FCFS continuous batching (dLLM-Serve's baseline order): running
                              requests first, then admissions in arrival order; every
                              request-step is budgeted at its full canvas L */
    DKV_SCHED_PHASE        /* phase-multiplexed greedy (dLLM-Serve): Refresh budgeted at L,
                              Reuse at B; admissions fill the budget Reuse phases free */
} dkv_sched_kind;

/* The names of the enums below (util/names.h: dkv_names_parse; the Lua layer reads them too). */
extern const dkv_names dkv_sched_names;                  /* "static", "fcfs", "phase" (engine_sched.c) */
extern const dkv_names dkv_gpu_share_names;              /* "timeslice", "spatial" */
extern const dkv_names dkv_instance_route_names;         /* "round_robin", "least_loaded" */
extern const dkv_names dkv_req_status_names;             /* "done", "oom", "too_long", "unfinished" */
const char *dkv_sched_name(dkv_sched_kind k);

typedef enum dkv_gpu_share {
    DKV_SHARE_TIMESLICE = 0,
    DKV_SHARE_SPATIAL
} dkv_gpu_share;
const char *dkv_gpu_share_name(dkv_gpu_share s);

typedef enum dkv_instance_route {
    DKV_IROUTE_ROUND_ROBIN = 0,  /* request i goes to instance i mod n */
    DKV_IROUTE_LEAST_LOADED      /* to the instance with the fewest waiting + running */
} dkv_instance_route;
const char *dkv_instance_route_name(dkv_instance_route r);

/* Optional per-step sink (trace events); the record is borrowed for the call. */
struct dkv_step_record;
typedef void (*dkv_step_fn)(void *user, const struct dkv_step_record *rec);
typedef void (*dkv_engine_progress_fn)(void *user, double done, double total);

typedef struct dkv_engine_config {
    const dkv_model    *model;      /* borrowed, required */
    const dkv_gpu      *gpu;        /* borrowed, required */
    const dkv_workload *workload;   /* borrowed, required; never modified (closed loops are
                                       released on the engine's own copy of the arrivals) */
    dkv_backend        *backend;    /* borrowed, required; begun and ended by the run */
    const struct dkv_ref_weights *weights; /* optional, borrowed: loaded host weights handed to
                                       the backend's begin (dkv_backend_setup.weights); NULL: a
                                       backend with real weights makes its own (seeded random) */

    dkv_decode_cfg decode;          /* cache mode, block_len, steps, logit rows.  rho / shared_set
                                       / rho_fn are taken from `retention` */
    /* scheduler */
    dkv_sched_kind sched;           /* default DKV_SCHED_PHASE */
    uint32_t max_num_seqs;          /* running requests per instance (> 0).  Default 256 */
    uint32_t max_num_batched_tokens;/* token budget per step and instance; 0: from sizing (the
                                       GPU preset, else 8192) */
    bool     first_fit;             /* admissions skip a request that does not fit and try later
                                       ones (default false: strict FCFS, stop at the first) */
    bool     exact_phase;           /* scheduler knows each request's steps (default false) */
    double   step_host_s;           /* host (CPU) time an instance spends per step (scheduling,
                                       Python, launches), seconds.  The instance cannot issue its
                                       next step before it passes; other instances may use the GPU
                                       meanwhile.  Default 0 (a pure GPU roofline); < 0: the
                                       backend's modelled host time of each step
                                       (dkv_step_cost.host_s: a measured profile's host table) */
    double   step_release_s;        /* host time after each step during which its instance still holds
                                       the GPU (waiting for the step's end, the backend's post-step
                                       bookkeeping, the next launch reaching the GPU): no step of any
                                       instance runs; step_host_s follows it.  Default 0 */
    double   handover_s;            /* timeslice instances: the GPU's extra idle time when it passes to
                                       another instance that was waiting for it (waking that instance's
                                       host thread), after the holder's step_release_s: see the
                                       multi-instance rules above.  Default 0; < 0: the backend's
                                       modelled value (dkv_step_cost.handover_s: the profile's host
                                       table, handover_s - resume_s) */

    /* memory */
    dkv_mem_options mem;            /* KV manager: kind and its options.  capacity_bytes 0: the
                                       KV budget from sizing.  block_bytes 0: sizing.block_tokens x
                                       KV bytes per token of all layers (dkv_block_bytes, resolved).
                                       mem.block_tokens is not used by the engine.  device_malloc_s /
                                       device_free_s < 0: the GPU preset's (0 too, at set-up) */
    dkv_sizing_config sizing;       /* margin, kv_frac, block_tokens (THE pool block size in
                                       tokens: the KV manager and the layout policy use it), preset
                                       overrides */
    uint64_t device_capacity_bytes; /* device manager: 0 = HBM - margin - KV capacity (caching:
                                       HBM - margin for everything) */

    /* policies */
    dkv_logit_config     logit;     /* max_num_logits 0: from sizing (the GPU preset) */
    dkv_layout_config    layout;
    dkv_offload_config   offload;
    dkv_lifecycle_config lifecycle; /* deferred: release_delay on the managers (delay_s, and
                                       delay_steps x the mean step time so far) */
    dkv_retention_config retention; /* sparse mode: rho, set, fixed/entropy/callback */
    dkv_routing_config   routing;   /* short-request bypass to the device manager */
    dkv_routing_costs    routing_costs; /* each < 0 (default): derived from the GPU preset (setup_s =
                                       malloc_s, block_s = 1.5 us, pool_step_s = 0, plain_step_s =
                                       malloc_s + free_s); all four 0: the same derivation */

    /* instances */
    uint32_t n_instances;           /* >= 1.  Default 1 */
    dkv_placement_config placement; /* shared / partitioned KV pool, quotas */
    dkv_gpu_share gpu_share;        /* default timeslice */
    dkv_instance_route instance_route; /* default round_robin */
    bool     shared_weights;        /* instances share one weight copy (default false) */

    /* results */
    double   cost_per_hour;         /* $ per GPU-hour; < 0: the preset's (default -1) */
    bool     record_steps;          /* keep per-step records (default true) */
    uint32_t mem_sample_every;      /* memory-by-tag sample every N steps (0: never; default 1) */
    dkv_step_fn on_step;            /* optional per-step sink */
    void    *on_step_user;
    const struct dkv_trace_sink *trace; /* optional: alloc / free / request / phase events
                                       (core/trace/trace.h), borrowed */
    dkv_kernel_fn on_kernel;        /* optional per-kernel records (passed to the backend) */
    void    *on_kernel_user;
    dkv_engine_progress_fn progress;/* optional: called every ~1 % of requests finished */
    void    *progress_user;
    uint64_t seed;                  /* seeds decode draws and retention draws (decode.seed and
                                       retention.seed 0, their default: this seed).  Default 1 */

    /* filled by dkv_engine_config_resolve */
    bool       resolved;
    dkv_sizing sized;               /* dLLM-Serve's sizing of this model on this GPU (sizing.h) */

    /* threaded instances: dkv_engine_run_instances (below) sets these on each instance's own
       engine; leave them zero otherwise */
    struct dkv_mem *kv_pool;        /* borrowed KV manager used instead of creating one (a pool
                                       shared with the other instances' engines, or this one's
                                       partition) */
    uint32_t kv_pool_instance;      /* owner.instance of this engine's acquisitions in kv_pool */
    const struct dkv_engine_hooks *hooks;
} dkv_engine_config;
/* How an instance's engine lives beside the others' (threaded instances).  The engine holds
 * lock() while it touches its state and the shared pool, and drops it around the backend call
 * and every wait.  With clock set, the run's clock is clock() (seconds since the instances'
 * common start): read before and after each backend step instead of adding the step's time, and
 * an idle engine calls wait_until(t) to let real time pass.  pool_wait (optional) is called, with
 * the lock held, when nothing can run because the shared pool is full and other instances hold
 * KV in it (holds_kv: this one holds some too): it waits for another instance's step (dropping
 * the lock) and returns true, or returns false when this instance should preempt its own youngest
 * request (it holds KV, and every instance with work is blocked or idle, or a blocked instance
 * holding nothing asked for room).  An instance holding nothing is never told to fail a request
 * while others hold KV. */
typedef struct dkv_engine_hooks {
    void  *user;
    void  (*lock)(void *user);
    void  (*unlock)(void *user);
    double (*clock)(void *user);
    void  (*wait_until)(void *user, double t);
    bool  (*pool_wait)(void *user, bool holds_kv);
    void  (*begun)(void *user);   /* optional: after the backend's begin, before the first step
                                     (with the lock held; may wait, dropping it) */
    void  (*kv_moved)(void *user, uint64_t bytes, bool up);   /* optional: every change of the bytes
                                     tagged kv, as it happens (threaded instances: the event-exact
                                     peak of all instances' KV together) */
} dkv_engine_hooks;


/* Defaults as documented above (model, gpu, workload, backend left NULL): the only place the
 * engine's defaults are written down (dkv.simulate's Lua table reads them from here too).
 * Fields that come from the GPU preset are left "unset" (0 or < 0, as documented per field). */
void dkv_engine_config_default(dkv_engine_config *c);

/* Derives, once, everything that comes from the model and the GPU preset: runs dLLM-Serve's
 * sizing (dkv_sizing_default, into c->sized) and fills each unset field from it or from the
 * preset: max_num_batched_tokens, logit.max_num_logits, retention.rho (< 0), mem.block_bytes
 * (dkv_block_bytes), mem.device_malloc_s / device_free_s (< 0), routing_costs, cost_per_hour
 * (< 0), decode.seed and retention.seed (0: c->seed), decode's retention settings (rho,
 * shared_set).  Needs c->model and c->gpu.  Idempotent (c->resolved); dkv_engine_run calls it
 * on its copy when the caller has not. */
dkv_status dkv_engine_config_resolve(dkv_engine_config *c, dkv_err *err);

/* The policies of dkv.simulate's `policies` table, registered in ONE table (engine_policy.c):
 * each one's descriptor (policy/policy_desc.h: name, default, validate, Lua keys) and where its
 * config lives in dkv_engine_config.  dkv_engine_config_default sets, and
 * dkv_engine_config_validate checks, every entry's config; core/lua reads `policies.<name>` for
 * every entry (from the descriptor's keys when it has them).  In table order. */
typedef struct dkv_engine_policy {
    const dkv_policy *policy;
    size_t offset;                                  /* of its config in dkv_engine_config */
    bool (*applies)(const dkv_engine_config *c);    /* NULL: always; else validated only when true */
} dkv_engine_policy;
extern const dkv_engine_policy dkv_engine_policies[];
extern const size_t dkv_engine_n_policies;
/* Entry i's config inside c. */
void *dkv_engine_policy_config(dkv_engine_config *c, size_t i);

/* Checks everything that can be checked before a run: required pointers, ranges, the decode
 * config (block_len 0, steps), that the model fits the GPU (sizing), that every request's G is
 * a multiple of block_len, policy configs.  Messages name the field. */
dkv_status dkv_engine_config_validate(const dkv_engine_config *c, dkv_err *err);

/* ---- results -------------------------------------------------------------------------- */

enum {
    DKV_REQ_DONE = 0,
    DKV_REQ_OOM,        /* could not be served: memory, even alone */
    DKV_REQ_TOO_LONG,   /* canvas > model max_len */
    DKV_REQ_UNFINISHED  /* run interrupted first */
};
const char *dkv_req_status_name(int status);   /* "done", "oom", "too_long", "unfinished" */

typedef struct dkv_req_record {
    uint64_t id;
    uint32_t instance;
    uint8_t  status;           /* DKV_REQ_* */
    uint8_t  route;            /* dkv_route: pool or plain */
    uint32_t prompt_tokens, gen_tokens;
    uint32_t steps, refresh_steps, reuse_steps, preempted_steps;
    double   arrival_s, start_s, first_block_s, finish_s;  /* NaN when it never happened */
    double   latency_s;        /* finish - arrival */
    double   queue_s;          /* start - arrival */
    double   tpot_s;           /* (finish - start) / gen_tokens */
    uint64_t kv_peak_bytes;    /* its largest KV held on the device */
} dkv_req_record;

typedef struct dkv_step_record {
    uint64_t index;
    uint32_t instance;         /* UINT32_MAX: a merged (spatial) step of several instances */
    double   start_s, time_s, compute_s, pcie_s, stall_s, alloc_s;
    uint32_t n_items, n_refresh, n_reuse, n_admitted;
    uint32_t n_waiting, n_running;
    uint64_t q_tokens, budget_tokens, logit_rows;
    uint64_t hbm_read_bytes, hbm_write_bytes, pcie_h2d_bytes, pcie_d2h_bytes;
    double   flops;
    double   flops_util, bw_util;
    /* host (CPU) time of the step, measured on the machine that ran it (CLOCK_MONOTONIC):
     * host_plan_s     the engine's own work for the step outside the backend call: scheduling,
     *                 memory, plan building (from the instance's turn to the backend call) and
     *                 the commit after it (decode advance, releases, records);
     * host_enqueue_s  the backend's time issuing the step's work (0 from the simulator);
     * host_wait_s     the backend's time blocked waiting for the step's work (0 from the simulator).
     * time_s of an executed step = host_enqueue_s + host_wait_s + the backend's remaining host work
     * (+ alloc_s); host_plan_s is outside time_s. */
    double   host_plan_s, host_enqueue_s, host_wait_s;
    double   sm_mhz;   /* SM clock of the step (dkv_step_cost's: sampled or simulated; 0: none) */
    double   sm_probe_mhz;   /* the SMs' mean clock over the step from their cycle counters (dkv_step_cost's; 0: none) */
} dkv_step_record;

/* Memory by tag at a moment (allocated bytes of both managers, per tag; host = offloaded). */
typedef struct dkv_mem_record {
    double   time_s;
    uint64_t weights, kv, activation, logits, staging, host;
    uint64_t allocated, reserved;
} dkv_mem_record;

/* What a run's peak_device_bytes holds (dkv_run_summary.device_mem_model). */
enum {
    DKV_DEVMEM_MODEL_COMPLETE = 0,    /* every term: the profile has a memory section */
    DKV_DEVMEM_MODEL_NO_SECTION,      /* partial: the profile has no memory section (fixed terms 0) */
    DKV_DEVMEM_MODEL_NO_PROFILE,      /* partial: no measured profile (fixed terms 0) */
    DKV_DEVMEM_MODEL_NONE             /* not modelled (several instances) */
};
const char *dkv_devmem_model_name(uint64_t m);   /* "complete", "partial: ...", "none: ..." */

typedef struct dkv_run_summary {
    uint64_t n_requests, n_done, n_oom, n_too_long, n_unfinished;
    uint64_t n_steps;             /* engine iterations (backend steps) */
    uint64_t request_steps, refresh_steps, reuse_steps;
    uint64_t n_preempted, preempted_steps;
    uint64_t rho_clamped;         /* retention callback values clamped (retention.clamp = true) */
    uint64_t gen_tokens, prompt_tokens;   /* of finished requests */
    double   sim_time_s;          /* clock at the end (last finish) */
    double   busy_s;              /* sum of step times */
    double   gpu_busy_frac;       /* compute time / sim_time */
    double   roofline_frac;       /* of the kernel time, the fraction the simulator costed by the
                                     roofline rather than a measured profile (1 without one) */
    double   throughput_rps, tokens_per_s;
    double   latency_mean_s, latency_p50_s, latency_p95_s, latency_p99_s;
    double   first_block_p50_s, first_block_p99_s;
    double   queue_mean_s, tpot_mean_s;
    double   mean_batch;          /* items per step */
    double   phase_pred_accuracy; /* predicted == actual phase, fraction of request-steps */
    uint64_t budget_overruns;     /* steps whose actual tokens exceeded the budget (mispredictions) */
    double   hbm_read_bytes, hbm_write_bytes, pcie_h2d_bytes, pcie_d2h_bytes, flops;
    double   alloc_time_s;        /* modelled allocator time (device malloc/free) */
    /* memory */
    uint64_t peak_tag[DKV_MEM_TAG_COUNT]; /* peak allocated bytes by tag (both managers) */
    uint64_t peak_host_bytes;     /* offloaded KV on the host (physical) */
    uint64_t peak_allocated, peak_reserved;
    uint64_t kv_capacity_bytes, device_capacity_bytes;
    double   kv_internal_frag_peak, kv_external_frag_peak, kv_external_frag_at_peak;
    double   kv_internal_frag_mean, kv_external_frag_mean;
    double   dev_internal_frag_peak, dev_external_frag_peak;
    double   block_reuse_rate;
    uint64_t alloc_failures, alloc_failures_frag;
    uint64_t end_allocated_kv, end_allocated_device; /* after the run: 0 and the weights */
    /* device memory as the CUDA backend would hold it (docs/COST_MODEL.md "Device memory"):
     * peak_device_bytes = device_fixed_bytes + weights + device_arena_bytes + device_counted_bytes */
    uint64_t peak_device_bytes;   /* 0 with several instances (not modelled) */
    uint64_t device_counted_bytes;/* the backend's buffers besides weights and arena (core/model/devmem.h), peak */
    uint64_t device_arena_bytes;  /* the KV arena, whole: pool + staging + discard blocks */
    double   device_fixed_bytes;  /* the profile's memory section: context, libraries, modules (0 without) */
    uint64_t device_mem_model;    /* DKV_DEVMEM_MODEL_*: which terms peak_device_bytes holds */
    /* cost */
    double   cost_per_hour, cost_per_mtok;
    double   wall_s;              /* host time the run took */
} dkv_run_summary;

typedef struct dkv_engine_result dkv_engine_result;

/* Runs the workload to completion.  On DKV_OK *out holds the result (caller frees).  On
 * DKV_EINTR (dkv_interrupt_requested() during the run) *out holds the partial result with the
 * unfinished requests marked.  Other errors leave *out NULL. */
dkv_status dkv_engine_run(const dkv_engine_config *c, dkv_engine_result **out, dkv_err *err);

const dkv_run_summary *dkv_engine_result_summary(const dkv_engine_result *r);
const dkv_req_record  *dkv_engine_result_requests(const dkv_engine_result *r, size_t *n);
const dkv_step_record *dkv_engine_result_steps(const dkv_engine_result *r, size_t *n);
const dkv_mem_record  *dkv_engine_result_memory(const dkv_engine_result *r, size_t *n);
void dkv_engine_result_free(dkv_engine_result *r);    /* NULL is a no-op */

/* ---- threaded instances -------------------------------------------------------------------
 * dkv_engine_run_instances runs c->n_instances instances as separate engines, one host thread
 * each, as separate serving processes would run them: instance i gets the requests a simulated
 * run routes to it (round_robin: workload index mod n) and its own backend (backends[i]); the KV
 * memory is one pool with the simulator's quotas and borrowing (placement shared: the same
 * manager, options and quotas as a simulated run, its bookkeeping under a mutex) or one pool per
 * instance of its quota (partitioned).  Each instance's thread begins its backend with its own
 * engine's setup (its share of the workload, which item.request indexes; the pool: the shared
 * one's blocks, or its partition's), in order 0..n-1 (thread i starts once i-1's backend is begun,
 * so a backend may borrow what an earlier one set up); the steps start when every backend is
 * begun; the backends are ended after every thread is done, n-1 first.  Plans carry the global
 * step index (the order the backends took the steps in) and item.instance.  With gpu_lock, one instance's backend step runs at a time (a FIFO ticket: the
 * simulator's timeslice); without it they run concurrently.  With real_clock every instance's
 * clock is the host clock since the common start (a backend that executes); without it each
 * engine's clock advances by its own steps' times (a simulated backend: for tests).  The result
 * merges the instances: requests in workload order with their instance, steps of all instances
 * by start time, memory summed over instances, peak KV / fragmentation / reuse of the pool(s) as
 * a simulated run computes them.  Refused: one instance, least_loaded routing, closed-loop
 * workloads, mem.kind other than blockpool, deferred lifecycle releases, offload, trace sinks. */
typedef struct dkv_instances_options {
    dkv_backend *const *backends;   /* n_instances backends, borrowed; begun and ended here */
    bool gpu_lock;
    bool real_clock;
} dkv_instances_options;
dkv_status dkv_engine_run_instances(const dkv_engine_config *c, const dkv_instances_options *o,
                                    dkv_engine_result **out, dkv_err *err);

/* Percentile (0..100, linear interpolation) of v[0..n); sorts v in place.  NaN when n == 0. */
double dkv_percentile(double *v, size_t n, double pct);

#endif
