-- NVIDIA H100 SXM5 80GB (HBM3).  Until this GPU is profiled: datasheet figures scaled by the efficiency
-- measured on the H200 (copy 4292 of 4800 GB/s = 0.894; bf16 GEMM 790 of 989 TFLOP/s = 0.80), as the
-- A100 preset is, so that the presets are comparable; the H200's measured host-side figures (PCIe
-- Gen5 x16, launch, allocator) are assumed to carry over.
return {
  expected_error = "roofline only, no profile behind this preset yet: on the H200 the same roofline model was "
        .. "too fast on every held-out point, step latency 24-58 % (median 27 %), request p50 -27 to -50 % "
        .. "(median -36 %), tokens/s +4 to +45 % (median +28 %) (docs/CLAIMS.md, Held-out validation)",
  name = "h100",
  source = "NVIDIA H100 SXM5 datasheet (80 GB HBM3, 3350 GB/s, 989 TFLOP/s bf16 dense, 67 TFLOP/s fp32, "
        .. "132 SMs, 50 MiB L2 in two halves, PCIe Gen5 x16) scaled by the H200's measured/datasheet ratios "
        .. "(0.894 bandwidth, 0.80 GEMM); 79.6 GiB visible (81,559 MiB, nvidia-smi on the device pool's H100s); "
        .. "PCIe, launch overhead, allocator and bw_curve are the H200's measured figures (same host interface, "
        .. "an assumption); dLLM-Serve 16384/32768/0.3; cost is an assumption",
  hbm_bytes = 79.6 * 2^30,
  hbm_bw = 3350e9 * 0.894,
  flops_bf16 = 989e12 * 0.80,
  flops_fp32 = 67e12,
  pcie_h2d_pinned = 55.5e9,
  pcie_d2h_pinned = 55.3e9,
  pcie_bidir_pinned = 101.4e9,
  pcie_h2d_pageable = 8.8e9,
  pcie_d2h_pageable = 15.5e9,
  launch_overhead_s = 5.44e-6,
  malloc_s = 35e-6,
  free_s = 38e-6,
  cost_per_hour = 2.90,         -- assumption: typical 2025 on-demand price per GPU-hour
  n_sms = 132,
  l2_bytes = 50 * 2^20,
  l2_partitions = 2,            -- two L2 halves, each caching what its SMs read (NVIDIA A100/H100 whitepapers): data read from both is held twice
  max_num_logits = 16384,
  max_num_batched_tokens = 32768,
  retention = 0.3,
  bw_curve = {{16, 0.143}, {32, 0.287}, {64, 0.574}, {128, 0.923}, {256, 0.965}, {2048, 1.0}},
}
