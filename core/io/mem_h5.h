/* mem_h5.h - the HDF5 layout of a memory manager's results (docs/HDF5_SCHEMA.md, section
 * "Memory managers"), written by `dkv replay` and by dkv.mem's m:write(run_name) alike.
 *
 * Into an open run it writes
 *   params   attrs  mem.kind, mem.capacity_bytes, mem.release_delay_s, mem.sample_stride,
 *                   mem.max_split_size (caching), mem.block_bytes, mem.chunk_blocks,
 *                   mem.n_instances, mem.share (blockpool)
 *   summary  attrs  every dkv_mem_stats field (requested, allocated, reserved, their peaks,
 *                   internal_frag, external_frag, ..., reuse_rate, num_alloc_retries, ...),
 *                   each with its unit in "units.<key>"
 *   mem_series      table (time_s, event, requested, allocated, reserved): the time series
 *   mem_tags        table (tag, requested, allocated, peak_allocated, n_acquire): per tag
 */
#ifndef DKV_IO_MEM_H5_H
#define DKV_IO_MEM_H5_H

#include "io/h5.h"
#include "mem/mem.h"

dkv_status dkv_mem_h5_write(dkv_h5_run *run, const dkv_mem *m, dkv_err *err);

#endif
