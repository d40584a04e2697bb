#!/usr/bin/env bash
# test_ncu_points.sh - scripts/ncu_points.sh (the device calls' Nsight Compute loop) with a stand-in ncu that writes a
# two-kernel CSV and records its arguments: one line a point in $OUT/tests.txt, the CSV and the run's options where the
# calls before put them (the hw_validate options after -- passed on), a point skipped when the deadline leaves under
# 50 s; usage errors (no $OUT, no NCU, a bad deadline or point) before anything runs; --help.
set -uo pipefail
: "${T:?}" "${ROOT:?}"
fail() { echo "FAIL: $*" >&2; exit 1; }
cd "$ROOT" || fail "cd"
S=scripts/ncu_points.sh
cat > "$T/ncu" <<'EOF'
#!/usr/bin/env bash
# a stand-in ncu: the CSV of two kernels into --log-file, its arguments into args.txt beside it
log=
while [ $# -gt 0 ]; do [ "$1" = --log-file ] && { log=$2; shift; }; shift || break; done
printf '"ID","Kernel Name","Metric Name","Metric Unit","Metric Value"\n"0","k","dram__bytes_read.sum","byte","1"\n"1","k","dram__bytes_read.sum","byte","2"\n' > "$log"
EOF
cat > "$T/ncu_args" <<'EOF'
#!/usr/bin/env bash
echo "$*" >> "$(dirname "$0")/args.txt"
exec "$(dirname "$0")/ncu" "$@"
EOF
chmod +x "$T/ncu" "$T/ncu_args"
mkdir -p "$T/out"
: > "$T/out/tests.txt"
OUT=$T/out NCU=$T/ncu_args bash "$S" 400 llada-8b:ncu_llada:w20:dual dream-7b:ncu_dream:w20:prefix -- -D l2_flush=2:qkv:qkv \
    > "$T/o" 2> "$T/e" || fail "ncu_points.sh: $(cat "$T/e")"
grep -q "^ncu llada-8b w20:dual exit 0 [0-9]* s, 2 kernels$" "$T/out/tests.txt" &&
    grep -q "^ncu dream-7b w20:prefix exit 0 [0-9]* s, 2 kernels$" "$T/out/tests.txt" || fail "tests.txt: $(cat "$T/out/tests.txt")"
[ -f "$T/out/ncu_llada/ncu_w20_dual.csv" ] && [ -f "$T/out/ncu_dream/ncu_w20_prefix.csv" ] || fail "the CSVs: $(ls -R "$T/out")"
grep -q -- "--cache-control none .*--log-file $T/out/ncu_llada/ncu_w20_dual.csv .hwbin/dkv run experiments/hw_validate.lua .*-D model=llada-8b -D point=w20:dual -D l2_flush=2:qkv:qkv -o $T/out/ncu_llada/prof_w20_dual.h5" \
    "$T/args.txt" || fail "ncu's arguments: $(cat "$T/args.txt")"
# a deadline that leaves under 50 s: skipped, said so
: > "$T/out/tests.txt"
OUT=$T/out NCU=$T/ncu_args bash "$S" 30 llada-8b:ncu_llada:w19:dual > /dev/null 2>&1 || fail "a short deadline"
grep -q "^ncu llada-8b w19:dual: skipped, [0-9]*s left$" "$T/out/tests.txt" && [ ! -f "$T/out/ncu_llada/ncu_w19_dual.csv" ] ||
    fail "skip: $(cat "$T/out/tests.txt")"
# usage errors, nothing run
n=$(wc -l < "$T/args.txt")
for a in "x llada-8b:d:w1:dual" "400" "400 llada-8b:w1:dual" "400 Llada:d:w1:dual"; do
    # shellcheck disable=SC2086
    OUT=$T/out NCU=$T/ncu_args bash "$S" $a > /dev/null 2> "$T/e"; rc=$?
    [ $rc = 2 ] && grep -q "^ncu_points: " "$T/e" || fail "'$a': exit $rc, $(cat "$T/e")"
done
OUT=$T/none NCU=$T/ncu_args bash "$S" 400 llada-8b:d:w1:dual > /dev/null 2> "$T/e"; [ $? = 2 ] && grep -q "is not a folder" "$T/e" ||
    fail "no OUT: $(cat "$T/e")"
OUT=$T/out NCU= bash "$S" 400 llada-8b:d:w1:dual > /dev/null 2> "$T/e"; [ $? = 2 ] && grep -q "NCU is not set" "$T/e" ||
    fail "no NCU: $(cat "$T/e")"
[ "$(wc -l < "$T/args.txt")" = "$n" ] || fail "a usage error ran ncu"
bash "$S" --help | grep -q "ncu_points.sh DEADLINE_S MODEL:DIR:POINT" || fail "--help"
echo "ncu_points: ok"
