#!/usr/bin/env bash
# test_profile_cli.sh - dkv profile without a GPU: usage errors (exit 2; those of the options alone on every
# build, CI's without CUDA included), the grid's time estimate (CUDA builds; the default grid sized to fit the
# 5-minute budget at the H200's ceilings), and a run on a machine without a usable GPU: exit 1 naming the reason,
# no file written.  Builds without the CUDA backend say so with exit 2.  The measurement itself needs the GPU
# (scripts/hw_session.sh STEPS=profile).
set -euo pipefail
: "${DKV:?}" "${T:?}" "${ROOT:?}"
fail() { echo "FAIL: $*" >&2; exit 1; }
cd "$ROOT"
code() { set +e; "$@" >"$T/out" 2>"$T/err"; echo $?; set -e; }

[ "$(code "$DKV" profile)" = 2 ] && grep -q "\-o FILE.lua is required" "$T/err" || fail "no -o"
[ "$(code "$DKV" profile --help)" = 0 ] && grep -q "^usage: dkv profile -o FILE.lua" "$T/out" || fail "help"
# usage errors, caught before anything needs the CUDA backend (so on every build, CI's too)
[ "$(code "$DKV" profile -o "$T/p.lua" --repeats 2)" = 2 ] && grep -q "\-\-repeats needs a number in \[3, 62\]" "$T/err" \
    || fail "bad --repeats"
[ "$(code "$DKV" profile -o "$T/p.lua" --min-rows x)" = 2 ] && grep -q "\-\-min-rows needs a number" "$T/err" \
    || fail "bad --min-rows"
[ "$(code "$DKV" profile -o "$T/p.lua" --gemm-step 12)" = 2 ] && grep -q "\-\-gemm-step needs a multiple of 8" "$T/err" \
    || fail "--gemm-step 12: $(cat "$T/err")"
[ "$(code "$DKV" profile -o "$T/p.lua" --gemm-step 0)" = 2 ] && grep -q "\-\-gemm-step needs a number in \[8, 8192\]" "$T/err" \
    || fail "--gemm-step 0: $(cat "$T/err")"
[ "$(code "$DKV" profile -o "$T/p.lua" --gemm-step 16 --grid attn)" = 2 ] && grep -q "leaves it out (add gemm)" "$T/err" \
    || fail "--gemm-step without the gemm section: $(cat "$T/err")"
[ "$(code "$DKV" profile -o "$T/p.lua" --grid sustained)" = 2 ] && grep -q "give --sustain SECONDS too" "$T/err" \
    || fail "--grid sustained without --sustain: $(cat "$T/err")"
[ "$(code "$DKV" profile -o "$T/p.lua" --grid gemm --sustain 2)" = 2 ] && grep -q "leaves the sustained section out" "$T/err" \
    || fail "--sustain with a --grid without it: $(cat "$T/err")"
[ "$(code "$DKV" profile -o "$T/p.lua" --sustain 0.1)" = 2 ] && grep -q "\-\-sustain needs a number in \[0.2, 60\]" "$T/err" \
    || fail "bad --sustain: $(cat "$T/err")"
[ "$(code "$DKV" profile -o "$T/p.lua" --sustain-windows 8)" = 2 ] && grep -q "need --sustain SECONDS" "$T/err" \
    || fail "--sustain-windows without --sustain: $(cat "$T/err")"
[ "$(code "$DKV" profile -o "$T/p.lua" --sustain 1 --sustain-windows 65)" = 2 ] && grep -q "needs a number in \[1, 64\]" "$T/err" \
    || fail "--sustain-windows 65: $(cat "$T/err")"
[ "$(code "$DKV" profile -o "$T/p.lua" --sustain 1 --sustain-windows 2.5)" = 2 ] && grep -q "needs a whole number" "$T/err" \
    || fail "--sustain-windows 2.5: $(cat "$T/err")"
[ "$(code "$DKV" profile -o "$T/p.lua" --sustain-gaps 5)" = 2 ] && grep -q "need --sustain SECONDS" "$T/err" \
    || fail "--sustain-gaps without --sustain: $(cat "$T/err")"
for bad in "0,,5:an empty value" "5,:an empty value" "1001:needs a number in \[0, 1000\]" "x:needs a number" \
           "1,2,3,4,5,6,7,8,9:at most 8 gaps"; do
    [ "$(code "$DKV" profile -o "$T/p.lua" --sustain 1 --sustain-gaps "${bad%%:*}")" = 2 ] && grep -q "${bad#*:}" "$T/err" \
        || fail "--sustain-gaps ${bad%%:*}: $(cat "$T/err")"
