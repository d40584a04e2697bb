-- NVIDIA H200 SXM (141 GB HBM3e).  Bandwidth, FLOP/s, PCIe and allocator figures were measured
-- on the project's H200 (docs/ANCHORS.md, 2026-11-29); the rest is datasheet.
local GiB = 2^30
return {
  name = "h200",
  source = "measured on the project's H200 (docs/ANCHORS.md): 139.8 GiB visible, copy 4292 GB/s, "
        .. "bf16 GEMM ~790 TFLOP/s, PCIe pinned 55.5/55.3 GB/s (101.4 both ways), pageable 8.8/15.5 GB/s, "
        .. "cudaMalloc ~35 us, cudaFree ~38 us; FP32 67 TFLOP/s, 132 SMs, 60 MiB L2 from the NVIDIA datasheet; "
        .. "launch overhead, cost and bw_curve are dkv assumptions; dLLM-Serve has no H200 preset, "
        .. "its A100-80G values are used",
  hbm_bytes = 139.8 * GiB,
  hbm_bw = 4292e9,              -- bytes/s, device-to-device copy, read + write
  flops_bf16 = 790e12,
  flops_fp32 = 67e12,
  pcie_h2d_pinned = 55.5e9,
  pcie_d2h_pinned = 55.3e9,
  pcie_bidir_pinned = 101.4e9,
  pcie_h2d_pageable = 8.8e9,
  pcie_d2h_pageable = 15.5e9,
  launch_overhead_s = 4e-6,     -- assumption (typical CUDA launch, not measured here)
  malloc_s = 35e-6,
  free_s = 38e-6,
  cost_per_hour = 3.80,         -- assumption: typical 2025 on-demand price per GPU-hour
  n_sms = 132,
  l2_bytes = 60 * 2^20,
  max_num_logits = 16384,
  max_num_batched_tokens = 32768,
  retention = 0.3,
  -- Efficiency of a contiguous access run of run_bytes (fraction of hbm_bw): a 32-byte sector
  -- model saturating at a few KiB.  Assumption, to be replaced by a measured curve.
  bw_curve = {
    {32, 0.12}, {64, 0.22}, {128, 0.40}, {256, 0.62}, {512, 0.78},
    {1024, 0.88}, {4096, 0.95}, {65536, 1.0},
  },
}
