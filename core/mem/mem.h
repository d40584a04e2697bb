/* mem.h - memory managers (allocator models) behind one interface, with exact statistics.
 *
 * Pure computation: no I/O, no Lua, no HDF5, no CUDA.  The "device" is a capacity in bytes;
 * a manager takes memory from it (reserved) and hands pieces out to callers (allocated).
 * Three kinds share this header (docs/MEMORY.md describes each one's model):
 *
 *   DKV_MEM_STATIC     per-request reservation of the maximum length taken at admission
 *                      (dkv_mem_reserve / dkv_mem_unreserve); KV acquisitions of that request
 *                      are served from it; every other acquisition goes to the device.
 *   DKV_MEM_CACHING    a model of PyTorch's CUDA caching allocator (512 B rounding, small and
 *                      large pools, best fit with splitting, max_split_size, cached free blocks
 *                      merged with neighbours, flush-and-retry on failure).
 *   DKV_MEM_BLOCKPOOL  fixed-size blocks on a LIFO free stack, grown and shrunk by chunks,
 *                      optionally shared by several instances with guaranteed quotas.
 *
 * Definitions (DESIGN.md): requested = bytes callers asked for; allocated = bytes handed out
 * (after rounding / whole blocks); reserved = bytes held from the device.
 * internal fragmentation = (allocated - requested) / allocated;
 * external fragmentation = (reserved - allocated) / reserved.
 *
 * Lifecycle of an allocation: acquire -> refcount 1; retain -> +1; release -> -1; at 0 the
 * memory is freed at once (release_delay_s == 0) or when the manager's clock (dkv_mem_tick)
 * passes release time + delay.  Until then it still counts as allocated ("pending").
 *
 *     dkv_mem_options o = dkv_mem_options_default(DKV_MEM_BLOCKPOOL);
 *     o.capacity_bytes = 80ull << 30;
 *     dkv_mem *m = NULL;
 *     if (dkv_mem_new(&o, &m, &err) != DKV_OK) ...;
 *     dkv_mem_owner who = { .tag = DKV_MEM_TAG_KV, .request = 7 };
 *     dkv_mem_id id;
 *     dkv_mem_acquire(m, 3 << 20, &who, &id, &err);
 *     dkv_mem_release(m, id, &err);
 *     dkv_mem_free(m);
 *
 * Bad input (double release, unknown id, refcount underflow, zero size, capacity exhausted)
 * returns a status with a message and is counted in dkv_mem_stats.bad_*; state is unchanged.
 * A handle is single-threaded.
 */
#ifndef DKV_MEM_MEM_H
#define DKV_MEM_MEM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util/names.h"
#include "util/status.h"

typedef struct dkv_mem dkv_mem;

typedef enum dkv_mem_kind {
    DKV_MEM_STATIC = 0,
    DKV_MEM_CACHING,
    DKV_MEM_BLOCKPOOL        /* more managers: mem.c's table; dkv_mem_kind_names.n counts them */
} dkv_mem_kind;

/* What an allocation holds.  The numbering is shared with the trace schema (core/trace). */
typedef enum dkv_mem_tag {
    DKV_MEM_TAG_WEIGHTS = 0,
    DKV_MEM_TAG_KV,
    DKV_MEM_TAG_ACTIVATION,
    DKV_MEM_TAG_LOGITS,
    DKV_MEM_TAG_STAGING,     /* offload staging buffers */
    DKV_MEM_TAG_COUNT
} dkv_mem_tag;

/* THE block size rule, used by the engine (dkv_engine_config_resolve), the block pool and the
 * sizing policy: block_bytes when given (> 0), else block_tokens x token_bytes. */
uint64_t dkv_block_bytes(uint64_t block_bytes, uint32_t block_tokens, uint64_t token_bytes);

