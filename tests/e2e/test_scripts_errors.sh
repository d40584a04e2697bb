#!/usr/bin/env bash
# test_scripts_errors.sh - the analysis scripts (scripts/*.py) refuse bad input the project's way: one line on stderr
# that starts with the script's name and names the file, their documented exit status, and no Python traceback.
# Each script that reads a file gets a missing file, a text file and an empty HDF5 file (an HDF5 reader) or the
# other kind of file (a text reader); each answers --help with its usage on stdout and exit status 0.  Also the
# refusals of scripts whose own tests are slow or not this test's to change: claims_pins.py's pins file and
# --only, ncu_bytes.py's -o, h5_summary.py without a file, hw_multi_table.py's RES (scripts/fit_host.py,
# torch_snapshot_to_trace.py, plot.py, l2probe.py, l2drain.py and dkvresults.py have their cases in their own
# tests).  Every case is a python start-up (0.05-0.5 s): they run a few at a time, and every failing case is
# listed before the test fails.
set -uo pipefail
: "${ROOT:?}" "${T:?}" "${DKV:?}"
PY=/usr/bin/python3
S=$ROOT/scripts
$PY -c 'import h5py, numpy, matplotlib' 2>/dev/null || { echo "SKIP: /usr/bin/python3 lacks h5py/numpy/matplotlib (scripts/deps.sh)"; exit 77; }

# the inputs: a missing file, a text file, an empty HDF5 file, and folders holding them where a script reads one
M=$T/missing.h5 TX=$T/text.txt E=$T/empty.h5
echo "not an HDF5 file, nor a log" >"$TX"
R=$T/runs.h5   # a results file with no run, where a script reads a second file after it
$PY -c 'import sys, h5py; h5py.File(sys.argv[1], "w").close(); h5py.File(sys.argv[2], "w").create_group("runs")' "$E" "$R" ||
    { echo "FAIL: empty HDF5 files"; exit 1; }
for k in text empty; do
    src=$TX; [ $k = empty ] && src=$E
    mkdir -p "$T/cal_$k/cmp" "$T/multi_$k/h5" "$T/card_$k"
    cp "$src" "$T/cal_$k/cmp/001.h5"; cp "$src" "$T/multi_$k/h5/hw_multi_1.h5"; cp "$src" "$T/card_$k/metrics.json"
done
: >"$T/nopins.txt"
printf '# a comment\n\n' >>"$T/nopins.txt"
printf '1a\texperiments/quickstart.lua\tno group here\t57.71\n' >"$T/nogroup.txt"
printf '1a\texperiments/quickstart.lua\t^(\\w+)\t57.71\n' >"$T/word.txt"
printf '2026/12/01 10:00:00.000 a_start\n2026/12/01 10:00:01.000 a_end\n' >"$T/marks.txt"

