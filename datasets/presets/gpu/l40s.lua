-- NVIDIA L40S (48 GB GDDR6).  Datasheet figures scaled like a100-80g.lua.
return {
  expected_error = "roofline only, no hardware behind this preset: on the H200 the same roofline model was "
        .. "too fast on every held-out point, step latency 24-58 % (median 27 %), request p50 -27 to -50 % "
        .. "(median -36 %), tokens/s +4 to +45 % (median +28 %); on four H100s (h100-roofline) step 11-36 % (median "
        .. "18 %), p50 -20 to -57 % (median -32 %), tokens/s +4 to +45 % (median +24 %) (docs/CLAIMS.md, Held-out "
        .. "validation, \"A second GPU\"), where one dkv profile run alone met p50, p99 and memory on 44 of 44 held-out "
        .. "points and tokens/s on 43",
  name = "l40s",
  source = "NVIDIA L40S datasheet (48 GB GDDR6 = 44.99 GiB usable, 864 GB/s, 362 TFLOP/s bf16 dense, "
        .. "91.6 TFLOP/s fp32, 142 SMs, 96 MiB L2, PCIe Gen4 x16) scaled by H200 measured/datasheet ratios "
        .. "(0.894 bandwidth, 0.80 GEMM); dLLM-Serve 8192/16384/0.4; cost is an assumption",
  hbm_bytes = 46068 * 2^20,
  hbm_bw = 864e9 * 0.894,
  flops_bf16 = 362e12 * 0.80,
  flops_fp32 = 91.6e12,
  pcie_h2d_pinned = 25e9,
  pcie_d2h_pinned = 25e9,
  pcie_bidir_pinned = 45e9,
  pcie_h2d_pageable = 8e9,
  pcie_d2h_pageable = 10e9,
  launch_overhead_s = 4e-6,
  malloc_s = 35e-6,
  free_s = 38e-6,
  cost_per_hour = 1.00,
  n_sms = 142,
  l2_bytes = 96 * 2^20,
  max_num_logits = 8192,
  max_num_batched_tokens = 16384,
  retention = 0.4,
  bw_curve = {
    {32, 0.12}, {64, 0.22}, {128, 0.40}, {256, 0.62}, {512, 0.78},
    {1024, 0.88}, {4096, 0.95}, {65536, 1.0},
  },
}