extern const dkv_names dkv_mem_kind_names;              /* "static", "caching", "blockpool" (names.h) */
extern const dkv_names dkv_mem_tag_names;               /* "weights", "kv", ... */
extern const dkv_names dkv_mem_share_names;             /* "shared", "partitioned" (dkv_mem_share) */
const char *dkv_mem_kind_name(dkv_mem_kind k);
const char *dkv_mem_tag_name(dkv_mem_tag t);

/* Who an allocation belongs to.  Only tag and instance change behaviour (per-tag totals,
 * instance quotas); static also uses request (a KV acquisition is served by that request's
 * reservation). */
typedef struct dkv_mem_owner {
    uint8_t  tag;        /* dkv_mem_tag */
    uint16_t instance;   /* < options.n_instances (0 when there is one) */
    uint32_t request;
    uint32_t layer;
    uint32_t step;
} dkv_mem_owner;

/* An allocation id.  0 is never a valid id.  Ids of freed allocations are detected as stale
 * (double release) rather than aliasing a later allocation. */
typedef uint64_t dkv_mem_id;

#define DKV_MEM_MAX_INSTANCES 64

typedef enum dkv_mem_share {
    DKV_MEM_SHARED = 0,      /* one pool; each instance is guaranteed its quota, may borrow
                                the rest, never another instance's unused guarantee */
    DKV_MEM_PARTITIONED      /* each instance owns exactly its quota, set up at creation */
} dkv_mem_share;

typedef struct dkv_mem_options {
    dkv_mem_kind kind;
    uint64_t capacity_bytes;     /* what the device has for this manager (> 0) */
    double   release_delay_s;    /* 0: free at refcount zero; > 0: free delay_s later */
    uint32_t sample_stride;      /* time series: one sample every N events; 0 = off */
    /* device cost model (priced by the caller; ANCHORS.md: cudaMalloc ~35 us, cudaFree ~40 us) */
    double   device_malloc_s;    /* per device allocation (segment / chunk / reservation) */
    double   device_free_s;      /* per device free */
    double   device_bytes_per_s; /* set-up initialisation bandwidth (0: not modelled) */

    /* caching */
    uint64_t max_split_size;     /* blocks >= this are not split; UINT64_MAX: unlimited */

    /* blockpool */
    uint32_t block_tokens;       /* tokens per block (default 256) */
    uint64_t token_bytes;        /* bytes per token per block (default 16384: LLaDA-8B, one
                                    layer, K+V, bf16); block_bytes = block_tokens*token_bytes */
    uint64_t block_bytes;        /* explicit block size; overrides tokens*token_bytes when > 0 */
    uint32_t chunk_blocks;       /* blocks per growth chunk (default 64) */
    uint64_t initial_bytes;      /* set up at creation (rounded up to whole chunks) */
    bool     grow;               /* grow by chunks on demand up to capacity (default true) */
    bool     shrink;             /* release wholly free chunks automatically (default false;
                                    dkv_mem_shrink does it on request either way) */
    uint32_t n_instances;        /* 0 or 1: no quotas */
    dkv_mem_share share;
    uint64_t quota_bytes[DKV_MEM_MAX_INSTANCES]; /* guaranteed share of each instance */
    uint64_t cap_bytes[DKV_MEM_MAX_INSTANCES];   /* shared blockpool: most one instance may hold (0: no cap
                                                    beyond what the others' guarantees leave; placement's
                                                    burst_frac) */
} dkv_mem_options;

/* Defaults for a kind: capacity 80 GiB, no delay, no sampling, max_split_size unlimited,
 * 256-token blocks of 16 KiB per token, 64-block chunks, grow on, one instance. */
dkv_mem_options dkv_mem_options_default(dkv_mem_kind kind);

/* Creates a manager.  *out is owned by the caller (dkv_mem_free).  DKV_EINVAL names the bad
 * option.  Blockpool initial_bytes / partitioned quotas are set up here (setup cost). */
dkv_status dkv_mem_new(const dkv_mem_options *opt, dkv_mem **out, dkv_err *err);
void       dkv_mem_free(dkv_mem *m);                    /* NULL is a no-op */
const dkv_mem_options *dkv_mem_get_options(const dkv_mem *m);

