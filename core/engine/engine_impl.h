/* engine_impl.h - internals of the engine (engine.c, engine_mem.c, engine_sched.c,
 * engine_step.c, engine_metrics.c).  Not a public header. */
#ifndef DKV_ENGINE_IMPL_H
#define DKV_ENGINE_IMPL_H

#include "model/devmem.h"
#include "engine/engine.h"
#include "engine/engine_trace.h"

#define ENG_MAX_INST DKV_MEM_MAX_INSTANCES

enum { RS_PENDING = 0, RS_WAITING, RS_RUNNING, RS_DONE, RS_FAILED };

/* One request inside the engine. */
typedef struct ereq {
    dkv_decode_state dec;        /* next step to run */
    dkv_decode_state dec_block;  /* at the start of the current block (restart after preemption) */
    const dkv_request *src;      /* borrowed from the workload */
    double   arrival;            /* engine's copy (closed loop releases write here) */
    uint32_t inst;
    uint8_t  state;              /* RS_* */
    uint8_t  status;             /* DKV_REQ_* once terminal */
    uint8_t  route;              /* dkv_route */
    bool     reserved;           /* static: holds a max_len reservation */
    bool     started;
    uint64_t admit_seq;          /* admission order (preemption picks the largest) */
    /* KV held on the device: one allocation per pool block (blockpool) or one tensor (others) */
    dkv_mem  *kvm;               /* the manager serving its KV */
    dkv_mem_id *kv_ids;
    uint64_t *kv_alloc;          /* allocated bytes of each id */
    uint32_t *kv_blk;            /* the pool block of each id (a blockpool's one-block allocation; fixed while
                                    it lives, so looked up once, at kv_push), UINT32_MAX: none */
    uint32_t n_kv, cap_kv;
    uint64_t kv_req_bytes, kv_alloc_bytes, kv_peak;
    /* policies */
    dkv_offload_state off;
    uint64_t host_phys;          /* physical host bytes (offloaded raw + low-rank) */
    double   sparse_run_bytes;   /* retained-set run length of the current block (sparse) */
    double   ent;                /* measured attention entropy (retention.measured) of block ent_block */
    uint32_t ent_block;          /* UINT32_MAX: none measured yet */
    /* counters */
    uint32_t steps_done, refresh, reuse, preempted_steps;
    double   start, first_block, finish;
} ereq;

/* A request-step picked for this iteration. */
typedef struct cand {
    uint32_t r;                  /* request index */
    uint32_t inst;
    dkv_decode_state next;       /* state after the step */
    dkv_decode_step s;
    uint8_t  pred_phase;
    uint32_t budget;
    bool     admit;              /* this step admits the request */
    bool     dropped;
    dkv_offload_state off_next;  /* offload state after the step */
    dkv_offload_orders orders;
    uint64_t kv_during, kv_after;/* device KV bytes during / after the step */
} cand;

typedef struct einst {
    uint32_t id;
    uint32_t *wq;                /* waiting FIFO: request indices */
    size_t   wq_head, wq_len, wq_cap;
    uint32_t *run;               /* running, admission order */
    uint32_t n_run, cap_run;
    dkv_mem *kvm;
    bool     batch_open;         /* static batching: the current batch still runs */
    uint32_t n_queued;           /* waiting + running, for least-loaded routing */
} einst;

/* A release held back by the deferred lifecycle rule. */
enum { PEND_RELEASE = 0, PEND_UNRESERVE };
typedef struct pend_rel {
    dkv_mem *m;
    dkv_mem_id id;               /* PEND_RELEASE */
    uint32_t request;            /* PEND_UNRESERVE */
    uint8_t  kind, tag;
    uint64_t bytes;
    uint64_t step;
    double   t;
} pend_rel;

typedef struct arr_heap {
    double   *t;
    uint32_t *r;
    size_t    n, cap;
} arr_heap;

struct dkv_engine_result {
    dkv_run_summary sum;
    dkv_req_record *req;
    size_t n_req;
    dkv_step_record *steps;
    size_t n_steps, cap_steps;
    dkv_mem_record *mem;
    size_t n_mem, cap_mem;
};