done
if ! grep -q "needs a build with the CUDA backend" <<<"$(code "$DKV" profile --estimate; cat "$T/err")"; then
    [ "$(code "$DKV" profile -o "$T/p.lua" --grid gemm,nosuch)" = 2 ] && grep -q "unknown section 'nosuch'" "$T/err" \
        || fail "bad --grid: $(cat "$T/err")"
    [ "$(code "$DKV" profile -o "$T/p.lua" --model nosuch)" = 2 ] && grep -q "unknown model preset 'nosuch'" "$T/err" \
        || fail "bad --model"
    # --min-rows keeps only the GEMM shapes of that many rows: gemm_grid's 12,288-24,576 rows (3 of its 21 row counts)
    # the model presets are found from the executable, as dkv run finds them (until session 51 the root defaulted to
    # the current folder, and --estimate outside the checkout said "unknown model preset 'llada-8b'")
    (cd "$T" && "$DKV" profile --estimate >/dev/null 2>"$T/err_root") || fail "--estimate outside the root: $(cat "$T/err_root")"
    [ "$(code "$DKV" profile --estimate --grid gemm_grid --min-rows 12288)" = 0 ] || fail "min-rows estimate"
    grep -q "252 shapes" "$T/out" || fail "min-rows 12288: $(cat "$T/out")"
    # --gemm-step N: the class GEMMs at every multiple of N rows to 8,192 instead of the grid's rows (4 GEMMs a row
    # count: 512 row counts at 16; with --min-rows 4096 at 64, 4,096-8,192: 65), nothing beyond 8,192
    [ "$(code "$DKV" profile --estimate --grid gemm --gemm-step 16)" = 0 ] && grep -q "2048 shapes" "$T/out" \
        || fail "gemm-step 16 estimate: $(cat "$T/out" "$T/err")"
    [ "$(code "$DKV" profile --estimate --grid gemm --gemm-step 64 --min-rows 4096)" = 0 ] && grep -q "260 shapes" "$T/out" \
        || fail "gemm-step 64 min-rows 4096: $(cat "$T/out" "$T/err")"
    # the sustained section: only with --sustain SECONDS, which a --grid without it refuses (it could not take effect);
    # all sections leave it out without --sustain, include it with; each shape costs its seconds + a 0.3 s lead
    # (--quick: the GEMMs at 512 and 4,096 rows, the attention, the whole layer at 512 and 4,096 rows)
    # --sustain-gaps: the duty runs instead (--quick: one row count a model, each gap 2 s + the 0.3 s lead)
    [ "$(code "$DKV" profile --estimate --grid sustained --sustain 2 --sustain-gaps 0,5 --quick)" = 0 ] &&
        grep -q "(quick grid, 2 shapes, 20 repeats): sustained 4.6$" "$T/out" || fail "--sustain-gaps estimate: $(cat "$T/out") $(cat "$T/err")"
    # a gap longer than SECONDS over the windows: each window still takes a step and its gap (4 x 1 s + 0.3 s lead)
    [ "$(code "$DKV" profile --estimate --grid sustained --sustain 2 --sustain-gaps 1000 --quick)" = 0 ] &&
        grep -q "sustained 4.3$" "$T/out" || fail "--sustain-gaps 1000 estimate: $(cat "$T/out") $(cat "$T/err")"
    # --sustain-lead 0: no spin before a run (the estimate drops 0.3 s a shape: 11.5 -> 10.0 s)
    [ "$(code "$DKV" profile --estimate --grid sustained --sustain 2 --sustain-lead 0 --quick)" = 0 ] && grep -q "sustained 10.0$" "$T/out" \
        || fail "--sustain-lead 0 estimate: $(cat "$T/out") $(cat "$T/err")"
    [ "$(code "$DKV" profile --estimate --grid sustained --sustain 2 --quick)" = 0 ] || fail "sustained estimate: $(cat "$T/err")"
    grep -q "(quick grid, 5 shapes, 20 repeats): sustained 11.5$" "$T/out" || fail "sustained --quick estimate: $(cat "$T/out")"
    ! grep -q "sustained" <<<"$(code "$DKV" profile --estimate; cat "$T/out")" || fail "all sections ran sustained without --sustain"
    grep -q " sustained [0-9.]*$" <<<"$(code "$DKV" profile --estimate --sustain 2; cat "$T/out")" || fail "--sustain: not in all"
    [ "$(code "$DKV" profile --estimate)" = 0 ] || fail "estimate: $(cat "$T/err")"
    est=$(sed -n 's/^dkv profile: estimated \([0-9]*\) s at .*/\1/p' "$T/out")
    [ -n "$est" ] && [ "$est" -gt 5 ] && [ "$est" -le 300 ] || fail "default grid estimate $est s (budget 300 s)"
    for s in gemm lm_head attn kv_store elementwise select gemm_grid compress copy host; do
        grep -q " $s [0-9.]*" "$T/out" || fail "estimate lacks section $s: $(cat "$T/out")"
    done
    q=$(code "$DKV" profile --estimate --quick)
    qe=$(sed -n 's/^dkv profile: estimated \([0-9]*\) s at .*/\1/p' "$T/out")
    [ "$q" = 0 ] && [ "$qe" -lt "$est" ] || fail "quick grid $qe s not under the default $est s"
    rc=$(code "$DKV" profile -o "$T/p.lua" --quick)
    if [ "$rc" = 1 ] && grep -q "no usable GPU" "$T/err"; then
        [ ! -e "$T/p.lua" ] || fail "a file written without a GPU"
    elif [ "$rc" = 0 ]; then
        grep -q "measured = true" "$T/p.lua" || fail "GPU run: provenance"
    else
        fail "profile --quick: exit $rc: $(cat "$T/err")"
    fi
else
    [ "$(code "$DKV" profile -o "$T/p.lua")" = 2 ] && grep -q "built without the CUDA backend" "$T/err" || fail "no-CUDA build"
fi
echo ok
