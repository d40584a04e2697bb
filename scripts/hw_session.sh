#!/usr/bin/env bash
# scripts/hw_session.sh - issue 6's hardware session: the hw_*.lua experiments, the validation
# points and their Nsight Compute profiles in ONE device call, then the comparison here.
# docs/COMPARE.md, "Hardware session plan", gives the call, the budget and what to record.
#
#   bash scripts/hw_session.sh build       # here: static dkv (CUDA backend) + bwcurve into .hwbin/
#   run(command="bash scripts/hw_session.sh device", carry=[".hwbin"], timeout_s=600)      # there
#   RES=results/hw-X bash scripts/hw_session.sh post DIR...
#                                          # here: DIR = each device call's files_at folder (copy it
#                                          # out first); ncu-import, dkv compare with issue 6's
#                                          # tolerances, dkv calibrate on the fit set, the validation
#                                          # points re-simulated under the fitted preset and compared
#                                          # again, the held-out points re-simulated with the machine
#                                          # calibration of the same call's in-sample points
#                                          # (scripts/machine_calibrate.py, cmp/mach_*.h5),
#                                          # $RES/summary.md (RES default results/hw-<date>)
#                                          # PROFILE=FILE.lua: re-simulate the held-out and validation
#                                          # points under that profile instead of a folder's profile.lua
#                                          # GPU_BASE=NAME (default h200): the GPU preset the runs were
#                                          # measured on (re-simulation, issue 11's study's too,
#                                          # the profile's preset's base; the fit-set calibration,
#                                          # an H200 path, is skipped and says so under another;
#                                          # docs/COMPARE.md section 6, "A second GPU")
#                                          # (scripts/hw_gpu_check.py refuses runs of another GPU than
#                                          # its profile's, or PROFILE's: GPU_BASE_ANY=1 compares anyway)
#   bash scripts/hw_session.sh standin DIR # here: DIR gets what `device` returns, made by
#                                          # dkv.simulate on the a100-80g preset (STAND-IN, to test
#                                          # `post`: tests/e2e/test_hw_scripts.sh; fake ncu CSVs)
#   bash scripts/hw_session.sh --help      # this text
#
# A relative path (post's DIRs, standin's DIR, RES, PROFILE, MULTI_HOST_PROFILE, DKV) is taken from the folder the
# script is run from (it then works in the repository root).  post checks its DIRs and PROFILE, and refuses a RES
# that already holds results, before it creates anything.
#
# device: STEPS (default "check bwcurve validate experiments ncu"; issue 9 adds "profile" = dkv profile
# into profile.lua, bounded by PROFILE_LIMIT (330 s), options in PROFILE_ARGS, and "heldout" = the held-out
# points, hw_validate.lua -D set=heldout, bounded by HELDOUT_LIMIT (260 s); docs/COMPARE.md section 6; since
# session 34 "novel" = the same kind of points at other block lengths and steps per block, -D set=novel, runs
# nv:<point>, bounded by NOVEL_LIMIT (120 s))
# picks the steps; CLASS_TIMING (default false since 2026-12-01 call 10) is dkv.execute's class_timing in the
# validate, heldout and multi steps: the simulator models an engine without per-class CUDA events, and
# each event costs a real step ~2-3 us (docs/COMPARE.md "Instrumented and uninstrumented steps");
# VALIDATE_ARGS / HELDOUT_ARGS add hw_validate.lua options (e.g. "-D point=w1:dual": one
# point), STUDY_ARGS the experiments step's hw_*.lua (e.g. "-D gpu=h100" on an H100); DEADLINE
# (default 540 s) bounds the whole call: a step that would not fit is skipped and says so, and the
# results are packed into $OUT before the tool's 600 s limit.  $OUT gets at most 7 files (the tool
# returns at most 8): table.txt, hw_h5.tgz (the result files), ncu.tgz (CSVs and profiled runs),
# logs.tgz, bwcurve.txt, profile.lua, tests.txt (scripts/device_env.sh, sourced first: it also unpacks
# .hwbin's .xz files, so an xz'd .hwbin can be carried as it is).  NCU_CACHE (all) is ncu's --cache-control: "all" flushes the caches before
# every kernel (reads are cold-cache reads; writes left in L2 are not seen), "none" keeps them warm
# (writes are seen as they are evicted).  NCU_LIMIT (90 s) bounds one profiled point; NCU_POINTS (default: all 9)
# picks the profiled points, e.g. for a second call `STEPS=ncu NCU_POINTS="w3:dual w3:sparse"`.
#
# Issue 11 (multi-instance, docs/GPU.md "Several instances on one GPU"): STEPS="check multi" runs
# .hwbin/test_multi_instances (k = 2, 4 instances: every request done, pool accounting; < 30 s), then
# experiments/hw_multi_instance.lua one operating point per file (MULTI_OPS, default "b1 b8 arrive":
# h5/hw_multi_instance_<op>.h5, each bounded by MULTI_LIMIT s, default 150; k in MULTI_INSTS, default
# "1,2,4,8"), then scripts/hw_multi_proc.sh for each OP:K in MULTI_PROCS (default "b1:1 b1:2 b1:4
# b8:1 b8:2 b8:4 arrive:1 arrive:2 arrive:4 b1:8": k separate processes; b1:8 last, as 8 weight
# copies of LLaDA-8B nearly fill the H200): h5/hw_multi_proc_<op>_k<k>.h5.  MULTI_ARGS adds options to
# both (e.g. "-D gpu=h100" on an H100: its memory sizes the weight copies, which are said and not run when
# they do not fit).  `post` on a folder
# without validation points (h5/val.h5, heldout.h5 or novel.h5) does only the multi-instance part: $RES/multi.md, the table of
# CLAIMS row 8 (post_multi below); with them, it appends it.
#
# Which data is which (calibration must not validate on its own data, issue 6):
#   fit set (calibration): hw_retention, hw_offload, hw_layout, hw_multi_instance's single-instance
#                          points (+ bwcurve.txt); not k > 1 instances nor separate processes (issue 11)
#   validation set:        hw_validate (3 workloads x prefix/dual/sparse), and its ncu profiles
set -u
CALLER=$PWD   # relative paths given to the script are the caller's: here() resolves them after the cd
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
here() {   # PATH: unchanged when absolute or when the caller is in the root, else under the caller's folder
    case $1 in
    /*|'') printf '%s\n' "$1" ;;
    *) if [ "$CALLER" = "$ROOT" ]; then printf '%s\n' "$1"; else printf '%s\n' "$CALLER/$1"; fi ;;
    esac
}
here_dkv() {   # DKV as the caller meant it: a bare name is looked up on PATH, a path is the caller's
    case ${DKV:-} in */*) DKV=$(here "$DKV") ;; esac
}
HB=.hwbin
PY=/usr/bin/python3
STUDIES=${STUDIES:-"retention offload layout multi_instance"}   # device: order = run order
MULTI_PROCS_DEFAULT="b1:1 b1:2 b1:4 b8:1 b8:2 b8:4 arrive:1 arrive:2 arrive:4 b1:8"   # issue 11: OP:K
VAL_POINTS="w1:prefix w1:dual w1:sparse w2:prefix w2:dual w2:sparse w3:prefix w3:dual w3:sparse"
TOLS=(--tolerance step.time_s=8% --tolerance 'run.peak_*=2%' --tolerance 'run.*frag*=0.01')
NCU_TOL=(--tolerance 'ncu.*.bytes:total=5%')

