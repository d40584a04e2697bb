# device_env.sh - the start every device call's command.sh makes on the device machine (sourced, not run: it sets
# the caller's environment).  Since session 40; calls 117-122 wrote these lines into their own command.sh.
#
#   . scripts/device_env.sh        (in the repository root there, with $OUT set and .hwbin carried)
#
# 1. Unpacks every .hwbin/*.xz and .hwbin/lib/*.xz in place (xz, or Python's lzma where xz is missing) and makes
#    .hwbin's binaries executable.
# 2. Exports LD_LIBRARY_PATH with .hwbin/lib and the CUDA libraries first.
# 3. Starts $OUT/tests.txt with the GPU (nvidia-smi: name, serial, driver, max SM clock, power limit) and the UTC time.
# 4. Sets NCU to Nsight Compute's ncu (on PATH, or under /usr/local/cuda and /opt/nvidia) and adds "ncu: <path>" to
#    tests.txt ("ncu: none" where there is none; NCU is then empty).
# Returns 2 naming what is missing when $OUT is not a folder (nothing else done).
if [ -z "${OUT:-}" ] || [ ! -d "$OUT" ]; then
    echo "device_env.sh: \$OUT ('${OUT:-}') is not a folder" >&2
    return 2 2> /dev/null || exit 2
fi
for _f in .hwbin/*.xz .hwbin/lib/*.xz; do
    [ -f "$_f" ] || continue
    if command -v xz > /dev/null; then xz -d -f "$_f"
    else python3 -c "import lzma,sys; open(sys.argv[1][:-3],'wb').write(lzma.open(sys.argv[1]).read())" "$_f" && rm -f "$_f"; fi
done
unset _f
for _f in .hwbin/*; do [ -f "$_f" ] && chmod +x "$_f"; done
unset _f
export LD_LIBRARY_PATH="$PWD/.hwbin/lib:/usr/local/cuda/lib64:/usr/local/cuda/targets/x86_64-linux/lib:${LD_LIBRARY_PATH:-}"
nvidia-smi --query-gpu=name,serial,driver_version,clocks.max.sm,power.limit --format=csv,noheader > "$OUT/tests.txt" 2>&1 ||
    echo "nvidia-smi failed" >> "$OUT/tests.txt"
date -u +%Y-%m-%dT%H:%M:%SZ >> "$OUT/tests.txt"
NCU=$(command -v ncu || ls /usr/local/cuda/bin/ncu /opt/nvidia/nsight-compute/*/ncu /usr/local/cuda-*/bin/ncu 2> /dev/null | head -n 1)
export NCU
echo "ncu: ${NCU:-none}" | tee -a "$OUT/tests.txt"
