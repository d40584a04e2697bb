-- NVIDIA GeForce RTX 4090 (24 GB GDDR6X).  Datasheet figures scaled like a100-80g.lua.
return {
  expected_error = "roofline only, no hardware behind this preset: on the H200 the same roofline model was "
        .. "too fast on every held-out point, step latency 24-58 % (median 27 %), request p50 -27 to -50 % "
        .. "(median -36 %), tokens/s +4 to +45 % (median +28 %); on four H100s (h100-roofline) step 11-36 % (median "
        .. "18 %), p50 -20 to -57 % (median -32 %), tokens/s +4 to +45 % (median +24 %) (docs/CLAIMS.md, Held-out "
        .. "validation, \"A second GPU\"), where one dkv profile run alone met p50, p99 and memory on 44 of 44 held-out "
        .. "points and tokens/s on 43",
  name = "rtx4090",
  source = "NVIDIA Ada whitepaper (24 GiB GDDR6X, 1008 GB/s, 165.2 TFLOP/s bf16 dense with fp32 accumulate, "
        .. "82.6 TFLOP/s fp32, 128 SMs, 72 MiB L2, PCIe Gen4 x16) scaled by H200 measured/datasheet ratios "
        .. "(0.894 bandwidth, 0.80 GEMM); dLLM-Serve 4096/8192/0.5; cost is an assumption",
  hbm_bytes = 24 * 2^30,
  hbm_bw = 1008e9 * 0.894,
  flops_bf16 = 165.2e12 * 0.80,
  flops_fp32 = 82.6e12,
  pcie_h2d_pinned = 25e9,
  pcie_d2h_pinned = 25e9,
  pcie_bidir_pinned = 40e9,
  pcie_h2d_pageable = 8e9,
  pcie_d2h_pageable = 10e9,
  launch_overhead_s = 3e-6,
  malloc_s = 35e-6,
  free_s = 38e-6,
  cost_per_hour = 0.40,
  n_sms = 128,
  l2_bytes = 72 * 2^20,
  max_num_logits = 4096,
  max_num_batched_tokens = 8192,
  retention = 0.5,
  bw_curve = {
    {32, 0.12}, {64, 0.22}, {128, 0.40}, {256, 0.62}, {512, 0.78},
    {1024, 0.88}, {4096, 0.95}, {65536, 1.0},
  },
}