# ---------------------------------------------------------------- build (here)
build() {
    local B=build/hw-release
    scons -Q -j2 variant=hw mode=release cuda=yes "$B/dkv" >/dev/null || exit 1
    # relink dkv with HDF5, Lua, szip, aec and zlib static (docs/GPU.md): take scons' own link line
    rm -f "$B/dkv"
    local cmd
    cmd=$(scons -Q -j2 variant=hw mode=release cuda=yes "$B/dkv" | grep "^gcc -o $B/dkv ") || {
        echo "hw_session build: no link line from scons" >&2; exit 1; }
    local A=/usr/lib/x86_64-linux-gnu
    rm -rf "$HB"; mkdir -p "$HB/lib"
    cmd=${cmd/"gcc -o $B/dkv "/"gcc -o $HB/dkv "}
    cmd=${cmd//" -llua5.4 "/" $A/liblua5.4.a "}
    cmd=${cmd//" -lhdf5 "/" $A/hdf5/serial/libhdf5.a $A/libsz.a $A/libaec.a $A/libz.a -lcurl -lcrypto -ldl "}
    eval "$cmd" || exit 1
    # what stays dynamic besides libc and CUDA (libcurl and libcrypto, for HDF5's ROS3 driver, and
    # their dependencies) travels in .hwbin/lib
    ldd "$HB/dkv" | awk '$3 ~ /^\// {print $3}' \
        | grep -v -E "/(libc|libm|libstdc\+\+|libgcc_s|libpthread|libdl|librt|libresolv|ld-linux[^/]*)\.so|cuda|cublas" \
        | while read -r l; do cp -L "$l" "$HB/lib/"; done
    nvcc -O3 -arch=sm_90 cuda/bench/bwcurve.cu -o "$HB/bwcurve" || exit 1
    nvcc -O3 -arch=sm_90 cuda/bench/l2probe.cu -o "$HB/l2probe" || exit 1   # under ncu: docs/COST_MODEL.md
    scons -Q -j2 variant=hw mode=release cuda=yes "$B/tests/gpu/test_multi_instances" >/dev/null || exit 1
    cp "$B/tests/gpu/test_multi_instances" "$HB/" || exit 1
    # issue 9 (session 13): the selection's parts at unaligned key counts (docs/COST_MODEL.md "Unaligned key counts")
    scons -Q -j2 variant=hw mode=release cuda=yes "$B/tests/gpu/bench_sel_align" >/dev/null || exit 1
    cp "$B/tests/gpu/bench_sel_align" "$HB/" || exit 1
    # (in a git worktree .git is a file: .hwbin stays untracked there and travels as such, or by carry)
    [ -d .git ] && { grep -qx '/.hwbin/' .git/info/exclude 2>/dev/null || echo '/.hwbin/' >> .git/info/exclude; }
    echo "== ldd $HB/dkv (static: hdf5, lua, sz, aec, z)"
    ldd "$HB/dkv" | grep -E "hdf5|lua|libsz|libaec|libz\.|not found" && { echo "hw_session build: still dynamic" >&2; exit 1; }
    # smoke test here (no GPU: the simulated half only)
    LD_LIBRARY_PATH="$ROOT/$HB/lib" "$HB/dkv" run experiments/hw_validate.lua -D point=w1:dual -o "$HB/smoke.h5" \
        | grep -E "^hw(:| validate)" || { echo "hw_session build: smoke run failed" >&2; exit 1; }
    rm -f "$HB/smoke.h5"
    du -sh "$HB"; ls -la "$HB"
}

# ---------------------------------------------------------------- device (there)
W=/tmp/hw-work
left() { echo $(( DEADLINE - SECONDS )); }
FAILED=0
status_line() {
    printf "%-26s exit %-4s %5ss  %s\n" "$1" "$2" "$3" "$4" | tee -a "$W/status.txt"
    [ "$2" = 0 ] || FAILED=1
}

pack() {
    [ -n "${PACKED:-}" ] && return
    PACKED=1
    mkdir -p "$OUT"
    # A study that failed or timed out keeps its completed runs in X.h5.partial (or X.h5.tmp when
    # killed): in this fresh work folder there is no older X.h5 to protect, so they take its name.
    local p
    for p in "$W"/h5/*.h5.partial "$W"/h5/*.h5.tmp "$W"/ncu/*.h5.partial "$W"/ncu/*.h5.tmp; do
        [ -e "$p" ] && [ ! -e "${p%.*}" ] && mv "$p" "${p%.*}" && status_line "kept ${p##*/}" 0 0 "as ${p%.*}"
    done
    tar czf "$OUT/hw_h5.tgz" -C "$W" h5 2>/dev/null
    [ -n "$(ls -A "$W/ncu" 2>/dev/null)" ] && tar czf "$OUT/ncu.tgz" -C "$W" ncu
    tar czf "$OUT/logs.tgz" -C "$W" logs status.txt 2>/dev/null
    [ -f "$W/bwcurve.txt" ] && cp "$W/bwcurve.txt" "$OUT/"
    [ -f "$W/profile.lua" ] && cp "$W/profile.lua" "$OUT/"
    { echo "==== hw_session device: $(date -u +%FT%TZ), $(cat "$W/device.txt" 2>/dev/null | tail -n 1)"
      for s in $STUDIES; do
          [ -f "$W/logs/hw_$s.log" ] && sed -n '/^hw [a-z -]*:/,/expected device time/p' "$W/logs/hw_$s.log"
      done
      [ -f "$W/logs/validate.log" ] && sed -n '/^hw validate:/,/expected device time/p' "$W/logs/validate.log"
      [ -f "$W/logs/heldout.log" ] && sed -n '/^hw validate (held-out):/,/expected device time/p' "$W/logs/heldout.log"
      [ -f "$W/logs/novel.log" ] && sed -n '/^hw validate (novel):/,/expected device time/p' "$W/logs/novel.log"
      [ -f "$W/logs/profile.log" ] && grep -E "^dkv profile: (estimated|.* written|incomplete)|section .* shapes in" "$W/logs/profile.log"
      [ -f "$W/logs/multi_check.log" ] && grep -E "^(PASS|FAIL|config|device)" "$W/logs/multi_check.log"
      for f in "$W"/logs/hw_multi_instance_*.log; do
          [ -f "$f" ] && sed -n '/^hw multi-instance:/,/expected device time/p' "$f"
      done
      for f in "$W"/logs/multi_proc_*.log; do [ -f "$f" ] && grep -h "^hw_multi_proc " "$f"; done
      echo; echo "==== steps (name, exit, seconds, note)"; cat "$W/status.txt"; } > "$OUT/table.txt"
    ls -la "$OUT"
}

run_dkv() {   # name limit log dkv-args...
    local name=$1 lim=$2 log=$3; shift 3
    local l; l=$(left)
    if [ "$l" -lt 20 ]; then status_line "$name" skip 0 "deadline: ${l}s left"; return 1; fi
    [ "$lim" -gt $((l - 10)) ] && lim=$((l - 10))
    local t0=$SECONDS r
    timeout -k 10 "$lim" "$DKV" "$@" > "$log" 2>&1; r=$?
    status_line "$name" "$r" $((SECONDS - t0)) "$( [ $r = 124 ] && echo "timeout ${lim}s" || grep -m1 -E "^hw: |error|Error" "$log" | cut -c1-90)"
    [ "$r" = 0 ]
}

find_ncu() {
    command -v ncu 2>/dev/null && return
    local c
    for c in /usr/local/cuda/bin/ncu /opt/nvidia/nsight-compute/*/ncu /usr/local/cuda-*/bin/ncu; do
        [ -x "$c" ] && { echo "$c"; return; }
    done
}

device() {
    OUT=${OUT:-$ROOT/hw-out}
    DEADLINE=${DEADLINE:-540}
    rm -rf "$W"; mkdir -p "$W/h5" "$W/ncu" "$W/logs" "$OUT"; : > "$W/status.txt"
    trap pack EXIT
    # .hwbin's xz files unpacked (the 64 MiB carry needs them packed), LD_LIBRARY_PATH, $OUT/tests.txt with the GPU's
    # name and serial (since session 49: call 137's first try found .hwbin/dkv still packed and ran nothing)
    . "$ROOT/scripts/device_env.sh" > /dev/null || exit 2
    DKV="$ROOT/$HB/dkv"
    [ -x "$DKV" ] || { echo "hw_session device: $DKV missing: run 'bash scripts/hw_session.sh build' here and carry .hwbin"; exit 1; }
    local steps=${STEPS:-check bwcurve validate experiments ncu} s
    CT=${CLASS_TIMING:-false}   # the validation's and multi-instance's real halves: no per-class events
    case $CT in true|false) ;; *) echo "hw_session device: CLASS_TIMING must be true or false, got '$CT'"; exit 2 ;; esac
    for s in $steps; do
        case $s in
        check)
            nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.mem --format=csv,noheader \
                | tee "$W/device.txt"
            ldd "$DKV" | grep "not found" && status_line check 1 0 "libraries not found (ldd)"
            local n; n=$(find_ncu)
            [ -n "$n" ] && "$n" --version 2>&1 | tail -n 1 | tee -a "$W/device.txt"
            status_line check 0 "$SECONDS" "ncu: ${n:-none}" ;;
        bwcurve)   # HBM read rate by contiguous run length: dkv calibrate's bw_curve (fit set)
            local t0=$SECONDS r
            timeout 60 "$HB/bwcurve" > "$W/bwcurve.txt" 2>&1; r=$?
            status_line bwcurve "$r" $((SECONDS - t0)) "$(grep -c '^run ' "$W/bwcurve.txt") run lengths" ;;
        profile)   # issue 9: dkv profile (kernel times over the shape grid) into profile.lua, deadline-bounded
            local l lim t0 r
            l=$(left); lim=${PROFILE_LIMIT:-330}
            [ "$lim" -gt $((l - 15)) ] && lim=$((l - 15))
            if [ "$lim" -lt 30 ]; then status_line profile skip 0 "deadline: ${l}s left"; continue; fi
            t0=$SECONDS
            timeout -k 10 "$lim" "$DKV" profile -o "$W/profile.lua" --deadline $((lim - 20)) ${PROFILE_ARGS:-} \
                > "$W/logs/profile.log" 2>&1; r=$?
            status_line profile "$r" $((SECONDS - t0)) "$(grep -m1 -E "written|no usable|error" "$W/logs/profile.log" | cut -c1-90)" ;;
        heldout)   # issue 9: the held-out validation points (hw_validate.lua -D set=heldout), cold shapes as they come
            run_dkv heldout "${HELDOUT_LIMIT:-260}" "$W/logs/heldout.log" run experiments/hw_validate.lua -D backend=cuda \
                -D set=heldout -D class_timing="$CT" ${HELDOUT_ARGS:-} -o "$W/h5/heldout.h5" ;;
        novel)     # issue 9: points at other block lengths and steps per block (hw_validate.lua -D set=novel)
            run_dkv novel "${NOVEL_LIMIT:-120}" "$W/logs/novel.log" run experiments/hw_validate.lua -D backend=cuda \
                -D set=novel -D class_timing="$CT" ${NOVEL_ARGS:-} -o "$W/h5/novel.h5" ;;
        validate)  # the 9 validation points, unprofiled: step latency, peak memory, fragmentation
                   # (each point warmed with its own configuration first: no cold GEMM shapes)
            run_dkv validate 150 "$W/logs/validate.log" run experiments/hw_validate.lua -D backend=cuda -D warmup=each \
                -D class_timing="$CT" ${VALIDATE_ARGS:-} -o "$W/h5/val.h5" ;;
        experiments)
            for x in $STUDIES; do
                run_dkv "hw_$x" 150 "$W/logs/hw_$x.log" run "experiments/hw_$x.lua" -D backend=cuda \
                    ${STUDY_ARGS:-} -o "$W/h5/hw_$x.h5"
            done ;;
        multi)     # issue 11: k instances checked, the in-process study, k separate processes
            local t0=$SECONDS r op k l
            if [ -x "$HB/test_multi_instances" ]; then
                timeout -k 5 60 "$HB/test_multi_instances" > "$W/logs/multi_check.log" 2>&1; r=$?
                status_line multi_check "$r" $((SECONDS - t0)) "$(tail -n 1 "$W/logs/multi_check.log" | cut -c1-80)"
            else
                status_line multi_check skip 0 "$HB/test_multi_instances missing (hw_session.sh build)"
            fi
            for op in ${MULTI_OPS:-b1 b8 arrive}; do
                run_dkv "hw_multi_instance $op" "${MULTI_LIMIT:-150}" "$W/logs/hw_multi_instance_$op.log" run \
                    experiments/hw_multi_instance.lua -D backend=cuda -D ops="$op" -D insts="${MULTI_INSTS:-1,2,4,8}" -D class_timing="$CT" \
                    ${MULTI_ARGS:-} -o "$W/h5/hw_multi_instance_$op.h5"
            done
            local pk
            for pk in ${MULTI_PROCS:-$MULTI_PROCS_DEFAULT}; do
                op=${pk%%:*}; k=${pk##*:}
                l=$(left)
                if [ "$l" -lt 45 ]; then status_line "multi_proc $op k=$k" skip 0 "deadline: ${l}s left"; continue; fi
                t0=$SECONDS
                DKV="$DKV" LIMIT=$(( l - 25 < 90 ? l - 25 : 90 )) bash scripts/hw_multi_proc.sh "$k" \
                    "$W/h5/hw_multi_proc_${op}_k$k.h5" -D backend=cuda -D op="$op" -D class_timing="$CT" ${MULTI_ARGS:-} > "$W/logs/multi_proc_${op}_k$k.log" 2>&1; r=$?
                status_line "multi_proc $op k=$k" "$r" $((SECONDS - t0)) "$(grep -c '^hw_multi_proc ' "$W/logs/multi_proc_${op}_k$k.log") processes reported"
            done ;;
        ncu)       # one process per validation point under Nsight Compute (HBM bytes per kernel)
            local NCU; NCU=$(find_ncu)
            if [ -z "$NCU" ]; then status_line ncu skip 0 "ncu not found"; continue; fi
            for p in ${NCU_POINTS:-$VAL_POINTS}; do
                local tag=${p/:/_} l lim t0 r
                l=$(left); lim=${NCU_LIMIT:-90}
                if [ "$l" -lt 40 ]; then status_line "ncu $p" skip 0 "deadline: ${l}s left"; continue; fi
                [ "$lim" -gt $((l - 15)) ] && lim=$((l - 15))
                t0=$SECONDS
                # no GEMM warm-up (warm_gemms=false): its ~400 cuBLAS launches would enter the profile, and
                # dkv ncu-import classes cuBLAS GEMMs by launch order
                timeout -k 10 "$lim" "$NCU" --csv --clock-control none --cache-control "${NCU_CACHE:-all}" \
                    --target-processes all \
                    --metrics dram__bytes_read.sum,dram__bytes_write.sum,gpu__time_duration.sum \
                    --log-file "$W/ncu/ncu_$tag.csv" \
                    "$DKV" run experiments/hw_validate.lua -D backend=cuda -D half=real -D warmup=false -D warm_gemms=false \
                    -D point="$p" -o "$W/ncu/prof_$tag.h5" > "$W/logs/ncu_$tag.log" 2>&1; r=$?
                status_line "ncu $p" "$r" $((SECONDS - t0)) \
                    "$(grep -c dram__bytes_read "$W/ncu/ncu_$tag.csv" 2>/dev/null) kernels$( [ $r = 124 ] && echo ", timeout ${lim}s")"
                if grep -q -E "ERR_NVGPUCTRPERM|LibraryNotLoaded|Failed to initialize the profiler" \
                        "$W/logs/ncu_$tag.log" "$W/ncu/ncu_$tag.csv" 2>/dev/null; then
                    status_line ncu stop 0 "the profiler cannot read counters here (see logs/ncu_$tag.log)"; break
                fi
            done ;;
        *) echo "hw_session device: unknown step '$s'"; exit 2 ;;
        esac
    done
    pack
    echo; cat "$OUT/table.txt"
    return $FAILED
}