struct eng;
struct ereq;
struct einst;
/* A scheduler (engine_sched.c's table): which request-steps an instance runs this iteration. */
typedef struct eng_sched_i {
    const char *name;           /* first: the table is dkv_sched_names too */
    size_t (*select)(struct eng *e, struct einst *in, const struct eng_sched_i *self);
    uint32_t (*budget)(const struct eng *e, const struct ereq *r, uint8_t pred_phase); /* tokens a step costs */
    bool enforce_budget;        /* stop at max_num_batched_tokens */
    bool whole_batch;           /* admit only when the instance is idle (static batching) */
} eng_sched_i;

typedef struct eng {
    dkv_engine_config c;         /* resolved copy */
    const dkv_model *m;
    const dkv_gpu *g;
    dkv_sizing sizing;
    uint64_t kvbpt;              /* KV bytes per token, all layers */
    uint32_t budget_tokens;      /* max_num_batched_tokens resolved */
    dkv_retention ret;

    ereq *rq;
    size_t n;
    einst in[ENG_MAX_INST];
    uint32_t ni;
    dkv_mem *kvm[ENG_MAX_INST];  /* KV managers (1 shared or ni partitioned) */
    uint32_t n_kvm;
    dkv_mem *dev;                /* device manager (== kvm[0] when dev_is_kv) */
    bool dev_is_kv;
    uint64_t kv_capacity, dev_capacity;
    uint64_t block_bytes;        /* KV pool block size (dkv_block_bytes, resolved once) */
    uint64_t part_bytes[ENG_MAX_INST]; /* partitioned placement: each instance's pool capacity */
    dkv_mem_id weight_ids[ENG_MAX_INST];
    uint32_t n_weight_ids;

    arr_heap arr;
    double now;
    uint64_t step_index;
    uint64_t admit_seq;
    uint32_t rr;                 /* timeslice round-robin cursor */
    double ready[ENG_MAX_INST];  /* when each instance's host side can issue its next step */
    uint32_t rr_route;           /* arrival round-robin cursor */

    /* this iteration */
    cand *cands;
    size_t n_cands, cap_cands;
    dkv_step_item *items;
    dkv_xfer *xfers;
    size_t cap_items, cap_xfers;
    uint32_t *kvblk;             /* block ids of the items' KV (blockpool), plan.items[i].kv_blocks */
    size_t cap_kvblk;
    dkv_mem_id trans_id[3 * ENG_MAX_INST];   /* transients (activations, logits, staging) */
    uint64_t trans_alloc[3 * ENG_MAX_INST];
    uint8_t  trans_tag[3 * ENG_MAX_INST];
    uint32_t n_trans;
    int32_t blocked_req;         /* first request blocked by memory this round, -1 none */
    bool blocked_act;            /* ... by activations (device manager) rather than KV */
    double alloc_s_step;         /* routing / allocator time of the step */
    double plan_t0;              /* host clock when this step's planning began (eng_wall_now) */

    /* deferred releases (FIFO: one rule, so due in order) */
    pend_rel *pend;
    size_t pend_head, pend_len, pend_cap;

    /* accounting */
    uint64_t tag_now[DKV_MEM_TAG_COUNT], tag_peak[DKV_MEM_TAG_COUNT];
    uint64_t host_now, host_peak;
    uint64_t alloc_now, alloc_peak;
    double dev_time_prev;        /* managers' modelled device time seen so far */
    uint64_t res_step_max;       /* highest reserved (all managers together) at a step's peak point */
    dkv_routing_costs rcost;     /* resolved routing costs */
    uint64_t n_terminal;
    uint64_t pred_total, pred_ok, overruns;
    uint64_t n_preempted, preempted_steps;
    double busy_s, compute_s, alloc_s;
    double roofline_s;     /* of compute_s, the backend's seconds from the roofline (simulator) */
    double host_model_s;   /* the last step's modelled host time (used when step_host_s < 0) */
    double handover_model_s;   /* the last step's modelled hand-over time (used when handover_s < 0) */
    uint32_t last_inst;    /* instance of the last step (timeslice hand-over); UINT32_MAX: none yet */
    double gpu_free;       /* when the last step's holder releases the GPU (its end + step_release_s) */
    double hbm_rd, hbm_wr, pcie_h2d, pcie_d2h, flops;
    uint64_t items_total;
    dkv_engine_result *res;
    bool trace_failed;
    dkv_err trace_err;
    /* device memory as a CUDA backend would hold it (engine_devmem.c) */
    dkv_devmem dm;
    uint32_t dm_block_tokens;
    uint64_t dm_block_bytes, dm_arena;
    dkv_devmem_lr_form *dm_form; /* per request: the low-rank form its host slot holds (model/devmem.h) */
    bool dm_compressor;
} eng;