/* ---- allocations ------------------------------------------------------------------------ */

/* Takes `bytes` (> 0) for `owner` (NULL: tag kv, everything 0).  On success *id is set and
 * the refcount is 1.  DKV_ENOMEM when it does not fit (counted as a failure; for caching after
 * one flush-and-retry); DKV_EINVAL for zero size, a bad tag or instance.  Never changes state
 * on failure. */
dkv_status dkv_mem_acquire(dkv_mem *m, uint64_t bytes, const dkv_mem_owner *owner,
                           dkv_mem_id *id, dkv_err *err);
/* refcount += 1.  DKV_ENOENT unknown id, DKV_ESTATE released id. */
dkv_status dkv_mem_retain(dkv_mem *m, dkv_mem_id id, dkv_err *err);
/* refcount -= 1; frees at 0 (now, or deferred).  DKV_ESTATE on double release / underflow. */
dkv_status dkv_mem_release(dkv_mem *m, dkv_mem_id id, dkv_err *err);
/* Advances the manager's clock to now_s (seconds, caller's clock; must not go backwards:
 * DKV_EINVAL) and frees every deferred release whose time has come. */
dkv_status dkv_mem_tick(dkv_mem *m, double now_s, dkv_err *err);
/* Frees every pending deferred release now, whatever the clock says. */
void       dkv_mem_flush_deferred(dkv_mem *m);
double     dkv_mem_now(const dkv_mem *m);

/* What an allocation is.  offset: byte address in the manager's (virtual) address space;
 * for blockpool the offset of its first block. */
typedef struct dkv_mem_info {
    uint64_t requested_bytes, allocated_bytes, offset;
    uint32_t refcount;       /* 0 while a deferred release is pending */
    bool     pending;
    uint32_t n_blocks;       /* blockpool: blocks held; others 0 */
    dkv_mem_owner owner;
} dkv_mem_info;
dkv_status dkv_mem_info_get(const dkv_mem *m, dkv_mem_id id, dkv_mem_info *out, dkv_err *err);

/* ---- static ----------------------------------------------------------------------------- */

/* Reserves `bytes` for `request` (its maximum length), taken from the device at admission.
 * DKV_ESTATE if the request already has one; DKV_ENOMEM when it does not fit.  Only static. */
dkv_status dkv_mem_reserve(dkv_mem *m, uint32_t request, uint64_t bytes, dkv_err *err);
/* Bytes reserved for `request` (after 512 B rounding); 0 when it holds none or m is not static. */
uint64_t   dkv_mem_reservation(const dkv_mem *m, uint32_t request);
/* Returns the reservation to the device.  DKV_ESTATE while allocations in it are live. */
dkv_status dkv_mem_unreserve(dkv_mem *m, uint32_t request, dkv_err *err);

/* ---- blockpool -------------------------------------------------------------------------- */

uint64_t dkv_mem_block_bytes(const dkv_mem *m);        /* 0 unless blockpool */
uint32_t dkv_mem_chunk_blocks(const dkv_mem *m);
/* Copies up to `cap` block ids of an allocation, in order, into ids; *n = number it holds. */
dkv_status dkv_mem_blocks(const dkv_mem *m, dkv_mem_id id, uint32_t *ids, uint32_t cap,
                          uint32_t *n, dkv_err *err);
/* Where block `block` lives: chunk index and byte offset inside that chunk
 * (= (block % chunk_blocks) * block_bytes).  Globally, block * block_bytes is its offset in a
 * virtual arena of all chunk slots laid end to end. */
void dkv_mem_block_locate(const dkv_mem *m, uint32_t block, uint32_t *chunk,
                          uint64_t *offset_in_chunk);
/* Grows to at least `bytes` reserved (whole chunks).  DKV_ENOMEM above capacity. */
dkv_status dkv_mem_grow(dkv_mem *m, uint64_t bytes, dkv_err *err);
/* Releases wholly free chunks until reserved <= target_bytes (or no free chunk is left);
 * live blocks keep their ids.  *released = bytes given back (may be NULL). */