# ---------------------------------------------------------------- standin (here)
fake_ncu() {   # val.h5 dir: an ncu CSV per validation point from its :real run's kernels table
    $PY - "$1" "$2" <<'PYEOF'
import sys, h5py
f = h5py.File(sys.argv[1], "r")
for name in f["runs"]:
    if not (name.startswith("val:") and name.endswith(":real")):
        continue
    k = f["runs"][name]["kernels"][()]
    cls = ["qkv", "attn", "o_proj", "ffn", "lm_head", "kv_store", "kv_gather", "reorder", "elementwise", "compress"]
    tag = name[4:-5].replace(":", "_")
    rows, kid = [], 0
    def emit(kname, rb, wb, t):
        global kid
        for m, u, v in (("dram__bytes_read.sum", "byte", rb), ("dram__bytes_write.sum", "byte", wb),
                        ("gpu__time_duration.sum", "nsecond", t * 1e9)):
            rows.append('"%d","1","dkv","h","%s(int)","1","7","Command line profiler metrics","%s","%s","%.0f"'
                        % (kid, kname, m, u, v))
        kid += 1
    for i in range(3):
        emit("fill_random_kernel", 0, 1e6, 1e-5)
    for step in sorted(set(k["step_index"])):
        rec = {cls[r["kind"]]: r for r in k[k["step_index"] == step]}
        L = max(1, int(rec["qkv"]["n_launches"])) if "qkv" in rec else 1
        seq = []
        for _ in range(L):
            seq += [("rmsnorm_kernel", "elementwise"), ("nvjet_tst_qkv_TNN", "qkv"), ("rope_store_kernel", "kv_store"),
                    ("flash_kernel", "attn"), ("nvjet_tst_o_TNN", "o_proj"), ("rmsnorm_kernel", "elementwise"),
                    ("nvjet_tst_gu_TNN", "ffn"), ("swiglu_kernel", "elementwise"), ("nvjet_tst_dn_TNN", "ffn")]
        seq += [("rmsnorm_kernel", "elementwise"), ("nvjet_tst_lm_TNT", "lm_head"), ("argmax_conf_kernel", "lm_head"),
                ("gather_kernel", "kv_gather"), ("kv_reorder_kernel", "reorder"), ("relerr_kernel", "compress")]
        count = {}
        for _, c in seq:
            count[c] = count.get(c, 0) + 1
        for kname, c in seq:
            r = rec.get(c)
            if r is None:
                if c in ("kv_gather", "reorder", "compress", "kv_store", "attn"):
                    continue
                emit(kname, 0, 0, 0)
                continue
            n = count[c]
            emit(kname, r["read_bytes"] / n, r["write_bytes"] / n, r["time_s"] / n)
    with open("%s/ncu_%s.csv" % (sys.argv[2], tag), "w") as out:
        out.write("==PROF== Connected to process 1 (dkv) [STAND-IN: written from a simulated run]\n")
        out.write('"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Section Name",'
                  '"Metric Name","Metric Unit","Metric Value"\n')
        out.write("\n".join(rows) + "\n")
PYEOF
}

standin_profile() {   # a profile file of the format dkv profile writes, its times from the roofline (NOT measured)
    $PY - <<'PYEOF'
def t(fl, by, n=1):
    return max(fl / 790e12, by / 4.3e12) + 5e-6 * n
M = [32, 128, 512, 2048]
print('-- STAND-IN profile for tests of hw_session.sh post: roofline times at H200 ceilings, NOT measured')
print('return {\n  format = 1,\n  name = "standin-roofline",\n  complete = true,')
print('  provenance = {gpu = "STAND-IN (roofline, not measured)", sm = "0.0", driver = "0.0", cuda_runtime = "0.0",')
print('    dkv_commit = "standin", date = "1970-01-01T00:00:00Z", command = "hw_session.sh standin", repeats = 3,')
print('    warmup = 0, statistic = "median", measured = false, grid = "standin", models = {"llada-8b"},\n  },')
print('  kernels = {')
for cls, nk in (("qkv", [(12288, 4096)]), ("o", [(4096, 4096)]), ("ffn", [(24576, 4096), (4096, 12288)]),
                ("gemm", [(n, k) for n in (2048, 8192, 32768) for k in (2048, 8192)])):
    print('    %s = {note = "stand-in", fields = {"m", "n", "k"}, extra = {"p10_s", "p90_s", "first_s"}, rows = {' % cls)
    for n, k in nk:
        for m in M:
            s = t(2.0 * m * n * k, 2.0 * (m * k + n * k + m * n))
            print('      {%d, %d, %d, %.6g, 1, %.6g, %.6g, 0.001},' % (m, n, k, s, s, s))
    print('    }},')
print('  },')
print('  copy = {fields = {"dir", "bytes"}, alone = {{0, 4096, 1e-05}, {0, 268435456, 0.0052}, {1, 4096, 1e-05}, '
      '{1, 268435456, 0.0052}}, contended = {{0, 4096, 1.2e-05}, {0, 268435456, 0.0058}, {1, 4096, 1.2e-05}, '
      '{1, 268435456, 0.0058}}},')
print('  first_use = {gemm_s = 0.001, attn_s = 0.0001, other_s = 0.0001},')
print('  host = {per_launch_s = 3e-06, per_gemm_launch_s = 6e-06},\n}')
PYEOF
}

