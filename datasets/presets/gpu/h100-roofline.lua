-- The h100 preset without its profile: the roofline alone, on the datasheet figures scaled by the H200's ratios.
-- What a GPU without a profile gets; kept to reproduce the roofline rows of docs/BENCHMARKS.md "A second GPU"
-- (GPU_BASE=h100-roofline bash scripts/hw_session.sh post ...: the held-out points under it and under the
-- profile of the folder posted).
return {
  base = "h100",
  name = "h100-roofline",
  profile = "",
  expected_error = "roofline only, measured on four H100 machines (device calls 137-140, docs/CLAIMS.md "
        .. "\"A second GPU\"): too fast on every held-out point, step latency 11-36 % (median 18 %), request p50 -20 to -57 % "
        .. "(median -32 %), tokens/s +4 to +45 % (median +24 %)",
}
