-- NVIDIA A100 80GB SXM4.  No A100 here: datasheet figures scaled by the efficiency measured on
-- the H200 (copy 4292 of 4800 GB/s = 0.894; bf16 GEMM 790 of 989 TFLOP/s = 0.80) so presets are
-- comparable.  dLLM-Serve values from docs/DESIGN.md (arXiv 2512.17077).
return {
  expected_error = "roofline only, no hardware behind this preset: on the H200 the same roofline model was "
        .. "too fast on every held-out point, step latency 24-58 % (median 27 %), request p50 -27 to -50 % "
        .. "(median -36 %), tokens/s +4 to +45 % (median +28 %); on four H100s (h100-roofline) step 11-36 % (median "
        .. "18 %), p50 -20 to -57 % (median -32 %), tokens/s +4 to +45 % (median +24 %) (docs/CLAIMS.md, Held-out "
        .. "validation, \"A second GPU\"), where one dkv profile run alone met p50, p99 and memory on 44 of 44 held-out "
        .. "points and tokens/s on 43",
  name = "a100-80g",
  source = "NVIDIA A100 datasheet (80 GiB HBM2e, 2039 GB/s, 312 TFLOP/s bf16 dense, 19.5 TFLOP/s fp32, "
        .. "108 SMs, 40 MiB L2, PCIe Gen4 x16) scaled by H200 measured/datasheet ratios (0.894 bandwidth, "
        .. "0.80 GEMM); PCIe pinned ~25 GB/s typical Gen4; dLLM-Serve 16384/32768/0.3; cost is an assumption",
  hbm_bytes = 80 * 2^30,
  hbm_bw = 2039e9 * 0.894,
  flops_bf16 = 312e12 * 0.80,
  flops_fp32 = 19.5e12,
  pcie_h2d_pinned = 25e9,
  pcie_d2h_pinned = 25e9,
  pcie_bidir_pinned = 45e9,
  pcie_h2d_pageable = 8e9,
  pcie_d2h_pageable = 10e9,
  launch_overhead_s = 4e-6,
  malloc_s = 35e-6,
  free_s = 38e-6,
  cost_per_hour = 1.80,
  n_sms = 108,
  l2_bytes = 40 * 2^20,
  l2_partitions = 2,            -- two L2 halves, each caching what its SMs read (NVIDIA A100/H100 whitepapers): data read from both is held twice
  max_num_logits = 16384,
  max_num_batched_tokens = 32768,
  retention = 0.3,
  bw_curve = {
    {32, 0.12}, {64, 0.22}, {128, 0.40}, {256, 0.62}, {512, 0.78},
    {1024, 0.88}, {4096, 0.95}, {65536, 1.0},
  },
}
