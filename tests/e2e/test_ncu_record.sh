#!/usr/bin/env bash
# test_ncu_record.sh - scripts/ncu_record.sh (a device call's Nsight Compute sets) and scripts/device_env.sh (a call's
# start) without a GPU or Nsight Compute:
# a stand-in ncu that writes three kernel rows and the profiled run's h5 stands for both.  Each point's files land
# in its DIR, each DIR is packed once, the logs apart, one line per point in tests.txt; a point that finds less than
# 50 s of budget is skipped and says so; bad arguments are usage errors naming
# the argument, with nothing written; an OUT already holding a set is refused, its files untouched.
set -euo pipefail
: "${DKV:?}" "${T:?}" "${ROOT:?}"
fail() { echo "FAIL: $*" >&2; exit 1; }
cd "$ROOT"

# the stand-in ncu: FLAGS... --log-file CSV CMD...: three kernel rows into CSV, CMD's -o file touched, CMD not run
# (STANDIN_SLEEP=S sleeps first, for the time limit)
cat > "$T/ncu" <<'EOF'
#!/usr/bin/env bash
[ -n "${STANDIN_SLEEP:-}" ] && sleep "$STANDIN_SLEEP"
while [ $# -gt 0 ] && [ "$1" != --log-file ]; do shift; done
log=$2; shift 2
printf '"ID","Kernel Name","Metric Name","Metric Unit","Metric Value"\n' > "$log"
for i in 0 1 2; do printf '"%d","k","dram__bytes_read.sum","byte","1"\n' $i >> "$log"; done
while [ $# -gt 0 ] && [ "$1" != -o ]; do shift; done
echo standin > "$2"
echo "ran"
EOF
chmod +x "$T/ncu"

O=$T/out; mkdir -p "$O"
NCU=$T/ncu DKV=/bin/true bash scripts/ncu_record.sh "$O" 500 llada-8b:ncu_llada:w25:dual dream-7b:ncu_dream:w25:dual \
    llada-8b:ncu_llada:w26:prefix > "$T/r.txt" || fail "ncu_record.sh: $(cat "$T/r.txt")"
[ "$(ls "$O" | tr '\n' ' ')" = "logs_x.tgz ncu_dream.tgz ncu_llada.tgz tests.txt " ] || fail "OUT holds: $(ls "$O")"
[ "$(tar tzf "$O/ncu_llada.tgz" | sort | tr '\n' ' ')" = "ncu_llada/ ncu_llada/ncu_w25_dual.csv ncu_llada/ncu_w26_prefix.csv ncu_llada/prof_w25_dual.h5 ncu_llada/prof_w26_prefix.h5 " ] ||
    fail "ncu_llada.tgz holds: $(tar tzf "$O/ncu_llada.tgz")"
[ "$(tar tzf "$O/logs_x.tgz" | grep -c '\.log$')" = 3 ] || fail "logs_x.tgz holds: $(tar tzf "$O/logs_x.tgz")"
for l in "ncu llada-8b w25:dual exit 0 [0-9]* s, 3 kernels" "ncu dream-7b w25:dual exit 0 [0-9]* s, 3 kernels" \
         "ncu llada-8b w26:prefix exit 0 [0-9]* s, 3 kernels"; do
    grep -qx "$l" "$O/tests.txt" || fail "tests.txt lacks '$l': $(cat "$O/tests.txt")"
done
cmp -s "$T/r.txt" "$O/tests.txt" || fail "standard output and tests.txt differ"
# a second call into that OUT (its DIR.tgz, or only logs_x.tgz, already there) is refused before any point runs,
# the first set's files untouched (it replaced them)
sums=$(cd "$O" && md5sum *)
for args in "llada-8b:ncu_llada:w25:dual|ncu_llada.tgz" "llada-8b:other:w25:dual|logs_x.tgz"; do
    rc=0; NCU=$T/ncu DKV=/bin/true bash scripts/ncu_record.sh "$O" 500 "${args%%|*}" > "$T/r2.txt" 2> "$T/e" || rc=$?
    [ $rc = 2 ] || fail "a second call into OUT (${args%%|*}): exit $rc, not 2"
    grep -qF "ncu_record: OUT '$O' already holds ${args##*|} (a set recorded there): give a fresh OUT" "$T/e" ||
        fail "a second call into OUT (${args%%|*}): message: $(cat "$T/e")"
    [ "$(cd "$O" && md5sum *)" = "$sums" ] && [ ! -s "$T/r2.txt" ] || fail "a refused call changed OUT: $(ls -l "$O")"
done

# a budget under 50 s skips every point (and still packs what it made: nothing but the logs)
O2=$T/out2; mkdir -p "$O2"
NCU=$T/ncu DKV=/bin/true bash scripts/ncu_record.sh "$O2" 40 llada-8b:ncu_llada:w25:dual > /dev/null
# (the seconds left are counted on the clock: 40, or less on a loaded machine, never more)
left=$(sed -n 's/^ncu llada-8b w25:dual: skipped, \([0-9]*\)s left$/\1/p' "$O2/tests.txt")
[ -n "$left" ] && [ "$left" -le 40 ] || fail "no skip line: $(cat "$O2/tests.txt")"
# usage errors: exit 2, the argument named, nothing written
O4=$T/out4; mkdir -p "$O4"
for args in "$O4 500 llada-8b:w25:dual|not MODEL:DIR:POINT" "$O4 5m llada-8b:d:w25:dual|BUDGET_S '5m'" \
            "$T/none 500 llada-8b:d:w25:dual|is not a folder" "$O4 500|ncu_record.sh OUT BUDGET_S"; do
    a=${args%%|*}
    rc=0; NCU=$T/ncu DKV=/bin/true bash scripts/ncu_record.sh $a 2> "$T/e" > /dev/null || rc=$?
    [ $rc = 2 ] || fail "ncu_record.sh $a: exit $rc, not 2"
    grep -q "${args##*|}" "$T/e" || fail "ncu_record.sh $a: message: $(cat "$T/e")"
done
[ -z "$(ls "$O4")" ] || fail "a usage error wrote: $(ls "$O4")"

# scripts/device_env.sh (sourced by a call's command.sh): .hwbin's xz files unpacked and executable, LD_LIBRARY_PATH
# with .hwbin/lib first, tests.txt started with the GPU line (a stand-in nvidia-smi) and the time, NCU found
R=$T/repo; mkdir -p "$R/.hwbin/lib" "$T/bin" "$T/dout"
printf '#!/bin/sh\necho tool\n' > "$R/.hwbin/tool" && printf 'lib' > "$R/.hwbin/lib/libx.so.0"
xz "$R/.hwbin/tool" "$R/.hwbin/lib/libx.so.0"
printf '#!/bin/sh\necho "NVIDIA H200, 123, 580.159.04, 1980 MHz, 700.00 W"\n' > "$T/bin/nvidia-smi"
cp "$T/ncu" "$T/bin/ncu"; chmod +x "$T/bin/nvidia-smi" "$T/bin/ncu"
(cd "$R" && PATH="$T/bin:$PATH" OUT="$T/dout" bash -c '. "$1/scripts/device_env.sh" > /dev/null &&
    echo "$LD_LIBRARY_PATH|$NCU|$(.hwbin/tool)"' _ "$ROOT") > "$T/env.txt" || fail "device_env.sh: $(cat "$T/env.txt")"
[ "$(cut -d'|' -f2- "$T/env.txt")" = "$T/bin/ncu|tool" ] || fail "device_env.sh's NCU or .hwbin/tool: $(cat "$T/env.txt")"
case $(cut -d'|' -f1 "$T/env.txt") in "$R/.hwbin/lib:"*) ;; *) fail "LD_LIBRARY_PATH: $(cat "$T/env.txt")" ;; esac
[ "$(cat "$R/.hwbin/lib/libx.so.0")" = lib ] && [ ! -e "$R/.hwbin/tool.xz" ] || fail "device_env.sh left .xz files: $(ls -R "$R/.hwbin")"
sed -n 1p "$T/dout/tests.txt" | grep -qx "NVIDIA H200, 123, 580.159.04, 1980 MHz, 700.00 W" &&
    sed -n 2p "$T/dout/tests.txt" | grep -q "^20[0-9-]*T[0-9:]*Z$" && sed -n 3p "$T/dout/tests.txt" | grep -qx "ncu: $T/bin/ncu" ||
    fail "device_env.sh's tests.txt: $(cat "$T/dout/tests.txt")"
if (cd "$R" && OUT="$T/nowhere" bash -c '. "$1/scripts/device_env.sh"' _ "$ROOT") 2> "$T/e"; then fail "device_env.sh: no OUT accepted"; fi
grep -q "is not a folder" "$T/e" || fail "device_env.sh's OUT message: $(cat "$T/e")"

# scripts/hw_session.sh device sources device_env.sh (since session 49): an xz'd .hwbin/dkv runs as carried, and
# $OUT gets tests.txt beside table.txt
R2=$T/repo2; mkdir -p "$R2/scripts" "$R2/.hwbin/lib"
cp "$ROOT/scripts/hw_session.sh" "$ROOT/scripts/device_env.sh" "$R2/scripts/"
printf '#!/bin/sh
echo stand-in dkv
' > "$R2/.hwbin/dkv" && xz "$R2/.hwbin/dkv"
(cd "$R2" && PATH="$T/bin:$PATH" OUT="$T/hout" STEPS=check DEADLINE=30 bash scripts/hw_session.sh device) > "$T/hdev.txt" 2>&1 ||
    fail "hw_session.sh device with an xz'd .hwbin: $(tail -n 5 "$T/hdev.txt")"
[ -x "$R2/.hwbin/dkv" ] && [ ! -e "$R2/.hwbin/dkv.xz" ] || fail "hw_session.sh device left .hwbin/dkv packed: $(ls "$R2/.hwbin")"
grep -q "^check  *exit 0" "$T/hout/table.txt" && sed -n 1p "$T/hout/tests.txt" | grep -q "^NVIDIA H200, 123," ||
    fail "hw_session.sh device's table.txt or tests.txt: $(cat "$T/hout/table.txt" "$T/hout/tests.txt")"
echo ok