n=0
c_kind=() c_want=() c_name=() c_file=() c_cmd=()
err() {   # status prefix file command... : exit STATUS, one stderr line "PREFIX: ...FILE...", no traceback
    c_kind[n]=err c_want[n]=$1 c_name[n]=$2 c_file[n]=$3; shift 3
    c_cmd[n]=$(printf '%q ' "$@"); n=$((n + 1))
}
helps() {   # command... : --help prints the usage on stdout, nothing on stderr, exit 0
    c_kind[n]=help c_want[n]=0 c_name[n]="" c_file[n]=""; c_cmd[n]=$(printf '%q ' "$@"); n=$((n + 1))
}
matrix() {   # status prefix script [args before] -- [args after]: the script on $M, $TX and $E, and --help
    local st=$1 pre=$2 sc=$3 before=() after=() f; shift 3
    while [ $# -gt 0 ] && [ "$1" != -- ]; do before+=("$1"); shift; done
    [ $# -gt 0 ] && shift
    after=("$@")
    for f in "$M" "$TX" "$E"; do err "$st" "$pre" "$f" $PY "$S/$sc" "${before[@]}" "$f" "${after[@]}"; done
    helps $PY "$S/$sc" --help
}

# HDF5 readers
matrix 1 h5_summary h5_summary.py
matrix 1 ncu_bytes ncu_bytes.py -- "$E"
err 1 ncu_bytes "$M" $PY "$S/ncu_bytes.py" "$R" "$M"                     # the second file too
matrix 1 ncu_gemm_reads.py ncu_gemm_reads.py llada-8b -- "$E"
matrix 1 ncu_steps.py ncu_steps.py -- "$E"
matrix 1 ncu_layer.py ncu_layer.py -- "$E"
matrix 1 class_errors class_errors.py -- az:none
err 1 class_errors "$TX" $PY "$S/class_errors.py" "$R" az:none --event-cost "$TX"
matrix 1 quality_compare quality_compare.py -- "$E"
matrix 1 plot_quality_frontier plot_quality_frontier.py -- "$T/out.png"
matrix 1 fit_host fit_host.py
# folders of HDF5 files: a post result's cmp/NNN.h5, a multi-instance post's h5/hw_multi_*.h5
err 2 machine_calibrate.py "$M" $PY "$S/machine_calibrate.py" "$M"
err 2 machine_calibrate.py "$T/cal_text/cmp/001.h5" $PY "$S/machine_calibrate.py" "$T/cal_text"
err 2 machine_calibrate.py "$T/cal_empty/cmp/001.h5" $PY "$S/machine_calibrate.py" "$T/cal_empty"
helps $PY "$S/machine_calibrate.py" --help
err 1 hw_multi_table "$M" $PY "$S/hw_multi_table.py" "$M"
err 1 hw_multi_table "$TX" $PY "$S/hw_multi_table.py" "$TX"
err 1 hw_multi_table "$T/cal_text" $PY "$S/hw_multi_table.py" "$T/cal_text"      # a folder without h5/hw_multi_*.h5
err 1 hw_multi_table "$T/multi_text/h5/hw_multi_1.h5" $PY "$S/hw_multi_table.py" "$T/multi_text"
err 1 hw_multi_table "$T/multi_empty/h5/hw_multi_1.h5" $PY "$S/hw_multi_table.py" "$T/multi_empty"
helps $PY "$S/hw_multi_table.py" --help
# hw_gpu_check.py (scripts/hw_session.sh post's check of the runs' GPU): a folder that is none, an h5 it cannot read,
# a preset that does not exist
err 1 hw_gpu_check "$M" $PY "$S/hw_gpu_check.py" --preset h200 "$M"
err 1 hw_gpu_check "$T/multi_text/h5/hw_multi_1.h5" $PY "$S/hw_gpu_check.py" --preset h200 "$T/multi_text"
err 1 hw_gpu_check "datasets/presets/gpu/nosuch.lua" $PY "$S/hw_gpu_check.py" --preset nosuch "$T/multi_empty"
helps $PY "$S/hw_gpu_check.py" --help
helps $PY "$S/profile_block.py" --help
# text readers (an empty HDF5 file is the other kind of file for them)
matrix 1 attn_bench attn_bench.py
matrix 1 profile_ratio profile_ratio.py -- "$ROOT/datasets/profiles/h200-20261201k.lua"
matrix 1 smi_segments smi_segments.py -- "$T/marks.txt"
err 1 smi_segments "$E" $PY "$S/smi_segments.py" "$TX" "$E"               # the marks file
matrix 2 sel_align_ncu sel_align_ncu.py
matrix 1 attn_geom_loo attn_geom_loo.py                                     # not attn_waves_check's prefix
err 1 tiny_dllm_card "$M" $PY "$S/tiny_dllm_card.py" "$M" --png "$T/card.png"
err 1 tiny_dllm_card "$T/card_text/metrics.json" $PY "$S/tiny_dllm_card.py" "$T/card_text" --png "$T/card.png"
err 1 tiny_dllm_card "$T/card_empty/metrics.json" $PY "$S/tiny_dllm_card.py" "$T/card_empty" --png "$T/card.png"
helps $PY "$S/tiny_dllm_card.py" --help
# claims_pins.py: a pins file or ledger it cannot use, and an --only that names no pin, exit 2 (usage)
err 2 claims_pins.py "$M" $PY "$S/claims_pins.py" "$DKV" --pins "$M"
err 2 claims_pins.py "$TX" $PY "$S/claims_pins.py" "$DKV" --pins "$TX"
err 2 claims_pins.py "$E" $PY "$S/claims_pins.py" "$DKV" --pins "$E"
err 2 claims_pins.py "$T/nopins.txt" $PY "$S/claims_pins.py" "$DKV" --pins "$T/nopins.txt"
err 2 claims_pins.py "$T/nogroup.txt:1: regex 'no group here' has no group" $PY "$S/claims_pins.py" "$DKV" --pins "$T/nogroup.txt"
err 2 claims_pins.py "--only 9z: no pin of row 9z" $PY "$S/claims_pins.py" "$DKV" --pins "$ROOT/tests/claims_pins.txt" --only 9z
err 2 claims_pins.py "$M" $PY "$S/claims_pins.py" "$DKV" --pins "$ROOT/tests/claims_pins.txt" --claims "$M"
helps $PY "$S/claims_pins.py" --help
# other usage: an option without its value, no file at all
err 2 ncu_bytes "-o needs a file" $PY "$S/ncu_bytes.py" "$E" "$E" -o
err 2 "usage" "h5_summary.py FILE.h5" $PY "$S/h5_summary.py"
# --help alone (the file-reading cases of these are in their own tests, or they read no file)
for sc in check_layering.py long_functions.py attn_items.py machine_clocks.py tiny_dllm_numpy.py train_tiny_dllm.py \
          attn_waves_check.py; do
    helps $PY "$S/$sc" --help
done

# run the cases, CASE_JOBS at a time (default: the CPUs, at most 4)
export OPENBLAS_NUM_THREADS=${OPENBLAS_NUM_THREADS:-1}   # numpy's import, once per case (tests/run.sh sets it too)
jobs_max=${CASE_JOBS:-$(c=$(nproc 2>/dev/null || echo 2); echo $((c > 4 ? 4 : c)))}
for ((i = 0; i < n; i++)); do
    while [ "$(jobs -rp | wc -l)" -ge "$jobs_max" ]; do wait -n; done
    (cd "$ROOT" && eval "${c_cmd[$i]}" >"$T/c$i.out" 2>"$T/c$i.err" </dev/null; echo $? >"$T/c$i.rc") &
done
wait

bad=0
failed() { echo "FAIL: $1: ${c_cmd[$i]}"; sed 's/^/      | /' "$T/c$i.err" "$T/c$i.out" | head -n 6; bad=$((bad + 1)); }
for ((i = 0; i < n; i++)); do
    rc=$(cat "$T/c$i.rc")
    if grep -q Traceback "$T/c$i.err" "$T/c$i.out"; then failed "a traceback (exit $rc)"; continue; fi
    [ "$rc" = "${c_want[$i]}" ] || { failed "exit $rc, not ${c_want[$i]}"; continue; }
    if [ "${c_kind[$i]}" = help ]; then
        [ -s "$T/c$i.out" ] && [ ! -s "$T/c$i.err" ] || failed "--help: no usage on stdout, or something on stderr"
        continue
    fi
    lines=$(grep -c . "$T/c$i.err")
    [ "$lines" = 1 ] || { failed "$lines lines on stderr, not one"; continue; }
    line=$(cat "$T/c$i.err")
    [[ "$line" == "${c_name[$i]}: "* ]] || { failed "the line does not start with '${c_name[$i]}: '"; continue; }
    [[ "$line" == *"${c_file[$i]}"* ]] || { failed "the line does not name '${c_file[$i]}'"; continue; }
done
# a pin whose group captures a word fails that pin, named (exit 1), without a traceback (it raised ValueError)
out=$(cd "$ROOT" && $PY "$S/claims_pins.py" "$DKV" --pins "$T/word.txt" 2>&1); rc=$?
if [ $rc != 1 ] || grep -q Traceback <<<"$out" || ! grep -qF "FAIL 1a (pins line 1): /^(\w+)/ matched" <<<"$out"; then
    echo "FAIL: a pin whose group is a word: exit $rc: $(head -n 3 <<<"$out")"; bad=$((bad + 1))
fi
# script_io.replacing, behind every script's -o: an output that is one of the command's inputs, and a PATH.tmp that
# exists, are refused before anything is written (until session 51 ncu_bytes.py -o REAL.h5 replaced its own input,
# and a user's PATH.tmp was overwritten, then removed)
out=$(cd "$T" && printf 'in\n' >io_in.txt && printf 'mine\n' >io_out.txt.tmp && printf 'old\n' >io_out.txt &&
      $PY - "$S" <<'PYEOF' 2>&1
import sys
sys.path.insert(0, sys.argv[1])
import script_io
for path, inputs in (("io_in.txt", ("io_in.txt",)), ("io_out.txt", ())):
    try:
        script_io.write_text(path, "new\n", inputs=inputs)
        print("written", path)
    except OSError as e:
        print("refused", path, e.strerror)
script_io.write_text("io_new.txt", "new\n", inputs=("io_in.txt",))
PYEOF
)
if ! grep -q "refused io_in.txt it is also this command's input io_in.txt" <<<"$out" ||
   ! grep -q "refused io_out.txt .*io_out.txt.tmp exists" <<<"$out" || [ "$(cat "$T/io_in.txt" "$T/io_out.txt.tmp" \
   "$T/io_out.txt" "$T/io_new.txt")" != "$(printf 'in\nmine\nold\nnew')" ]; then
    echo "FAIL: script_io.replacing's refusals: $out"; bad=$((bad + 1))
fi
if [ $bad -gt 0 ]; then
    echo "FAIL: $bad of $((n + 1)) cases"
    exit 1
fi
echo "ok: $((n + 1)) cases: one line naming the file, the documented status, no traceback; --help exits 0"