standin() {
    [ $# = 1 ] || { echo "usage: hw_session.sh standin DIR" >&2; exit 2; }
    local D preset=${STANDIN:-a100-80g}
    D=$(here "$1")
    here_dkv
    DKV=${DKV:-$(pick_dkv)}
    local S; S=$(mktemp -d); mkdir -p "$S/h5" "$S/ncu" "$S/logs" "$D"
    local x
    for x in $STUDIES; do
        "$DKV" run "experiments/hw_$x.lua" -D backend=sim -D standin="$preset" ${STANDIN_ARGS:-} \
            -o "$S/h5/hw_$x.h5" > "$S/logs/hw_$x.log" 2>&1 || { cat "$S/logs/hw_$x.log"; return 1; }
    done
    if [ "${STANDIN_VALIDATE:-1}" != 0 ]; then
        "$DKV" run experiments/hw_validate.lua -D backend=sim -D standin="$preset" -o "$S/h5/val.h5" \
            > "$S/logs/validate.log" 2>&1 || { cat "$S/logs/validate.log"; return 1; }
        "$DKV" run experiments/hw_validate.lua -D backend=sim -D standin="$preset" -D set=heldout -o "$S/h5/heldout.h5" \
            > "$S/logs/heldout.log" 2>&1 || { cat "$S/logs/heldout.log"; return 1; }
        "$DKV" run experiments/hw_validate.lua -D backend=sim -D standin="$preset" -D set=novel -o "$S/h5/novel.h5" \
            > "$S/logs/novel.log" 2>&1 || { cat "$S/logs/novel.log"; return 1; }
        fake_ncu "$S/h5/val.h5" "$S/ncu" || return 1
        standin_profile > "$D/profile.lua" || return 1
    fi
    if [[ " $STUDIES " == *" multi_instance "* ]]; then   # issue 11: separate processes (stand-ins)
        local pk op k
        for pk in ${MULTI_PROCS:-$MULTI_PROCS_DEFAULT}; do
            op=${pk%%:*}; k=${pk##*:}
            START_DELAY=0 DKV="$DKV" bash scripts/hw_multi_proc.sh "$k" "$S/h5/hw_multi_proc_${op}_k$k.h5" -D backend=sim \
                -D op="$op" -D standin="$preset" ${STANDIN_ARGS:-} > "$S/logs/multi_proc_${op}_k$k.log" 2>&1 \
                || { cat "$S/logs/multi_proc_${op}_k$k.log"; return 1; }
        done
    fi
    echo "STAND-IN: :real runs are dkv.simulate on $preset" > "$S/status.txt"
    tar czf "$D/hw_h5.tgz" -C "$S" h5 && tar czf "$D/ncu.tgz" -C "$S" ncu && tar czf "$D/logs.tgz" -C "$S" logs status.txt
    echo "STAND-IN (dkv.simulate on $preset), not hardware" > "$D/table.txt"
    rm -rf "$S"
    ls "$D"
}

warm_args() {   # H5 [NAME]: "-D NAME=<value>" when its :real runs were executed with one (NAME default warmup:
                #   hw_lib's warm-up, which the re-simulation must follow: docs/COST_MODEL.md "Cold shapes";
                #   model: hw_validate.lua -D model=dream-7b; warm_gemms: also false for runs recorded before
                #   the backend planned with its warm-up's bucket algorithms, 2026-12-02T03:30Z, whose new GEMM
                #   shapes asked the heuristic: "Bucket algorithms"; warm_compressor: false for runs recorded
                #   before the backend warmed its low-rank compressor at begin, 2026-12-04T14:00Z), else nothing
    $PY - "$1" "${2:-warmup}" <<'PYEOF'
import sys, h5py
runs, key = h5py.File(sys.argv[1], "r")["runs"], sys.argv[2]
# a setting false for runs recorded before the backend did it ("Bucket algorithms"; the compressor warmed at begin)
SINCE = {"warm_gemms": "2026-12-02T03:30:00Z", "warm_compressor": "2026-12-04T14:00:00Z"}
modes = set()
for n in runs:
    if n.endswith(":real"):
        d = runs[n].attrs.get("defines", b"")
        d = d.decode() if isinstance(d, bytes) else str(d)
        v = next((l.split("=", 1)[1] for l in d.splitlines() if l.startswith(key + "=")), "")
        t = runs[n].attrs.get("start_time", b"")
        t = t.decode() if isinstance(t, bytes) else str(t)
        if key in SINCE and v == "" and t and t < SINCE[key]:
            v = "false"
        modes.add(v)
if len(modes) > 1:
    sys.exit("%s: the :real runs disagree on -D %s (%s)" % (sys.argv[1], key, sorted(modes)))
if modes and next(iter(modes)):
    print("-D\n%s=%s" % (key, next(iter(modes))))
PYEOF
}

warm_all() {    # H5: warm_args for warmup, model, warm_gemms and warm_compressor, their lines together; fails as
                #   warm_args does
    local k wa
    for k in warmup model warm_gemms warm_compressor; do
        wa=$(warm_args "$1" $k) || { echo "$wa"; return 1; }
        [ -n "$wa" ] && echo "$wa"
    done
    return 0
}

pick_dkv() {
    local d
    for d in build/hw-release/dkv build/hw-debug/dkv "$HB/dkv"; do
        [ -x "$d" ] && { echo "$ROOT/$d"; return; }
    done
    echo "hw_session: no dkv found (build/hw-release/dkv): set DKV=" >&2; exit 1
}

# ---------------------------------------------------------------- post (here)
post() {
    [ $# -ge 1 ] || { echo "usage: [RES=results/hw-X] hw_session.sh post DIR [DIR...]" >&2; exit 2; }
    local f D dirs=() prof=""
    for D in "$@"; do   # every input checked before anything is created
        D=$(here "$D")
        [ -d "$D" ] || { echo "hw_session post: no folder $D" >&2; exit 2; }
        dirs+=("$D")
    done
    if [ -n "${PROFILE:-}" ]; then
        prof=$(here "$PROFILE")
        [ -f "$prof" ] || { echo "hw_session post: PROFILE=$PROFILE: no such file" >&2; exit 2; }
    fi
    # the GPU the run set was measured on: its preset re-simulates the points, the base of the profile's preset
    GPU_BASE=${GPU_BASE:-h200}
    case $GPU_BASE in *[!a-z0-9_-]*|"") echo "hw_session post: GPU_BASE='$GPU_BASE' is not a preset name" >&2; exit 2 ;; esac
    [ -f "datasets/presets/gpu/$GPU_BASE.lua" ] ||
        { echo "hw_session post: GPU_BASE=$GPU_BASE: no datasets/presets/gpu/$GPU_BASE.lua" >&2; exit 2; }
    export GPU_BASE
    if [ -n "${MULTI_HOST_PROFILE:-}" ]; then
        MULTI_HOST_PROFILE=$(here "$MULTI_HOST_PROFILE")
        [ -f "$MULTI_HOST_PROFILE" ] || { echo "hw_session post: MULTI_HOST_PROFILE=$MULTI_HOST_PROFILE: no such file" >&2; exit 2; }
    fi
    # the runs' GPU against the profiles they will be simulated with (scripts/hw_gpu_check.py; since session 49): an
    # H100 run set under the default GPU_BASE=h200 is a mistake unless said so (GPU_BASE_ANY=1)
    case ${GPU_BASE_ANY:-0} in
    0)  local gprof=$prof
        for D in "${dirs[@]}"; do [ -f "$D/profile.lua" ] && gprof=${prof:-$D/profile.lua}; done
        $PY scripts/hw_gpu_check.py --preset "$GPU_BASE" ${gprof:+--profile "$gprof"} "${dirs[@]}" >&2 || exit 2 ;;
    1)  ;;
    *)  echo "hw_session post: GPU_BASE_ANY must be 0 or 1, got '$GPU_BASE_ANY'" >&2; exit 2 ;;
    esac
    local R
    if [ -n "${RES:-}" ]; then R=$(here "$RES"); else R=results/hw-$(date +%Y%m%d-%H%M%S); fi
    here_dkv
    DKV=${DKV:-$(pick_dkv)}
    [ -e "$R/h5" ] && { echo "hw_session post: $R already holds results: give another RES=" >&2; exit 2; }
    mkdir -p "$R/cmp" "$R/root/datasets" "$R/h5prof" || exit 1
    R=$(cd "$R" && pwd)
    for D in "${dirs[@]}"; do   # the device calls' folders, in order (a later STEPS=ncu call adds profiles)
        # hw_h5*.tgz: a stored call may keep its result files in several archives (each under 4 MiB)
        for f in "$D"/hw_h5*.tgz "$D/ncu.tgz" "$D/logs.tgz"; do [ -f "$f" ] && tar xzf "$f" -C "$R"; done
        [ -f "$D/profile.lua" ] && take_profile "$D/profile.lua" "$R/profile.lua"
        [ -f "$D/bwcurve.txt" ] && [ -s "$D/bwcurve.txt" ] && cp "$D/bwcurve.txt" "$R/"
        [ -f "$D/table.txt" ] && cat "$D/table.txt" >> "$R/table.txt"
    done
    if [ -n "$prof" ]; then   # issue 9: another profile (a later dkv profile call) for the re-simulation
        cp "$prof" "$R/profile.lua"
    fi
    local validation=""   # validation points (or a profile to import) to post, else issue 11's study alone
    for f in h5/val.h5 h5/heldout.h5 h5/novel.h5 profile.lua; do [ -f "$R/$f" ] && validation=1; done
    [ -n "$validation" ] || ls "$R"/h5/hw_multi_*.h5 >/dev/null 2>&1 \
        || { echo "hw_session post: no h5/val.h5, h5/heldout.h5, h5/novel.h5, profile.lua or h5/hw_multi_*.h5 in the folders" >&2; exit 1; }
    chmod -R u+w "$R"
    local log="$R/post.log"; : > "$log"
    grep -qs STAND-IN "$R/table.txt" && echo "STAND-IN DATA: the :real runs are simulations, not hardware" | tee -a "$log"
    if [ -z "$validation" ]; then   # issue 11 only
        post_multi "$R" | tee -a "$log"
        echo "(results in $R: multi.md, post.log, cmp_multi/*.h5, h5/*.h5)"
        return 0
    fi

    # 1. Nsight Compute figures into the unprofiled :real runs (the plans are the same: checked)
    local csv p tag
    for csv in "$R"/ncu/ncu_*.csv; do
        [ -f "$csv" ] || continue
        tag=$(basename "$csv" .csv); tag=${tag#ncu_}; p=${tag/_/:}
        if [ -f "$R/ncu/prof_$tag.h5" ]; then
            $PY - "$R/h5/val.h5" "$R/ncu/prof_$tag.h5" "val:$p:real" <<'PYEOF' | tee -a "$log"
import sys, h5py
a, b, run = h5py.File(sys.argv[1])["runs"][sys.argv[3]]["steps"][()], h5py.File(sys.argv[2])["runs"][sys.argv[3]]["steps"][()], sys.argv[3]
same = len(a) == len(b) and all((a[c] == b[c]).all() for c in ("n_items", "q_tokens", "logit_rows"))
print("%s: profiled and unprofiled plans %s (%d / %d steps)" % (run, "agree" if same else "DIFFER", len(a), len(b)))
PYEOF
        fi
        "$DKV" ncu-import "$csv" "$R/h5/val.h5" --run "val:$p:real" --replace >> "$log" 2>&1 \
            || echo "ncu-import $tag failed (post.log)" | tee -a "$log"
    done

    # 2. every :real run against its :sim twin re-simulated here by this dkv (sim/<file>.h5: the
    #    simulated halves the device wrote came from the code of that day), with issue 6's
    #    tolerances (the ncu one where the run has ncu figures)
    mkdir -p "$R/sim"
    local x script
    for f in "$R"/h5/*.h5; do
        x=$(basename "$f" .h5)
        script=experiments/$x.lua
        local sargs=(-D gpu="$GPU_BASE")   # every hw_*.lua takes the GPU preset (the studies since session 50)
        case $x in val|heldout|novel) script=experiments/hw_validate.lua ;; esac
        case $x in heldout|novel) sargs+=(-D set="$x") ;; esac
        [ -f "$script" ] || continue
        local wa
        wa=$(warm_all "$f") || { echo "re-simulation of $x: $wa" | tee -a "$log"; continue; }
        [ -n "$wa" ] && mapfile -t -O "${#sargs[@]}" sargs <<< "$wa"
        "$DKV" run "$script" -D backend=sim "${sargs[@]}" -o "$R/sim/$x.h5" > "$R/sim/$x.log" 2>&1 \
            || echo "re-simulation of $x failed (sim/$x.log)" | tee -a "$log"
    done
    local list="$R/pairs.txt"
    $PY - "$R"/h5/*.h5 > "$list" <<'PYEOF'
import sys, h5py
for fn in sys.argv[1:]:
    runs = h5py.File(fn)["runs"]
    for n in runs:
        if n.endswith(":real") and n[:-5] + ":sim" in runs:
            print(fn, n[:-5], 1 if "ncu_classes" in runs[n] else 0)
PYEOF
    compare_list "$list" "$R/cmp" "" >> "$log"
    # 2a. issue 9: the machine calibration (docs/COST_MODEL.md "Machine calibration"): the held-out
    #     points re-simulated with the kernel scale of this machine's in-sample points (cmp/mach_*.h5)
    machine_cal "$R" "$list" "$log"
    # 2b. issue 9: HBM bytes per kernel class, counted (this dkv's core/cost, through the
    #     re-simulated twins) against Nsight Compute, reads and writes apart (ncu_bytes.md)
    if [ -f "$R/sim/val.h5" ] && $PY - "$R/h5/val.h5" <<'PYEOF'
import sys, h5py
sys.exit(0 if any("ncu_classes" in r for r in h5py.File(sys.argv[1])["runs"].values()) else 1)
PYEOF
    then
        $PY scripts/ncu_bytes.py "$R/h5/val.h5" "$R/sim/val.h5" -o "$R/ncu_bytes.md" > /dev/null \
            || echo "ncu_bytes.py failed" | tee -a "$log"
    fi

    # 3. calibration from the fit set (never the validation runs), then the validation points
    #    re-simulated under the fitted preset and compared again (--calibration: disjointness)
    local runs=() fit=() n
    # (not separate processes, nor runs of k > 1 instances: steps of instances sharing the GPU are not
    # one engine's cost model; issue 11.  Single-instance multi points stay in, as on 2026-11-29)
    for f in "$R"/h5/hw_*.h5; do [ -f "$f" ] && [[ "$f" != */hw_multi_proc* ]] && fit+=("$f"); done
    while read -r f n _; do
        [[ "$f" == */h5/hw_* && "$f" != */h5/hw_multi_proc* && ! "$n" =~ ^multi:.*inst=[2-9] ]] && runs+=(--run "$n:real")
    done < "$list"
    cp -r datasets/presets datasets/profiles "$R/root/datasets/"
    local pdir="$R/root/datasets/presets/gpu" bw=() sims=() x
    local preset="$pdir/h200-hw.lua"
    [ -s "$R/bwcurve.txt" ] && bw=(--bwcurve "$R/bwcurve.txt")
    if [ ${#runs[@]} -eq 0 ]; then
        echo "calibration: no fit-set runs (h5/hw_*.h5)" | tee -a "$log"
    elif [ "$GPU_BASE" != h200 ]; then   # the two-stage fit builds on the h200 preset (h200-hw1, h200-hw)
        echo "calibration: skipped: the fit-set calibration is the H200's (presets h200-hw1, h200-hw), the runs are GPU_BASE=$GPU_BASE's" | tee -a "$log"
    elif ! "$DKV" calibrate "${fit[@]}" "${runs[@]}" "${bw[@]}" -o "$pdir/h200-hw1.lua" > "$R/calibrate1.txt" 2>&1; then
        echo "calibration: nothing fitted (calibrate1.txt)" | tee -a "$log"; cat "$R/calibrate1.txt" >> "$log"
    else
        # stage 1 fitted launch overhead, bw_curve and PCIe (h200-hw1).  Stage 2: the fit studies
        # re-simulated under h200-hw1 by this simulator (rooflines under the fitted curve), their
        # kernel classes paired with the measured ones: each class's scale and launch cost
        mkdir -p "$R/resim"
        for f in "${fit[@]}"; do
            x=$(basename "$f" .h5)
            "$DKV" run --root "$R/root" "experiments/$x.lua" -D backend=sim -D gpu=h200-hw1 -o "$R/resim/$x.h5" \
                > "$R/resim/$x.log" 2>&1 && sims+=(--sim "$R/resim/$x.h5") || echo "re-simulation of $x failed" | tee -a "$log"
        done
        # the same fit, to ship: calibrate.cmd (from the project root; writes h200-calibrated.lua)
        printf 'dkv calibrate %s %s %s %s -o datasets/presets/gpu/h200-calibrated.lua\n' "${fit[*]}" \
            "$(printf "'%s' " "${runs[@]}")" "${bw[*]}" "${sims[*]}" > "$R/calibrate.cmd"
        if "$DKV" calibrate "${fit[@]}" "${runs[@]}" "${bw[@]}" "${sims[@]}" -o "$preset" > "$R/calibrate.txt" 2>&1; then
            local ge=""
            # gemm_eff is only for a preset without per-class fits (it would count the GEMMs' efficiency twice)
            grep -q "^  qkv  *scale" "$R/calibrate.txt" || ge=$(awk '/^gemm_eff /{print $2}' "$R/calibrate.txt")
            echo "calibrated: $preset ($(grep -c '^  [a-z_]* *scale' "$R/calibrate.txt") kernel classes${ge:+, gemm_eff $ge})" | tee -a "$log"
            "$DKV" run --root "$R/root" experiments/hw_validate.lua -D backend=sim -D gpu=h200-hw \
                ${ge:+-D gemm_eff=$ge} -o "$R/h5/valcal.h5" >> "$log" 2>&1 || echo "re-simulation failed" | tee -a "$log"
            awk '$1 ~ /val\.h5$/' "$list" > "$R/pairs_cal.txt"
            compare_list "$R/pairs_cal.txt" "$R/cmp" "$preset" >> "$log"
        else
            echo "calibration (stage 2) failed (calibrate.txt)" | tee -a "$log"; cat "$R/calibrate.txt" >> "$log"
        fi
    fi

    # 3b. issue 9: the measured profile imported, the held-out points re-simulated under it
    [ -f "$R/profile.lua" ] && import_profile "$R" "$list" "$pdir" "$log"

    # 4. summary.md (and multi.md when the call ran the multi-instance study, issue 11)
    summary "$R" > "$R/summary.md"
    [ -s "$R/ncu_bytes.md" ] && { printf '\n## HBM bytes per kernel class against Nsight Compute (issue 9)\n\n'; cat "$R/ncu_bytes.md"; } >> "$R/summary.md"
    heldout_summary "$R" >> "$R/summary.md"
    # how far each held-out point's run-level figures move when every kernel runs up to 2 % faster or slower (the
    # machines' spread), then up to 5 % (every step within the step target), beside this run set's measured values
    # (scripts/conditioning.py; ~2 and ~4 s); the nv:* points the same way (since session 35: conditioning_novel_*.md)
    local set band what who wca
    for set in heldout novel; do
        [ -f "$R/h5/$set.h5" ] || continue
        who="held-out"
        [ $set = novel ] && who="nv:*"
        local wc=()   # the set's recorded process (warm_all), as its re-simulation had it
        wca=$(warm_all "$R/h5/$set.h5") || { echo "conditioning of $set: $wca" | tee -a "$log"; continue; }
        [ -n "$wca" ] && mapfile -t wc <<< "$wca"
        for band in machine step; do
            what="every kernel within 2 %: the machines' spread"
            [ $band = step ] && what="every kernel within 5 %: the step target"
            local out="$R/conditioning_$band.md"
            [ $set = novel ] && out="$R/conditioning_novel_$band.md"
            if $PY scripts/conditioning.py --dkv "$DKV" --set $set --band $band --measured "$R" -D gpu="$GPU_BASE" "${wc[@]}" \
                    > "$out" 2>> "$log"; then
                { printf '\n## How conditioned the %s run-level figures are, %s (issue 9; scripts/conditioning.py --set %s --band %s, the shipped preset)\n\n' "$who" "$what" $set $band
                  cat "$out"; } >> "$R/summary.md"
            else
                echo "scripts/conditioning.py --set $set --band $band failed (post.log)" | tee -a "$log"
            fi
        done
    done
    cat "$R/summary.md"
    ls "$R"/h5/hw_multi_*.h5 >/dev/null 2>&1 && post_multi "$R" | tee -a "$log"
    echo "(results in $R: summary.md, post.log, cmp/*.h5, h5/*.h5)"
}

# ---------------------------------------------------------------- post_multi (here): issue 11
# The simulated halves re-simulated here by this dkv on MULTI_SIM_GPU (default: GPU_BASE, the GPU the runs
# were measured on; h200 unless set), with the device run's -D settings and -D host = the host time per step measured on each
# operating point's inst=1 real run (sim_multi/<file>.h5; the :sim runs the device wrote came from
# the code and preset of that day); every multi:<op>:<point>:real against its re-simulated :sim twin
# (dkv compare, issue 11's tolerances: throughput and p99 latency 8 %, peak KV 1 %, fragmentation
# 1 pp), the separate processes merged, and $R/multi.md: the comparison table and the table of
# CLAIMS row 8 (criterion first).
MULTI_TOLS=(--tolerance run.throughput_rps=8% --tolerance run.latency_p99_s=8% --tolerance run.peak_kv_bytes=1%
            --tolerance 'run.kv_*frag*=0.01')
# issue 11: the host table (resume_s, handover_s) of a host-only profile grafted onto the shipped
# profile of GPU preset GPU (the re-simulation's), under ROOT/datasets (presets and profiles copied):
# -D gpu=GPU with --root ROOT re-simulates under it.  Prints the grafted host line.
graft_host() {   # HOST_PROFILE ROOT GPU
    local pname base
    pname=$(sed -n 's/^ *profile = "\(.*\)",*$/\1/p' "datasets/presets/gpu/$3.lua" | head -n 1)
    [ -n "$pname" ] || { echo "graft_host: datasets/presets/gpu/$3.lua names no profile" >&2; return 1; }
    base=datasets/profiles/$pname.lua
    [ -f "$base" ] || { echo "graft_host: no shipped profile $base" >&2; return 1; }
    rm -rf "$2"; mkdir -p "$2/datasets" && cp -r datasets/presets datasets/profiles "$2/datasets/" || return 1
    $PY - "$1" "$base" "$2/datasets/profiles/$pname.lua" <<'PYEOF'
import re, sys
src, base, dst = sys.argv[1:4]
host = re.search(r"(?m)^  host = \{.*handover_s.*\},\n", open(src).read())
if not host:
    sys.exit("graft_host: %s has no host table with handover_s" % src)
txt, n = re.subn(r"(?m)^  host = \{.*\},\n", lambda m: "  -- host: grafted from %s (dkv profile --grid host)\n" % src
                 + host.group(0), open(base).read())
if n != 1:
    sys.exit("graft_host: %s: expected one host table, found %d" % (base, n))
open(dst, "w").write(txt)
print("host table of %s grafted onto %s: %s" % (src, base, host.group(0).strip()))
PYEOF
}

post_multi() {
    local R=$1 f n i=0 c x defs
    local G=${MULTI_SIM_GPU:-${GPU_BASE:-h200}}   # the re-simulation's GPU preset
    DKV=${DKV:-$(pick_dkv)}
    mkdir -p "$R/cmp_multi" "$R/sim_multi"
    local hp=${MULTI_HOST_PROFILE:-} rootargs=()
    [ -z "$hp" ] && [ -f "$R/host_profile.lua" ] && hp=$R/host_profile.lua
    if [ -n "$hp" ]; then
        graft_host "$hp" "$R/root_multi" "$G" || return 1
        rootargs=(--root "$R/root_multi")
    fi
    for f in "$R"/h5/hw_multi_instance*.h5; do
        [ -f "$f" ] || continue
        x=$(basename "$f" .h5)
        # the device run's -D settings (not backend, standin, half, warmup, gpu, host, nor the real half's class_timing,
        # sm_clock, clock_probe, l2_flush) and the measured host times
        defs=$($PY - "$f" <<'PYEOF'
import sys, h5py
sys.path.insert(0, "scripts")
from hw_host_split import host_split
runs = h5py.File(sys.argv[1], "r")["runs"]
defs, hosts, rels = None, [], []
for n in runs:
    if n.endswith(":real") and defs is None:
        d = runs[n].attrs.get("defines", b"")
        defs = d.decode() if isinstance(d, bytes) else str(d)
    if n.startswith("multi:") and n.endswith(":inst=1,clock=real:real") and "steps" in runs[n]:
        # the GPU's idle time between consecutive steps, split into planning and release
        # (scripts/hw_host_split.py; hw_multi_instance.lua's measured_host)
        hs = host_split(runs[n]["steps"][()])
        if hs:
            hosts.append("%s=%.9g" % (n.split(":")[1], hs[0]))
            rels.append("%s=%.9g" % (n.split(":")[1], hs[1]))
out = []
for line in (defs or "").splitlines():
    k = line.split("=", 1)[0]
    # (nor the real half's own settings: hw_lib.lua refuses them with -D backend=sim, as they cannot take effect)
    if line and k not in ("backend", "standin", "half", "warmup", "gpu", "host", "release", "handover",
                          "class_timing", "sm_clock", "clock_probe", "l2_flush"):
        out += ["-D", line]
if hosts:
    out += ["-D", "host=" + ",".join(hosts), "-D", "release=" + ",".join(rels)]
print("\n".join(out))
PYEOF
)
        local dargs=()
        [ -n "$defs" ] && mapfile -t dargs <<< "$defs"
        if ! "$DKV" run "${rootargs[@]}" experiments/hw_multi_instance.lua -D backend=sim -D gpu="$G" \
                "${dargs[@]}" ${MULTI_SIM_ARGS:-} -o "$R/sim_multi/$x.h5" > "$R/sim_multi/$x.log" 2>&1; then
            echo "re-simulation of $x failed (sim_multi/$x.log): $(grep -m1 -v '^hw' "$R/sim_multi/$x.log" | cut -c1-200)"
            continue
        fi
        echo "re-simulated $x on $G${hp:+ (host table of $hp)}: ${dargs[*]} ${MULTI_SIM_ARGS:-}"
        while read -r n; do
            i=$((i + 1)); c=$R/cmp_multi/$(printf %03d $i)
            "$DKV" compare "$f" "$R/sim_multi/$x.h5" --real-run "$n:real" --sim-run "$n:sim" "${MULTI_TOLS[@]}" -o "$c.h5" > "$c.txt" 2>&1
            echo "$? $n" >> "$R/cmp_multi/exit.txt"
        done < <($PY -c '
import sys, h5py
runs, sims = h5py.File(sys.argv[1])["runs"], h5py.File(sys.argv[2])["runs"]
for n in runs:
    if n.endswith(":real") and n[:-5] + ":sim" in sims:
        print(n[:-5])' "$f" "$R/sim_multi/$x.h5")
    done
    $PY scripts/hw_multi_table.py "$R" > "$R/multi.md"
    cat "$R/multi.md"
}

# issue 9: a device call's profile.lua becomes RES/profile.lua, except a memory-only one (dkv profile
# --grid memory: no kernel rows, a memory table): its memory table is grafted onto the profile so far
# (an earlier folder's, else the one the shipped h200 preset names), replacing any memory table there,
# so the held-out points are re-simulated with measured kernel times and the new memory figures.
take_profile() {   # SRC DST
    # issue 11: a host-only profile (dkv profile --grid host: no kernel rows, a host table with
    # handover_s) is kept beside, as host_profile.lua: post_multi grafts its host table (graft_host)
    if ! grep -q -E '^ +\{[0-9]' "$1" && grep -q '^  host = {.*handover_s' "$1" && ! grep -q '^  memory = {' "$1"; then
        cp "$1" "$(dirname "$2")/host_profile.lua"
        echo "profile: $1 is host-only: kept as $(dirname "$2")/host_profile.lua (post_multi grafts its host table)"
        return
    fi
    if grep -q -E '^ +\{[0-9]' "$1" || ! grep -q '^  memory = {' "$1"; then cp "$1" "$2"; return; fi
    local base=$2
    if [ ! -f "$base" ]; then
        base=datasets/profiles/$(sed -n 's/^ *profile = "\(.*\)",*$/\1/p' datasets/presets/gpu/h200.lua | head -n 1).lua
        [ -f "$base" ] || { echo "take_profile: no profile to graft $1's memory table onto" >&2; cp "$1" "$2"; return; }
    fi
    $PY - "$1" "$base" "$2" <<'PYEOF'
import re, sys
src, base, dst = sys.argv[1:4]
mem = re.search(r"(?ms)^  memory = \{.*?\},\n", open(src).read())
txt = re.sub(r"(?ms)^  memory = \{.*?\},\n", "", open(base).read())
i = txt.rstrip().rfind("}")
txt = txt[:i] + "  -- memory: grafted from %s (dkv profile --grid memory)\n" % src + mem.group(0) + txt[i:]
open(dst, "w").write(txt)
print("profile: the memory table of %s grafted onto %s" % (src, base))
PYEOF
}

# issue 9: the measured profile imported (datasets/profiles/<name>.lua under RES/root and a preset
# h200-measured naming it), the held-out points re-simulated under it and compared (cmp/prof_*.h5)
import_profile() {   # RES pairs.txt preset-dir post.log
    local R=$1 list=$2 pdir=$3 log=$4 pname f
    pname=$(sed -n 's/^  name = "\(.*\)",$/\1/p' "$R/profile.lua" | head -n 1)
    mkdir -p "$R/root/datasets/profiles" && cp -r datasets/workloads "$R/root/datasets/"
    cp "$R/profile.lua" "$R/root/datasets/profiles/${pname:-unnamed}.lua"
    printf 'return {base = "%s", name = "%s-measured", profile = "%s"}\n' "$GPU_BASE" "$GPU_BASE" "$pname" \
        > "$pdir/$GPU_BASE-measured.lua"
    echo "profile: ${pname:-NO NAME} ($(grep -c -E '^ +\{[0-9]' "$R/profile.lua") rows, $(grep -m1 -o 'complete = [a-z]*' "$R/profile.lua"))" \
        | tee -a "$log"
    # the held-out, the nv:* (since session 49) and the in-sample validation points, each set the run set has, re-simulated
    # under the profile and compared (cmp/prof_, profnv_, profval_*.h5)
    local set prefix what sargs w
    for set in heldout novel val; do
        [ -f "$R/h5/$set.h5" ] || continue
        case $set in
        heldout) prefix=prof_ what="held-out points" sargs=(-D set=heldout) ;;
        novel) prefix=profnv_ what="nv:* points" sargs=(-D set=novel) ;;
        val) prefix=profval_ what="validation points" sargs=() ;;
        esac
        mapfile -t w < <(warm_all "$R/h5/$set.h5")
        if "$DKV" run --root "$R/root" experiments/hw_validate.lua "${sargs[@]}" -D backend=sim -D gpu="$GPU_BASE-measured" \
                "${w[@]}" -o "$R/h5prof/$set.h5" > "$R/${set}_prof.log" 2>&1; then
            compare_file "$list" "$set.h5" "$R/h5prof/$set.h5" "$R/cmp/$prefix" "the profile's re-simulation" >> "$log"
        else
            echo "$what under the profile: not simulated ($(grep -m1 -v -E "^hw:|^stack|^\s" "$R/${set}_prof.log" | cut -c1-200))" \
                | tee -a "$log"
        fi
    done
}