dkv_status dkv_mem_shrink(dkv_mem *m, uint64_t target_bytes, uint64_t *released, dkv_err *err);
/* Slots (chunk indices) currently backed; a chunk slot in [0, n) may be a hole after shrink. */
uint32_t dkv_mem_chunk_count(const dkv_mem *m);
bool     dkv_mem_chunk_live(const dkv_mem *m, uint32_t chunk);

/* ---- statistics ------------------------------------------------------------------------- */

typedef struct dkv_mem_tag_stats {
    uint64_t requested, allocated, peak_allocated, n_acquire;
} dkv_mem_tag_stats;

typedef struct dkv_mem_stats {
    uint64_t requested, allocated, reserved;          /* now, bytes */
    uint64_t peak_requested, peak_allocated, peak_reserved;
    uint64_t pending_bytes;       /* allocated bytes whose release is deferred */
    uint64_t live;                /* live allocations (incl. pending) */
    double   internal_frag;       /* (allocated - requested) / allocated; 0 when empty */
    double   external_frag;       /* (reserved - allocated) / reserved;   0 when empty */
    double   peak_internal_frag, peak_external_frag;     /* max over events */
    double   mean_internal_frag;  /* 1 - sum(requested)/sum(allocated) over events */
    double   mean_external_frag;  /* 1 - sum(allocated)/sum(reserved)  over events */
    double   external_frag_at_peak; /* at the event of peak reserved */
    double   internal_frag_at_peak; /* at the event of peak reserved */
    uint64_t largest_free;        /* largest request servable from reserved memory now */
    uint64_t n_acquire, n_release, n_retain, n_events;
    uint64_t n_failed;            /* acquisitions that failed */
    uint64_t n_failed_frag;       /* ... although reserved - allocated >= the request */
    uint64_t reuse_hits, reuse_total; /* block acquisitions served by memory used before */
    double   reuse_rate;          /* reuse_hits / reuse_total */
    /* bad input, by case */
    uint64_t bad_double_release, bad_unknown_id, bad_underflow, bad_size, bad_other;
    /* device traffic (segments, chunks, reservations) and its modelled time */
    uint64_t device_allocs, device_frees, device_alloc_bytes;
    double   device_time_s;
    uint64_t setup_bytes;         /* taken at creation */
    double   setup_time_s;        /* modelled time of that set-up */
    /* caching: PyTorch's own counters */
    uint64_t inactive_split_bytes, inactive_split_blocks, num_alloc_retries, num_ooms;
    uint64_t segments;            /* device segments / chunks / reservations held now */
    /* blockpool */
    uint64_t blocks_total, blocks_free;
    uint64_t instance_used[DKV_MEM_MAX_INSTANCES];   /* bytes, blockpool with instances */
    dkv_mem_tag_stats tag[DKV_MEM_TAG_COUNT];
} dkv_mem_stats;

/* Fills *out (derived fields computed now; largest_free may walk the free structure). */
void dkv_mem_stats_get(const dkv_mem *m, dkv_mem_stats *out);

/* Recounts everything from the raw structures and checks the invariants: no two live
 * allocations overlap; requested <= allocated <= reserved; free + allocated = reserved;
 * refcounts >= 0; counters equal the recount.  DKV_ESTATE with the first difference.
 * O(live + free); for tests. */
dkv_status dkv_mem_check(const dkv_mem *m, dkv_err *err);

/* ---- time series ------------------------------------------------------------------------ */

typedef struct dkv_mem_sample {
    double   time_s;
    uint64_t event;              /* index of the event (acquire/release/...) it follows */
    uint64_t requested, allocated, reserved;
} dkv_mem_sample;

/* The samples taken so far (borrowed; valid until the next call on m). */
const dkv_mem_sample *dkv_mem_series(const dkv_mem *m, size_t *n);

#endif
