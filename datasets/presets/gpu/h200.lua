-- NVIDIA H200 SXM (141 GB HBM3e).  Bandwidth, FLOP/s, PCIe and allocator figures were measured
-- on the project's H200 (docs/ANCHORS.md, 2026-11-29); the rest is datasheet.
local GiB = 2^30
return {
  expected_error = "measured on H200s (docs/CLAIMS.md \"Held-out validation (issue 9)\", docs/BENCHMARKS.md session 38): "
        .. "over 43 run sets of the held-out points, step latency mean |error| within 5 % on 467 of 473 point rows, "
        .. "request p50 within 8 % on 457, p99 471, tokens/s within 5 % on 471, peak device memory within 2 % on 473; "
        .. "HBM bytes per kernel class within 5 % of Nsight Compute in 830 (reads) and 490 (writes) of 910 cells",
  name = "h200",
  source = "measured on the project's H200 (ANCHORS.md): 139.8 GiB visible, copy 4292 GB/s, "
        .. "bf16 GEMM ~790 TFLOP/s, PCIe pinned 55.5/55.3 GB/s (101.4 both ways), pageable 8.8/15.5 GB/s, "
        .. "cudaMalloc ~35 us, cudaFree ~38 us; FP32 67 TFLOP/s, 132 SMs, 60 MiB L2 from the NVIDIA datasheet; "
        .. "kernel times from the measured profile h200-20261203t (h200-20261203s with the GEMMs' staircase between the class tables' rows, LLaDA-8B's four shapes timed every 16 rows in device call 91, docs/COST_MODEL.md \"GEMM rows between the grid's\"; s is h200-20261203r with its clock model on the SMs' own clock, docs/COST_MODEL.md \"The clock on the probe's scale\": the rows' clocks read by dkv profile --probe in device call 84, the GEMMs' sensitivity measured at two clocks in call 77, the attention rows' median clock, and settle clocks and the follow form's time constants fitted on the step probe clocks of calls 79 and 81; r is h200-20261202q plus what the RoPE-store finds in L2 of the q|k|v GEMM's output, measured alone every 32 rows, device call 83, which only the HBM byte replay reads; q is h200-20261202p with the clock that follows the work, docs/COST_MODEL.md \"The clock that follows the work\", fitted on the step clocks of device calls 50-55 and 60-63; p is h200-20261202o plus what each GEMM leaves of its output in L2, measured alone every 16 rows, device call 74, which only the HBM byte replay reads; o is h200-20261202m plus the GEMMs' HBM reads measured alone at every warm-up row count with the SM clock at base, device call 72, which only the HBM byte replay reads; m is h200-20261202l plus the GEMMs' split-K counts cuBLASLt gives, device call 65, which only the HBM byte replay reads; l is h200-20261201k plus the clock model of docs/COST_MODEL.md \"The step's clock\": row clocks of call 39, sensitivities of call 42, lag and window from call 40; k is dkv profile with the L2 flush, back-to-back column, prefix-Reuse attention rows and every Reuse item count to 16, 2026-12-01, call 24, plus the low-rank rebuild measured in call 25, the selection at unaligned key counts measured in call 27 and the q|k|v, o and FFN rows above 8,192 measured in call 32 the attention kernel's clusters resident at once measured in call 34 and the generic GEMM grid's rows above 8,192 measured in call 35), the roofline only "
        .. "where it has no table (reorder) or a shape falls outside it; launch overhead 5.44 us (elementwise "
        .. "launches, dkv calibrate on the 2026-11-29 session) and bw_curve (cuda/bench/bwcurve, 2026-12-01, "
        .. "datasets/hw/2026-12-01/call3/bwcurve.txt) measured; cost is an assumption; dLLM-Serve has no H200 "
        .. "preset, its A100-80G values are used",
  hbm_bytes = 139.8 * GiB,
  hbm_bw = 4292e9,              -- bytes/s, device-to-device copy, read + write
  flops_bf16 = 790e12,
  flops_fp32 = 67e12,
  pcie_h2d_pinned = 55.5e9,
  pcie_d2h_pinned = 55.3e9,
  pcie_bidir_pinned = 101.4e9,
  pcie_h2d_pageable = 8.8e9,
  pcie_d2h_pageable = 15.5e9,
  launch_overhead_s = 5.44e-6,  -- measured: dkv calibrate's elementwise launch fit, 2026-11-29 (h200-calibrated)
  malloc_s = 35e-6,
  free_s = 38e-6,
  cost_per_hour = 3.80,         -- assumption: typical 2025 on-demand price per GPU-hour
  n_sms = 132,
  l2_bytes = 60 * 2^20,
  l2_partitions = 2,            -- two L2 halves, each caching what its SMs read (NVIDIA A100/H100 whitepapers): data read from both is held twice
  max_num_logits = 16384,
  max_num_batched_tokens = 32768,
  retention = 0.3,
  -- Efficiency of a contiguous access run of run_bytes (fraction of hbm_bw), measured by
  -- cuda/bench/bwcurve on 2026-12-01 (datasets/hw/2026-12-01/call3/bwcurve.txt: read GB/s / 4292,
  -- made non-decreasing; 512 B and 1 KiB read 0.968 and 0.957, averaged into the 256 B point).
  -- Used where a class falls back to the roofline; the profile's attention already includes it.
  bw_curve = {{16, 0.143}, {32, 0.287}, {64, 0.574}, {128, 0.923}, {256, 0.965}, {2048, 1.0}},
  -- Measured kernel times (docs/PROFILE_FORMAT.md, docs/COST_MODEL.md).
  profile = "h200-20261203t",
}