machine_cal() {   # RES pairs.txt post.log: h5mach/heldout.h5, cmp/mach_NNN.h5, machine_cal.txt
    local R=$1 list=$2 log=$3 s wa sargs=()
    [ -f "$R/h5/heldout.h5" ] && [ -f "$R/h5/val.h5" ] || return 0
    $PY scripts/machine_calibrate.py "$R" > "$R/machine_cal.txt" 2>> "$log" \
        || { echo "machine calibration: none (post.log)" | tee -a "$log"; return 0; }
    s=$(sed -n 's/.*kernel_scale = 1 \/ (1 + b) = //p' "$R/machine_cal.txt")
    echo "machine calibration: kernel_scale $s (machine_cal.txt)" | tee -a "$log"
    wa=$(warm_all "$R/h5/heldout.h5") || { echo "machine calibration: $wa" | tee -a "$log"; return 0; }
    [ -n "$wa" ] && mapfile -t sargs <<< "$wa"
    mkdir -p "$R/h5mach"
    if ! "$DKV" run experiments/hw_validate.lua -D set=heldout -D backend=sim -D kernel_scale="$s" "${sargs[@]}" \
            -o "$R/h5mach/heldout.h5" > "$R/h5mach/heldout.log" 2>&1; then
        echo "machine calibration: the held-out re-simulation failed (h5mach/heldout.log)" | tee -a "$log"
        return 0
    fi
    compare_file "$list" heldout.h5 "$R/h5mach/heldout.h5" "$R/cmp/mach_" \
        "the machine-calibrated re-simulation, kernel_scale $s" >> "$log"
}

