-- NVIDIA H100 SXM5 80GB (HBM3).  Kernel times, host enqueue, first use and device memory from one `dkv profile`
-- run on an H100 of the device pool (device call 137, 2026-12-05, the default grid), with the H200 profile's clock
-- model carried over (same GH100 die, clocks and power limit; judged on call 139's fresh run set) and its GEMM blocks
-- of the HBM byte replay (same sm_90 cuBLASLt on 132 SMs; judged on call 141's Nsight Compute cells); the roofline fields are
-- datasheet figures scaled by the efficiency measured on the H200 (copy 4292 of 4800 GB/s = 0.894; bf16 GEMM
-- 790 of 989 TFLOP/s = 0.80), as the A100 preset's are; PCIe, launch and allocator figures are the H200's.
-- Unlike h200's, this profile has no GEMM staircase (docs/COMPARE.md section 6, "A second GPU"; docs/COST_MODEL.md
-- "A second GPU's clock").
return {
  expected_error = "measured on four H100 machines (device calls 137-140, docs/CLAIMS.md \"A second GPU\"): on call "
        .. "139's fresh run set every held-out target 11 of 11 (step latency mean |error| 0.7-3.4 %), nv:* step and "
        .. "memory 4 of 5; on call 140 (after the choice) step 9 and tokens/s 10 of 11 (az:none 5.8 % and +5.3 %), "
        .. "the rest 11 of 11; on calls 137-138 (seen before the clock block was chosen) step 10 of 11 each (0.9-5.7 %), "
        .. "p50, p99, tokens/s and memory 11 of 11; without the profile (h100-roofline) step latency 12-36 %; HBM bytes "
        .. "per kernel class against Nsight Compute (call 141, 42 cells a direction): reads 36, writes 26 within 5 %, "
        .. "every point's read and write total within 5 %",
  name = "h100",
  source = "kernel times from the measured profile h100-80gb-hbm3-20261205d (h100-80gb-hbm3-20261205: dkv profile, "
        .. "device call 137, H100 80GB HBM3 serial 1752624008567; c adds the clock block of h200-20261203t verbatim, "
        .. "scripts/profile_block.py, device call 139's criterion; d adds its gemm_splitk, gemm_reads, gemm_left and "
        .. "gemm_store blocks, read only by the HBM byte replay, device call 141's criterion), the roofline only where it has no table or a shape falls outside "
        .. "it; NVIDIA H100 SXM5 datasheet (80 GB HBM3, 3350 GB/s, 989 TFLOP/s bf16 dense, 67 TFLOP/s fp32, "
        .. "132 SMs, 50 MiB L2 in two halves, PCIe Gen5 x16) scaled by the H200's measured/datasheet ratios "
        .. "(0.894 bandwidth, 0.80 GEMM; call 137's bwcurve reads 3062 GB/s contiguous, x 0.974, the H200's "
        .. "copy/read ratio, = 2982 GB/s, within 0.5 % of the scaled 2995); 85,017,493,504 bytes visible "
        .. "(cudaMemGetInfo, the profile's memory table); bw_curve from call 137's bwcurve; PCIe, launch "
        .. "overhead and allocator are the H200's measured figures (same host interface, an assumption); "
        .. "dLLM-Serve 16384/32768/0.3; cost is an assumption",
  hbm_bytes = 85017493504,
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
  -- Efficiency of a contiguous access run of run_bytes (fraction of hbm_bw), measured by cuda/bench/bwcurve in
  -- device call 137 (datasets/hw/2026-12-05/call137/h100/bwcurve.txt: read GB/s / 2995, made non-decreasing;
  -- 256 B, 512 B and 1 KiB read 0.995, 0.987 and 0.983, averaged into the 256 B point).
  -- Used where a class falls back to the roofline; the profile's attention already includes it.
  bw_curve = {{16, 0.170}, {32, 0.339}, {64, 0.672}, {128, 0.946}, {256, 0.988}, {2048, 1.0}},
  -- Measured kernel times (docs/PROFILE_FORMAT.md, docs/COST_MODEL.md).
  profile = "h100-80gb-hbm3-20261205d",
}
