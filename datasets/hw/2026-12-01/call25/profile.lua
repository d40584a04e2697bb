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
    dkv_version = "0.1.0", dkv_commit = "73d39fe73776", date = "2026-12-01T19:59:22Z",
    command = "dkv profile -o /tmp/hw-work/profile.lua --deadline 265 --grid compress",
    repeats = 20, warmup = 2, statistic = "median", measured = true, grid = "default",
    models = {"llada-8b"},
    estimate_s = 2.5, wall_s = 11.4, skipped = 0,
  },
  kernels = {
    compress = {
      note = "dkv_cuda_lowrank_compress (randomized range finder, 1 power iteration) then the two fp32 -> bf16 stagings (the backend's compress() less its gather): rows = the rows of all the matrices (tokens x layers x 2 x kv_heads: batch matrices of rows / batch tokens each), cols = head_dim; extra batch; launches: the backend's count less the gather",
      fields = {"rows", "cols", "rank"},
      extra = {"p10_s", "p90_s", "first_s", "warm_s", "stream_s", "batch"},
      rows = {
        {524288, 128, 38, 0.00673013, 15, 0.00670832, 0.00679994, 0.118537, 0.00675459, 0.00675592, 2048},
        {524288, 128, 64, 0.0142612, 15, 0.0142342, 0.0144908, 6.1106e-05, 0.0142611, 0.0142541, 2048},
        {2097152, 128, 38, 0.0153471, 15, 0.0153287, 0.0154712, 2.256e-06, 0.0153395, 0.015366, 2048},
        {2097152, 128, 64, 0.0239205, 15, 0.0238823, 0.0239882, 3.2844e-05, 0.0239457, 0.0239261, 2048},
        {4194304, 128, 38, 0.0266608, 15, 0.0266326, 0.0267098, -4.6966e-05, 0.0266535, 0.0267076, 2048},
        {4194304, 128, 64, 0.0365935, 15, 0.0364774, 0.0366247, -0.000126766, 0.0365146, 0.0365526, 2048},
      },
    },
    decompress = {
      note = "dkv_cuda_lowrank_decompress (the backend's rebuild_lowrank): bf16 Q (m x rank) B (rank x cols) of every matrix into the pool blocks of m tokens (t-major, bf16, a scattered block table): rows = m x layers x 2 x kv_heads, cols = head_dim; extra batch",
      fields = {"rows", "cols", "rank"},
      extra = {"p10_s", "p90_s", "first_s", "warm_s", "stream_s", "batch"},
      rows = {
        {524288, 128, 38, 0.00159872, 1, 0.001596, 0.00160259, 0.000276783, 0.00160686, 0.00160487, 2048},
        {524288, 128, 64, 0.00212896, 1, 0.002124, 0.00213194, 1.8518e-05, 0.00213669, 0.00213543, 2048},
        {2097152, 128, 38, 0.00550781, 1, 0.00550013, 0.00551587, -2.868e-06, 0.00551278, 0.00550724, 2048},
        {2097152, 128, 64, 0.00730301, 1, 0.0072983, 0.00730851, -2.1525e-05, 0.00730915, 0.00730832, 2048},
        {4194304, 128, 38, 0.0108668, 1, 0.0108551, 0.0108819, 2.841e-06, 0.0108761, 0.0108723, 2048},
        {4194304, 128, 64, 0.0145574, 1, 0.014543, 0.0145754, -9.442e-06, 0.014554, 0.0145549, 2048},
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
  first_use = {, other_s = 2.5485e-06, other_max_s = 0.118537, other_shapes = 12},
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