compare_file() {   # pairs.txt NAME.h5 SIM.h5 OUT-PREFIX WHAT: each pair of NAME.h5 against SIM.h5's twin
    local f n i=0
    while read -r f n _; do
        [[ "$f" == */"$2" ]] || continue
        i=$((i + 1))
        echo "== compare $n ($2 against $5)"
        "$DKV" compare "$f" "$3" --real-run "$n:real" --sim-run "$n:sim" "${TOLS[@]}" -o "$4$(printf %03d $i).h5" 2>&1
        echo "== exit $?"
    done < "$1"
}

compare_list() {   # pairs.txt outdir calibration-preset|""
    local f n has i=0 extra cal=$3 sim tagc
    while read -r f n has; do
        i=$((i + 1)); extra=(); sim=$f; tagc=""
        [ "$has" = 1 ] && extra=("${NCU_TOL[@]}")
        if [ -n "$cal" ]; then
            sim=${f%/val.h5}/valcal.h5; tagc="cal_"; extra+=(--calibration "$cal")
        else
            sim=$(dirname "$(dirname "$f")")/sim/$(basename "$f")
        fi
        [ -f "$sim" ] || continue
        echo "== compare $n ($(basename "$f") against $(basename "$(dirname "$sim")")/$(basename "$sim")${cal:+, calibrated})"
        "$DKV" compare "$f" "$sim" --real-run "$n:real" --sim-run "$n:sim" "${TOLS[@]}" "${extra[@]}" \
            -o "$2/${tagc}$(printf %03d $i).h5" 2> "$2/.err"
        echo "== exit $?"; cat "$2/.err"; rm -f "$2/.err"
    done < "$1"
}

