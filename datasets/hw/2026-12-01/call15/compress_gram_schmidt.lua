-- A GPU profile written by `dkv profile` (docs/PROFILE_FORMAT.md, docs/GPU.md "dkv profile").
-- Seconds per call are event-timed medians over `repeats` calls on seeded random data (provenance.l2:
-- "flushed": the L2 flushed before each call, outside its events).
return {
  format = 1,
  name = "h200-20261201",
  complete = true,
  provenance = {
    gpu = "NVIDIA H200", sm = "9.0", driver = "13.0", cuda_runtime = "13.0",
    l2_bytes = 62914560, memory_bytes = 150109880320,
    l2 = "flushed", l2_flush_bytes = 134217728,   -- a read of this many bytes before every timed call (outside its events); warm_s: the same calls without it; stream_s: the same calls back to back between one pair of events
    dkv_version = "0.1.0", dkv_commit = "208519c43efb", date = "2026-12-01T17:56:40Z",
    command = "dkv profile --grid compress --repeats 3 --deadline 75 -o /root/out/f/compress.lua",
    repeats = 3, warmup = 2, statistic = "median", measured = true, grid = "default",
    models = {"llada-8b"},
    estimate_s = 2.1, wall_s = 80.7, skipped = 0,
  },
  kernels = {
    compress = {
      note = "dkv_cuda_lowrank_compress (randomized range finder, 1 power iteration) then the two fp32 -> bf16 stagings (the backend's compress() less its gather): rows = the rows of all the matrices (tokens x layers x 2 x kv_heads: batch matrices of rows / batch tokens each), cols = head_dim; extra batch; launches: the backend's count less the gather",
      fields = {"rows", "cols", "rank"},
      extra = {"p10_s", "p90_s", "first_s", "warm_s", "stream_s", "batch"},
      rows = {
        {524288, 128, 38, 0.0258711, 15, 0.0257877, 0.0259501, 0.120724, 0.0258597, 0.0258358, 2048},
        {524288, 128, 64, 0.124945, 15, 0.124889, 0.125035, 5.5673e-05, 0.12495, 0.124842, 2048},
        {2097152, 128, 38, 0.170468, 15, 0.168164, 0.170781, -0.000249997, 0.170847, 0.169854, 2048},
        {2097152, 128, 64, 0.915677, 15, 0.914623, 0.915758, -0.00229922, 0.913839, 0.917074, 2048},
        {4194304, 128, 38, 0.90374, 15, 0.903339, 0.904182, -0.00128061, 0.902179, 0.904587, 2048},
        {4194304, 128, 64, 3.21245, 15, 3.21135, 3.21453, -0.00399494, 3.2202, 3.20911, 2048},
      },
    },
  },
  -- pinned copies on the backend's copy stream (dkv_cuda_fetch h2d, dkv_cuda_offload d2h), each between two
  -- events: alone, and while the compute stream runs a loop of the first model's gate|up GEMM (512 rows)
  copy = {
    fields = {"dir", "bytes"},
    alone = {},
    contended = {},
  },
  -- extra seconds of a shape's first call over a warm call (host clock, synchronised): the median over
  -- the group's shapes; _max_s the largest (the very first call of the process carries context set-up)
  first_use = {, other_s = -0.000765305, other_max_s = 0.120724, other_shapes = 6},
  -- host enqueue seconds per launch (host clock, the stream held by a spin kernel): an elementwise kernel
  -- (per_launch_s) and a cuBLASLt GEMM with its plan cached (per_gemm_launch_s).  base_s and per_item_s
  -- (engine planning per step and per item) are not measured here: the backend's per-step host records
  -- (dkv.execute) give them.  resume_s / handover_s: the GPU's idle time between two steps of one host
  -- thread / of two threads passing the GPU over as a timeslice ticket does (event-timed, medians)
  host = {},
  -- device memory besides dkv's own allocations (cudaMemGetInfo at the profile's start, before any other
  -- allocation): the context (total - free after cudaFree(0); on an otherwise idle GPU), the cuBLAS and
  -- cuBLASLt handles of dkv_cuda_ctx_new less its counted 32 MiB workspace, one more cuBLAS handle with its
  -- first GEMM (measured twice), and lazy module loading of the first launches
  memory = {total_bytes = 150109880320, context_bytes = 552402944, libraries_bytes = 73400320,
    blas_handle_bytes = 67108864, blas_handle_again_bytes = 0, first_launch_bytes = 0,
    method = "cudaMemGetInfo" },
}
