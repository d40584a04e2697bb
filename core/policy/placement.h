/* placement.h - several engine instances on one GPU: quotas over one KV pool.
 *
 * DKV_PLACE_PARTITIONED: the pool is cut into fixed parts; instance i gets
 *     floor(share_i * pool / block) blocks, guaranteed and maximum alike.
 * DKV_PLACE_SHARED: one pool; instance i is guaranteed floor(guaranteed_frac * share_i *
 *     pool / block) blocks and may burst up to the pool minus what the others are guaranteed:
 *     max_i = total_blocks - sum_{j != i} guaranteed_j, further capped by burst_frac * pool.
 * share_i = weight_i / sum(weights) (equal shares when weights is NULL).  guaranteed_frac = 1
 * makes a shared pool behave like a partitioned one; 0 is a free-for-all.
 *
 * Pure computation.  Units: bytes, blocks.
 */
#ifndef DKV_POLICY_PLACEMENT_H
#define DKV_POLICY_PLACEMENT_H

#include <stdint.h>

#include "util/names.h"
#include "util/status.h"

typedef enum dkv_placement {
    DKV_PLACE_SHARED = 0,
    DKV_PLACE_PARTITIONED
} dkv_placement;

extern const dkv_names dkv_placement_names;        /* "shared", "partitioned" (util/names.h) */
const char *dkv_placement_name(dkv_placement p);

#define DKV_PLACEMENT_MAX_INSTANCES 64

typedef struct dkv_placement_config {
    dkv_placement mode;        /* default DKV_PLACE_SHARED */
    uint32_t n_instances;      /* 1..DKV_PLACEMENT_MAX_INSTANCES.  Default 1 */
    double   guaranteed_frac;  /* shared: part of the fair share that is guaranteed, [0, 1].  Default 0.5 */
    double   burst_frac;       /* shared: most of the pool one instance may hold, (0, 1].  Default 1 */
    const double *weights;     /* borrowed; n_instances weights > 0, or NULL for equal shares */
} dkv_placement_config;

void       dkv_placement_config_default(dkv_placement_config *c);
dkv_status dkv_placement_config_validate(const dkv_placement_config *c, dkv_err *err);

typedef struct dkv_quota {
    uint64_t guaranteed_blocks;
    uint64_t max_blocks;
    uint64_t guaranteed_bytes;  /* guaranteed_blocks * block_bytes */
    uint64_t max_bytes;
} dkv_quota;

/* Fills out[0..n_instances) for a pool of pool_bytes cut into blocks of block_bytes. */
dkv_status dkv_placement_quotas(const dkv_placement_config *c, uint64_t pool_bytes, uint64_t block_bytes,
                                dkv_quota *out, dkv_err *err);

#endif