heldout_summary() {   # issue 9's targets on every held-out point (ho:*, and nv:*), under each simulated half compared
    $PY - "$1" <<'PYEOF'
import sys, glob, os, h5py
R = sys.argv[1]
G = os.environ.get("GPU_BASE", "h200")
T = {"step": 0.05, "p50": 0.08, "p99": 0.08, "tok": 0.05, "mem": 0.02}
def summ(fn, run):
    try:
        return dict(h5py.File(fn, "r")["runs"][run]["summary"].attrs)
    except (OSError, KeyError):
        return None
def sim_dev(s):
    if s is None:
        return None, ""
    if "peak_device_bytes" in s and float(s["peak_device_bytes"]) > 0:
        m = s.get("device_mem_model_name", b"")
        m = m.decode() if isinstance(m, bytes) else str(m)
        return float(s["peak_device_bytes"]), "peak_device_bytes" + (", " + m.split(":")[0] if m else "")
    if all(k in s for k in ("peak_allocated", "peak_kv_bytes", "kv_capacity_bytes")):
        return float(s["peak_allocated"]) - float(s["peak_kv_bytes"]) + float(s["kv_capacity_bytes"]), "acct+arena"
    return None, ""
rows = []
for fn in sorted(glob.glob(R + "/cmp/*.h5")):
    tag = os.path.basename(fn)
    src = ("profile" if tag.startswith("prof") else "calibrated" if tag.startswith("cal_") else
           "machine-calibrated " + G if tag.startswith("mach_") else "shipped " + G)
    f = h5py.File(fn, "r")
    for rn in f["runs"]:
        r = f["runs"][rn]
        real = r["params"].attrs["real_run"]
        real = real.decode() if isinstance(real, bytes) else real
        if not real.startswith(("ho:", "nv:")) and not (real.startswith("val:") and src != "calibrated"):
            continue
        hf = {"ho:": "/heldout.h5", "nv:": "/novel.h5"}.get(real[:3], "/val.h5")
        simfile = R + {"profile": "/h5prof", "machine-calibrated " + G: "/h5mach"}.get(src, "/sim") + hf
        q = {x["quantity"].decode(): x for x in r["compare_quantities"][()]}
        def g(name, stat):
            x = q.get(name)
            return None if x is None or x["n"] == 0 else float(x[stat])
        base = real[:-5]
        dev = summ(R + "/h5" + hf, base + ":device")
        meas = float(dev["mem_used_peak_bytes"]) if dev and "mem_used_peak_bytes" in dev else None
        simd, how = sim_dev(summ(simfile, base + ":sim"))
        mem = (simd - meas) / meas if meas and simd is not None else None
        rows.append((base[3:] if base.startswith("ho:") else base, src, int(r["summary"].attrs["steps_paired"]), g("step.time_s", "mean_abs_err"),
                     g("run.latency_p50_s", "total_err"), g("run.latency_p99_s", "total_err"),
                     g("run.tokens_per_s", "total_err"), mem, how))
if rows:
    stand = os.path.exists(R + "/status.txt") and "STAND-IN" in open(R + "/status.txt").read()
    print("## Held-out validation (issue 9), and the in-sample validation points (val:*)%s\n" % (" -- STAND-IN DATA, NOT HARDWARE" if stand else ""))
    print("Every held-out point (experiments/hw_heldout_points.lua; nv:*, its points at other block lengths and "
          "steps per block, since session 34), under each simulated half: the shipped {G} "
          "preset re-simulated by this dkv, the same with this machine's kernel scale from its in-sample points "
          "(machine-calibrated {G}: docs/COST_MODEL.md \"Machine calibration\", machine_cal.txt), and the preset "
          "naming the measured profile ({G}-measured) where the simulator reads profiles.  Targets (issue 9): step latency mean |error| <= 5 %, request latency p50 and "
          "p99 <= 8 %, tokens/s <= 5 %, peak device memory <= 2 % against cudaMemGetInfo (measured: total - least "
          "free over the run; simulated: peak_device_bytes = the profile's fixed terms + weights + the whole KV arena + "
          "the backend's counted buffers (core/model/devmem.h), marked partial where the profile has no memory "
          "section; where the simulator has none (acct+arena) its "
          "peak_allocated - peak_kv_bytes + the whole KV arena, which leaves out the CUDA context, cuBLAS workspace "
          "and backend scratch).  Error = (sim - real) / real.  '-': not measured.\n".replace("{G}", G))
    print("| point | simulated with | steps paired | step mean abs | | p50 | | p99 | | tokens/s | | peak device mem | |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    def c(v, lim, signed=True):
        if v is None:
            return "- | -"
        return ("%+.1f%%" if signed else "%.1f%%") % (100 * v) + " | " + ("PASS" if abs(v) <= lim else "MISS")
    tot = {}
    # held-out first, then the points at other blocks and steps (nv:*), then the in-sample validation points
    rows.sort(key=lambda x: (x[0].startswith("val:"), x[0].startswith("nv:")))
    for pt, src, n, st, p50, p99, tok, mem, how in rows:
        print("| %s | %s | %d | %s | %s | %s | %s | %s |" % (pt, src, n, c(st, T["step"], False), c(p50, T["p50"]),
              c(p99, T["p99"]), c(tok, T["tok"]), c(mem, T["mem"]) + (" (%s)" % how if how else "")))
        for k, v in (("step", st), ("p50", p50), ("p99", p99), ("tok", tok), ("mem", mem)):
            a = tot.setdefault((src + (" (in-sample val:*)" if pt.startswith("val:") else
                                       " (other blocks and steps, nv:*)" if pt.startswith("nv:") else ""), k), [0, 0])
            if v is not None:
                a[1] += 1
                a[0] += abs(v) <= T[k]
    print()
    for src in sorted({k[0] for k in tot}):
        print("- %s: %s" % (src, ", ".join("%s %d / %d" % (k, tot[(src, k)][0], tot[(src, k)][1])
                                            for k in ("step", "p50", "p99", "tok", "mem"))))
    print()
PYEOF
    if [ -f "$1/profile.lua" ]; then
        echo "## Profile (dkv profile)"; echo; echo '```'
        sed -n '/^  provenance = {/,/^  },/p' "$1/profile.lua"
        grep -E "^    [a-z_]+ = \{$" "$1/profile.lua" | while read -r t _; do
            printf '%s: %s rows\n' "$t" "$(awk -v t="    $t = {" '$0 == t {on = 1; next} on && /^    [a-z_]+ = \{$/ {on = 0} on && /^ +\{[0-9]/ {n++} END {print n + 0}' "$1/profile.lua")"
        done
        grep -E "^  (first_use|host) = " "$1/profile.lua"
        sed -n '/^  memory = {/,/},$/p' "$1/profile.lua"
        echo '```'
        [ -f "$1/heldout_prof.log" ] && ! grep -q "^hw validate" "$1/heldout_prof.log" \
            && { echo; echo "The held-out points were not re-simulated under the profile: $(grep -m1 -v -E "^hw:|^stack|^\s" "$1/heldout_prof.log" | cut -c1-200)"; }
        echo
    fi
}

summary() {
    $PY - "$1" <<'PYEOF'
import sys, glob, os, h5py
R = sys.argv[1]
rows = []
for fn in sorted(glob.glob(R + "/cmp/*.h5")):
    if os.path.basename(fn).startswith(("profval_", "mach_")):
        continue   # the validation points under the profile, the machine calibration: in the held-out section's table
    f = h5py.File(fn)
    for rn in f["runs"]:
        r = f["runs"][rn]
        q = {x["quantity"].decode(): x for x in r["compare_quantities"][()]}
        rows.append((os.path.basename(fn).startswith("cal_"), r["params"].attrs["real_run"], q, r["summary"].attrs))
def v(q, name, stat="mean_abs_err", pct=True):
    x = q.get(name)
    if x is None or x["n"] == 0:
        return "-"
    val = x[stat]
    return ("%+.1f%%" if stat in ("total_err", "bias") else "%.1f%%") % (100 * val) if x["kind"] == 0 else "%.2fpp" % (100 * val)
stand = os.path.exists(R + "/status.txt") and "STAND-IN" in open(R + "/status.txt").read()
print("# Hardware session: simulated vs measured%s\n" % (" -- STAND-IN DATA (simulations), NOT HARDWARE" if stand else ""))
print("Tolerances (issue 6): step latency 8 % (mean absolute error per step), HBM bytes per kernel class 5 % (ncu, "
      "error of the totals), peak memory 2 %, fragmentation 1 pp.  Error = (sim - real) / real; pp: absolute.  "
      "steps: paired (different plans, left out); cfg: configuration differences that matter (should be 0).\n")
cols = [("step.time_s", "mean_abs_err"), ("step.time_s", "bias"), ("run.tokens_per_s", "total_err"),
        ("run.pcie_h2d_bytes", "total_err"), ("run.peak_kv_bytes", "total_err"), ("run.peak_allocated", "total_err"),
        ("run.kv_external_frag_peak", "total_err"), ("ncu.all.bytes", "total_err")]
for cal in (False, True):
    sel = [x for x in rows if x[0] == cal]
    if not sel:
        continue
    print("## %s\n" % ("Validation points under the calibrated preset (h200-hw)" if cal else
                       "Every pair under the shipped preset (%s)" % os.environ.get("GPU_BASE", "h200")))
    print("| run | steps | cfg | " + " | ".join("%s %s" % (c, {"mean_abs_err": "mean abs", "bias": "bias",
                                                               "total_err": "total"}[s]) for c, s in cols)
          + " | ncu classes over 5 % | tolerances exceeded |")
    print("|" + "---|" * (len(cols) + 5))
    for _, name, q, s in sel:
        bad = [k[4:-6] for k, x in q.items() if k.startswith("ncu.") and k.endswith(".bytes") and x["n"]
               and abs(x["total_err"]) > 0.05]
        exc = [k for k, x in q.items() if x["exceeded"]]
        print("| %s | %d (%d) | %d | %s | %s | %s |" % (name, s["steps_paired"], s["steps_plan_mismatch"],
              s["config_diffs_matter"], " | ".join(v(q, c, st) for c, st in cols), ", ".join(bad) or "-",
              "%d: %s" % (len(exc), ", ".join(exc)) if exc else "0"))
    print()
    val = [x for x in sel if x[1].startswith("val:")]
    if val:
        def count(pred):
            ok = sum(1 for _, _, q, _ in val if pred(q) is True)
            tot = sum(1 for _, _, q, _ in val if pred(q) is not None)
            return "%d / %d" % (ok, tot)
        def tol(qname, lim, stat="mean_abs_err"):
            def f(q):
                x = q.get(qname)
                return None if x is None or x["n"] == 0 else bool(abs(x[stat]) <= lim)
            return f
        def ncu_ok(q):
            xs = [x for k, x in q.items() if k.startswith("ncu.") and k.endswith(".bytes") and k != "ncu.all.bytes" and x["n"]]
            return None if not xs else all(abs(x["total_err"]) <= 0.05 for x in xs)
        def peak_ok(q):
            xs = [x for k, x in q.items() if k.startswith("run.peak_") and x["n"]]
            return None if not xs else all(abs(x["total_err"]) <= 0.02 for x in xs)
        def frag_ok(q):
            xs = [x for k, x in q.items() if k.startswith("run.") and "frag" in k and x["n"]]
            return None if not xs else all(abs(x["total_err"]) <= 0.01 for x in xs)
        print("Targets over the %d validation points (workloads w1-w3 x prefix/dual/sparse, none used for "
              "calibration): step latency <= 8 %%: %s; HBM bytes per class <= 5 %% (every class): %s; peak memory "
              "<= 2 %% (every peak_*): %s; fragmentation <= 1 pp: %s\n"
              % (len(val), count(tol("step.time_s", 0.08)), count(ncu_ok), count(peak_ok), count(frag_ok)))
PYEOF
    $PY - "$1" <<'PYEOF'
import sys, glob, os, re, h5py
R = sys.argv[1]
MiB, GiB = 2.0**20, 2.0**30
def sim_of(fn, runs, base):   # the simulated half as re-simulated by this dkv (sim/), else the file's own
    for f in (os.path.join(R, "sim", os.path.basename(fn)), fn):
        try:
            r = h5py.File(f, "r")["runs"]
            if base + ":sim" in r:
                return dict(r[base + ":sim"]["summary"].attrs)
        except OSError:
            pass
    return {}
rows = []
for fn in sorted(glob.glob(R + "/h5/*.h5")):
    runs = h5py.File(fn, "r")["runs"]
    for n in runs:
        if not n.endswith(":device"):
            continue
        d = dict(runs[n]["summary"].attrs)
        if "mem_used_peak_bytes" not in d or "arena_bytes" not in d or "weights_bytes" not in d:
            continue
        s = sim_of(fn, runs, n[:-7])
        # dkv's own buffers besides weights and arena, as the backend allocated them; older runs
        # (no devmem_allocated_bytes): scratch_bytes + the 32 MiB cuBLASLt workspace (the canvases and
        # the offload buffers are then missing)
        if "devmem_allocated_bytes" in d:
            own, how = float(d["devmem_allocated_bytes"]), "allocated"
        else:
            own, how = float(d.get("scratch_bytes", 0)) + 32 * MiB, "scratch+ws"
        used = float(d["mem_used_peak_bytes"])
        rest = used - float(d["weights_bytes"]) - float(d["arena_bytes"]) - own
        rows.append((n[:-7], used, float(d["weights_bytes"]), float(d["arena_bytes"]), own, how,
                     float(d["devmem_counted_bytes"]) if "devmem_counted_bytes" in d else None, rest,
                     float(s["device_counted_bytes"]) if "device_counted_bytes" in s else None,
                     float(s["device_fixed_bytes"]) if "device_fixed_bytes" in s else None))
fixed = None
if os.path.exists(R + "/profile.lua"):
    m = re.search(r"(?ms)^  memory = \{(.*?)\},", open(R + "/profile.lua").read())
    if m:
        v = {k: float(x) for k, x in re.findall(r"(\w+)_bytes = (-?[0-9.e+]+)", m.group(1))}
        fixed = v.get("context", 0) + v.get("libraries", 0) + v.get("blas_handle", 0) + v.get("first_launch", 0)
if rows:
    print("## Device memory (informational, no tolerance)\n")
    print("Measured: cudaMemGetInfo's peak use over the run (total - least free).  Its parts: the weights, the KV "
          "arena (allocated whole), dkv's own other buffers (devmem_allocated_bytes: what the backend passed to "
          "cudaMalloc, core/model/devmem.h; runs without it: scratch_bytes + the 32 MiB cuBLASLt workspace), and "
          "the rest: CUDA context, cuBLAS/cuBLASLt handles, lazy modules, per-step metadata, allocation rounding.  "
          "The model takes the rest as a constant measured by dkv profile's memory section: it holds when the rest "
          "is the same on every point.  Simulated: the counted buffers on the simulator's own plans "
          "(device_counted_bytes; arrivals over time can batch differently from the hardware run).\n")
    print("| point | used GiB | weights GiB | arena GiB | dkv buffers MiB | (backend's count MiB) | rest MiB | "
          "simulated count MiB | count error MiB |")
    print("|---|---|---|---|---|---|---|---|---|")
    for n, u, w, a, own, how, cnt, rest, sc, sf in rows:
        print("| %s | %.2f | %.2f | %.2f | %.1f (%s) | %s | %.1f | %s | %s |" % (
            n, u / GiB, w / GiB, a / GiB, own / MiB, how, "-" if cnt is None else "%.1f" % (cnt / MiB), rest / MiB,
            "-" if sc is None else "%.1f" % (sc / MiB), "-" if sc is None else "%+.1f" % ((sc - own) / MiB)))
    rs = [r[7] / MiB for r in rows if r[5] == "allocated" or "prog" not in r[0]]
    print("\nThe rest over %d points%s: %.1f to %.1f MiB (spread %.1f MiB, mean %.1f MiB)%s.\n" % (
        len(rs), "" if len(rs) == len(rows) else " (offload points without devmem_allocated_bytes left out: their "
        "low-rank buffers are not in scratch_bytes)", min(rs), max(rs), max(rs) - min(rs), sum(rs) / len(rs),
        "" if fixed is None else "; the profile's memory section says %.1f MiB (context + libraries + one cuBLAS "
        "handle + first launches)" % (fixed / MiB)))
PYEOF
    [ -f "$1/calibrate.txt" ] && { echo '## dkv calibrate (fit set: hw_retention, hw_offload, hw_layout, hw_multi_instance, bwcurve; classes paired with their re-simulation under stage 1)'; echo; echo '```'; grep -v '^  [a-z_]* *M \[' "$1/calibrate.txt"; echo '```'; }
    [ -f "$1/table.txt" ] && { echo; echo '## Device output (table.txt)'; echo; echo '```'; cat "$1/table.txt"; echo '```'; }
}

case "${1:-}" in
build) build ;;
device) device ;;
post) shift; post "$@" ;;
standin) shift; standin "$@" ;;
-h|--help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; exit 0 ;;
*) echo "usage: $0 build | device | post DIR [DIR...] | standin DIR  (--help: what each does)" >&2; exit 2 ;;
esac
