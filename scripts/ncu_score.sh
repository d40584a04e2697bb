#!/usr/bin/env bash
# ncu_score.sh - issue 9's HBM-bytes-per-class score over every Nsight Compute run set the project recorded:
# for each set, the dkv at hand counts the bytes of the same plans and scripts/ncu_cells.py prints how many
# class cells are within 5 % of Nsight Compute (reads and writes apart) and the mean |error|
# (docs/COST_MODEL.md "HBM bytes with an L2"; the tables behind each line are OUT_DIR/<set>/ncu_bytes.md), then one
# line "all sets" over every cell of the sets scored; OUT_DIR/tables.txt lists those tables (scripts/ncu_sign.py).
#
#   DKV=build/release/dkv bash scripts/ncu_score.sh OUT_DIR [SET...]
#
# SET (default: all, in this order):
#   llada     LLaDA-8B's nine validation points (device calls 3, 9 and 30 against call 7's runs; in-sample)
#   dream     Dream-7B's nine (calls 56, 57 and 59)
#   c67       call 67: w5:dual, w6:dual of both models (held out, session 19)
#   c70       call 70: w7:dual, w8:dual of both models (held out, session 20)
#   c73       call 73: w7/w8 sparse and prefix of both models (held out, session 21)
#   c75       call 75: w5/w6 sparse and prefix of both models (held out, session 21, after its replay changes)
#   c81       call 81: w9/w10 dual and prefix of both models (held out, session 24, after the walk after a GEMM)
#   c82       call 82: w11/w12 dual and prefix of both models (held out, session 24, after the argmax and SwiGLU forms)
#   c103      call 103: w13/w14 dual and sparse of both models (held out, session 31: fresh for a dirty bound chosen on
#             the sets above)
#   c104      call 104: w15/w16 dual and prefix of both models (held out, session 32: recorded before any rule it
#             judges was chosen)
#   c108      call 108: w17/w18 dual and sparse of both models (held out, recorded in session 32 before the trials
#             of session 34 were chosen)
#   c117      call 117: w19:dual, w20:dual and w20:prefix of both models (held out, recorded in session 37 before its
#             write rule was chosen)
#   c118      call 118: call 117's six points again on another machine (session 37: scripts/ncu_attainable.py sets
#             the two side by side; not in the default list, whose sets are each a different measurement)
#   c119      call 119: w21:dual, w22:dual and w22:prefix of both models (held out, recorded in session 38 to judge
#             session 37's nineteenth write trial unchanged)
#   c119b     call 119's second set: w23:dual, w24:dual and w24:sparse of both models (held out; a reserve until session
#             39, when it judged the twenty-second write trial, datasets/hw/2026-12-04/call119/variants/CRITERION_fit_edge.md)
#   c120      call 120: w25:dual, w26:dual and w26:prefix of both models (held out; it judged session 39's twenty-third
#             trial, datasets/hw/2026-12-04/call121/CRITERION_foot23.md)
#   c120b     call 120's second set: w27:dual, w28:dual and w28:sparse of both models (held out; a reserve until session
#             40, when it judged the twenty-fourth trial, datasets/hw/2026-12-04/call122/CRITERION_foot24.md)
#   c122      call 122: w29:dual, w30:dual and w30:prefix of both models (a reserve recorded in session 40, until session
#             48, when it judged trial ownpool with c122b and c123: datasets/hw/2026-12-05/call133/CRITERION_ownpool.md)
#   c122b     call 122's second set: w31:dual, w32:dual and w32:sparse (a reserve until session 48, as c122)
#   c123      call 123 (session 42): w33:dual, w34:dual and w34:sparse (a reserve until session 48, as c122;
#             datasets/hw/2026-12-04/call123/CRITERION.md)
#   c128      call 128 (session 43): w35:dual, w35:sparse and w36:sparse (a reserve, as c122, with two sparse points a
#             model; datasets/hw/2026-12-05/call128/command.sh)
#   c143      call 143 (session 50) on an H200: w37:dual, w38:dual and w38:sparse (new points, set h142's on an H200; a
#             reserve, as c128: datasets/hw/2026-12-05/call142/CRITERION.md, call143/command.sh)
#   h135      call 135 (session 48) on an H100: call 117's six points, counted under the h100 preset (-D gpu=h100)
#   h141      call 141 (session 49) on an H100: call 123's six points (w33:dual, w34:dual, w34:sparse), likewise
#             (the H100 sets: named only, not in the default list, whose score is the H200's; `ncu_score.sh OUT h135
#             h141` is the replay's score on a second GPU, with the shipped h100 preset's profile)
#   h142      call 142 (session 50) on an H100: w37:dual, w38:dual and w38:sparse (new points; a reserve, as c128: not
#             scored, under any replay, before a trial's criterion names it; datasets/hw/2026-12-05/call142/CRITERION.md)
# OUT_DIR must not exist.  The sets are counted JOBS at a time (default: the CPUs, at most 4), their lines printed in
# order.  About 50 s for all sets on 2 cores (85 s one at a time, JOBS=1; 2026-12-04, 784 cells; 910 since session 48).
set -euo pipefail
usage() { sed -n '2,/^[^#]/{/^#/p}' "$0" >&2; exit 2; }   # the header: the comment lines on top
[ $# -ge 1 ] || usage
case $1 in -h|--help) sed -n '2,/^[^#]/{/^#/p}' "$0"; exit 0 ;; esac
O=$1; shift
DKV=${DKV:-build/release/dkv}
HW=datasets/hw
[ -e "$O" ] && { echo "ncu_score: $O exists: give a new OUT_DIR" >&2; exit 2; }
[ -x "$DKV" ] || { echo "ncu_score: no dkv at $DKV (set DKV=)" >&2; exit 2; }
JOBS=${JOBS:-$(nproc 2> /dev/null || echo 2)}
[[ $JOBS =~ ^[1-9][0-9]*$ ]] || { echo "ncu_score: JOBS '$JOBS' is not a whole number of jobs (1 or more)" >&2; exit 2; }
[ "$JOBS" -le 4 ] || JOBS=4
ALL=(llada dream c67 c70 c73 c75 c81 c82 c103 c104 c108 c117 c119 c119b c120 c120b c122 c122b c123)   # the sets above, in their order: a new set is added here
REPEATS=(c118 c128 c143)   # named only: a set that repeats another's points, or a reserve not yet scored
H100SETS=(h135 h141 h142)  # named only: sets measured on an H100, counted under the h100 preset (h142 a reserve)
sets=("$@"); [ ${#sets[@]} -gt 0 ] || sets=("${ALL[@]}")
for s in "${sets[@]}"; do
    [[ " ${ALL[*]} ${REPEATS[*]} ${H100SETS[*]} " == *" $s "* ]] ||
        { echo "ncu_score: unknown set '$s' ($(echo "${ALL[*]} ${REPEATS[*]} ${H100SETS[*]}" | sed 's/ /, /g'))" >&2; exit 2; }
done
mkdir -p "$O"
tables=()   # every set's ncu_bytes.md, for the total line at the end
cells() { printf '%-18s %s\n' "$1" "$(/usr/bin/python3 scripts/ncu_cells.py "$2")"; tables+=("$2"); }
# DIR MODEL TGZ...: unpack the tgz files (each a folder of ncu_*.csv and prof_*.h5) into one folder, count the same
# plans with the dkv at hand (scripts/ncu_model_bytes.sh: DIR/out/ncu_bytes.md)
held() {   # (SIM: hw_validate.lua options for the count, e.g. -D gpu=h100)
    local name=$1 dir=$O/$1 model=$2; shift 2
    mkdir -p "$dir/in"
    for t in "$@"; do
        [ -f "$t" ] || { echo "ncu_score: missing $t" >&2; return 1; }
        rm -rf "$dir/x" && mkdir -p "$dir/x" && tar xzf "$t" -C "$dir/x" && cp "$dir"/x/*/* "$dir/in/"
    done
    DKV=$DKV SIM_ARGS="${SIM:-}" bash scripts/ncu_model_bytes.sh "$dir/in" "$model" "$dir/out" > "$dir/log" 2>&1 ||
        { echo "ncu_score: $name: scripts/ncu_model_bytes.sh failed ($dir/log)" >&2; return 1; }
}
# the call folder of set c<N>[b] and its tgz suffix (set c<N>b: the call's second set, ncu_llada_b.tgz, ncu_dream_b.tgz)
call_of() { local n=${1#c} x=; [[ $n == *b ]] && { n=${n%b}; x=_b; }; echo "$(ls -d $HW/*/call$n | head -n 1) $n $x"; }
# SET: the set's counting (the slow part; the sets run JOBS at a time, each in its own folders)
count() {
    case $1 in
    llada)
        DKV=$DKV RES="$O/llada/post" bash scripts/hw_session.sh post $HW/2026-12-01/call7 $HW/2026-12-01/call3 \
            $HW/2026-12-01/call9 $HW/2026-12-01/call30 > "$O/llada.log" 2>&1 ||
            { echo "ncu_score: llada: hw_session.sh post failed ($O/llada.log)" >&2; return 1; }
        "$DKV" run experiments/hw_validate.lua -D backend=sim -D l2_kernels=true -o "$O/llada/sim.h5" > /dev/null &&
            /usr/bin/python3 scripts/ncu_bytes.py "$O/llada/post/h5/val.h5" "$O/llada/sim.h5" -o "$O/llada/ncu_bytes.md" > /dev/null ;;
    dream) held dream dream-7b $HW/2026-12-02/call5{6,7,9}/ncu_dream.tgz ;;
    h*)   # an H100 call's set: datasets/hw/<date>/call<N>/h100/ncu_{llada,dream}.tgz, counted under the h100 preset
        local d; d=$(ls -d $HW/*/call${1#h}/h100 | head -n 1)
        SIM="-D gpu=h100" held "${1}_llada" llada-8b "$d/ncu_llada.tgz" &&
            SIM="-D gpu=h100" held "${1}_dream" dream-7b "$d/ncu_dream.tgz" ;;
    c*)   # a call's set: ncu_llada.tgz and ncu_dream.tgz in datasets/hw/<date>/call<N>
        local d n x; read -r d n x <<< "$(call_of "$1")"
        held "${1}_llada" llada-8b "$d/ncu_llada$x.tgz" && held "${1}_dream" dream-7b "$d/ncu_dream$x.tgz" ;;
    esac
}
for s in "${sets[@]}"; do
    while [ "$(jobs -rp | wc -l)" -ge "$JOBS" ]; do wait -n || true; done
    ( rc=0; count "$s" || rc=$?; echo $rc > "$O/.rc_$s" ) &
done
wait
for s in "${sets[@]}"; do
    rc=$(cat "$O/.rc_$s" 2> /dev/null || echo 1); rm -f "$O/.rc_$s"
    [ "$rc" = 0 ] || { echo "ncu_score: set $s failed (its message above)" >&2; exit 1; }
    case $s in
    llada) cells "llada-8b (9 pts)" "$O/llada/ncu_bytes.md" ;;
    dream) cells "dream-7b (9 pts)" "$O/dream/out/ncu_bytes.md" ;;
    c*) read -r _ n x <<< "$(call_of "$s")"
        cells "call $n$x llada-8b" "$O/${s}_llada/out/ncu_bytes.md"
        cells "call $n$x dream-7b" "$O/${s}_dream/out/ncu_bytes.md" ;;
    h*) cells "H100 ${s#h} llada-8b" "$O/${s}_llada/out/ncu_bytes.md"
        cells "H100 ${s#h} dream-7b" "$O/${s}_dream/out/ncu_bytes.md" ;;
    esac
done
# the sets together: every cell counted once (a trial's criterion reads this line)
printf '%-18s %s\n' "all sets" "$(/usr/bin/python3 scripts/ncu_cells.py "${tables[@]}")"
# the tables scored, below OUT_DIR, one a line (scripts/ncu_sign.py compares two OUT_DIRs cell by cell)
for t in "${tables[@]}"; do echo "${t#"$O"/}"; done > "$O/tables.txt"