/* engine_devmem.c */
void eng_devmem_begin(eng *e, const dkv_backend_setup *bs);
void eng_devmem_step(eng *e, const dkv_step_plan *p);
void eng_devmem_summary(const eng *e, dkv_run_summary *s);

/* Records the first failure of a trace sink (the run stops after the step). */
#define ENG_TRACE(e, call) \
    do { \
        if ((e)->c.trace && !(e)->trace_failed && (call) != DKV_OK) \
            (e)->trace_failed = true; \
    } while (0)

/* A trace id unique over the managers: the manager's index in the top byte. */
uint64_t eng_trace_id(const eng *e, const dkv_mem *m, dkv_mem_id id);

/* The host's monotonic clock, seconds (host time of the steps). */
double eng_wall_now(void);
/* Threaded instances with a real clock: now = max(now, hooks->clock()); otherwise nothing. */
void eng_clock_sync(eng *e);
/* One engine run; end_backend false: the caller ends the backend (threaded instances: after every
 * instance is done, since one backend may use another's weights).  dkv_engine_run is
 * eng_run_one(c, true, ...). */
dkv_status eng_run_one(const dkv_engine_config *c, bool end_backend, dkv_engine_result **out, dkv_err *err);

/* engine_mem.c */
/* KV and device capacities of a run of ni instances (the sizing rule). */
dkv_status eng_capacities(const dkv_engine_config *c, uint32_t ni, uint64_t *kv_cap, uint64_t *dev_cap, dkv_err *err);
/* The KV managers of a run of ni instances: one (quotas when ni > 1) or ni partitions. */
dkv_status eng_kv_create(const dkv_engine_config *c, uint32_t ni, uint64_t kv_capacity, dkv_mem **kvm,
                         uint32_t *n_kvm, uint64_t *part_bytes, dkv_err *err);
dkv_status eng_mem_setup(eng *e, dkv_err *err);
/* What the backend is told before the first step: the decisions eng_setup and eng_mem_setup made. */
void       eng_backend_setup(const eng *e, dkv_backend_setup *bs);
/* retention.measured: setup.on_entropy's sink (user = the eng); keeps the request's last value */
void       eng_on_entropy(void *user, uint32_t request, uint32_t block, double entropy);
void       eng_mem_teardown(eng *e);
dkv_status eng_acquire(eng *e, dkv_mem *m, uint64_t bytes, uint8_t tag, uint32_t inst, uint32_t request,
                       dkv_mem_id *id, uint64_t *allocated, dkv_err *err);
void       eng_release(eng *e, dkv_mem *m, dkv_mem_id id, uint8_t tag, uint64_t allocated);
dkv_status eng_kv_resize(eng *e, ereq *r, uint64_t need, bool may_shrink, dkv_err *err);
void       eng_kv_release_all(eng *e, ereq *r);
/* Whether r's KV is one pool block per allocation (a blockpool that is not the device manager): its ids then have
 * block ids (ereq.kv_blk) that the step plans carry. */
bool       eng_kv_per_block(const eng *e, const ereq *r);
void       eng_unreserve(eng *e, ereq *r);
bool       eng_pending_process(eng *e, bool flush);
double     eng_device_time(eng *e, uint64_t *reserved);
void       eng_host_update(eng *e, ereq *r, uint64_t phys);

/* engine_sched.c */
size_t eng_select(eng *e, einst *in);
uint8_t eng_predict_phase(const eng *e, const ereq *r);

/* engine_step.c */
dkv_status eng_build_memory(eng *e, size_t from, size_t *kept, dkv_err *err);
dkv_status eng_run_round(eng *e, size_t from, uint32_t inst_or_merged, uint32_t n_instances_in_round,
                         dkv_err *err);
void       eng_finish_request(eng *e, ereq *r, uint8_t status, double t);

/* engine_metrics.c */
dkv_status eng_result_new(eng *e, dkv_err *err);
dkv_status eng_push_step(eng *e, const dkv_step_record *s);
/* Appends a memory sample at time_s with the current per-tag levels. */
dkv_status eng_push_mem(eng *e, double time_s, uint64_t reserved);
void       eng_summarize(eng *e, double wall_s);
void       eng_summary_latency(dkv_run_summary *s, double *lat, size_t n_lat, double *fb, size_t n_fb,
                                double q_sum, double tpot_sum);

#endif
