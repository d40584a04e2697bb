#!/usr/bin/env bash
# test_l2probe.sh - scripts/l2probe.py (what the L2 keeps between kernels, from cuda/bench/l2probe.cu under
# Nsight Compute; docs/COST_MODEL.md "What the L2 keeps between kernels") without a GPU: stand-in manifests
# and ncu CSVs made from a model L2 must be fitted back to that model (sets of 16 ways over 40 MB; one LRU
# over 31.5 MB), bad inputs are refused naming file and line, and device calls 56's and 58's recorded files parse.
set -euo pipefail
: "${DKV:?}" "${T:?}" "${ROOT:?}"
fail() { echo "FAIL: $*" >&2; exit 1; }
cd "$ROOT"
PY=/usr/bin/python3

$PY scripts/l2probe.py standin "$T/m16.txt" "$T/n16.csv" --cap 40 --assoc 16
$PY scripts/l2probe.py "$T/m16.txt" "$T/n16.csv" -o "$T/t16.md" > "$T/o16.txt" || fail "l2probe.py on the 16-way stand-in"
cmp -s "$T/t16.md" "$T/o16.txt" || fail "-o and stdout differ"
grep -q "^Criterion: none (a measurement)" "$T/o16.txt" || fail "no criterion line first"
n=$(grep -c "^| \(clean\|dirty\), [12] CTA(s), [28] MB | 16 ways | 40.0 | 0.000 |$" "$T/o16.txt" || true)
[ "$n" = 8 ] || fail "16-way stand-in: $n of 8 curves fitted back to 16 ways over 40 MB: $(grep ways "$T/o16.txt")"
$PY scripts/l2probe.py standin "$T/mL.txt" "$T/nL.csv" --cap 31.5
$PY scripts/l2probe.py "$T/mL.txt" "$T/nL.csv" > "$T/oL.txt"
n=$(grep -c "| one LRU | \(30.0\|31.5\) | 0.000 |$" "$T/oL.txt" || true)
[ "$n" = 8 ] || fail "LRU stand-in: $n of 8 curves fitted back to one LRU: $(grep -i lru "$T/oL.txt")"
# one LRU of 31.5 MB: an 8 MB probe behind a 28 MB stream keeps (31.5 - 28) / 8 = 0.438, a 2 MB one all
grep -q "^| 28 | 1.000 | 0.438 | 1.000 | 0.438 | 1.000 (0.000) | 0.438 (0.562) |" "$T/oL.txt" ||
    fail "LRU stand-in: the 28 MB row is not the model's: $(grep '^| 28 ' "$T/oL.txt")"

# bad inputs: named by file and line, exit 1, nothing half-written
head -n 6 "$T/n16.csv" > "$T/short.csv"
if $PY scripts/l2probe.py "$T/m16.txt" "$T/short.csv" -o "$T/never.md" 2> "$T/e1"; then fail "a short CSV was accepted"; fi
grep -q "short.csv has 2 l2probe kernels, .*m16.txt lists [0-9]* launches" "$T/e1" || fail "short CSV: $(cat "$T/e1")"
[ ! -e "$T/never.md" ] || fail "-o written despite the error"
sed '3s/^k \([0-9]*\) .*/k \1 w 0 dirty x 0 1/' "$T/m16.txt" > "$T/badm.txt"
if $PY scripts/l2probe.py "$T/badm.txt" "$T/n16.csv" 2> "$T/e2"; then fail "a bad manifest line was accepted"; fi
grep -q "badm.txt:3: a number field does not parse" "$T/e2" || fail "bad manifest: $(cat "$T/e2")"
sed 's/"write_kernel/"read_kernel/' "$T/n16.csv" > "$T/swap.csv"
if $PY scripts/l2probe.py "$T/m16.txt" "$T/swap.csv" 2> "$T/e3"; then fail "swapped kernel names were accepted"; fi
grep -q "m16.txt:[0-9]*: launch [0-9]* is write_kernel, ncu's row (.*swap.csv:[0-9]*) is read_kernel" "$T/e3" ||
    fail "swapped kernels: $(cat "$T/e3")"
if $PY scripts/l2probe.py standin "$T/x.txt" "$T/x.csv" --cap 40 --asoc 16 2> "$T/e4"; then fail "a misspelt option was accepted"; fi
grep -q "unknown option --asoc" "$T/e4" || fail "misspelt option: $(cat "$T/e4")"
# an option without its value is refused (--assoc was dropped, the stand-in written as one LRU)
if $PY scripts/l2probe.py standin "$T/x.txt" "$T/x.csv" --cap 40 --assoc 2> "$T/e4"; then fail "--assoc without a value was accepted"; fi
grep -qxF "l2probe.py: standin: --assoc needs a value" "$T/e4" || fail "--assoc without a value: $(cat "$T/e4")"

# the recorded run (device call 56): every curve, the bound and the rows tables
D=datasets/hw/2026-12-02/call56
$PY scripts/l2probe.py $D/l2probe.txt $D/l2probe.csv > "$T/o56.txt" || fail "call 56's files do not parse"
[ "$(grep -c "^| \(clean\|dirty\), [12] CTA(s)" "$T/o56.txt")" = 8 ] || fail "call 56: not 8 curves"
grep -q "^| 64 | 34.5[0-9] | 0.00 | 28.4[0-9] |$" "$T/o56.txt" || fail "call 56: the bound row at 64 MB moved"
# device call 58: streams read by 4-64 CTAs a line (one LRU of about 30 MB) and the in-place rewrite
D=datasets/hw/2026-12-02/call58
$PY scripts/l2probe.py $D/l2probe.txt $D/l2probe.csv > "$T/o58.txt" || fail "call 58's files do not parse"
for c in 4 16 64; do
    grep -q "^| clean, $c CTA(s), 8 MB | one LRU | \(29\|30\|31\)\.[05] |" "$T/o58.txt" ||
        fail "call 58: the $c-CTA curve is not one LRU of 29-31 MB: $(grep "$c CTA(s)" "$T/o58.txt")"
done
grep -q "^| 34.6 | 4.9[0-9] | 26.0[0-9] | 28.2[0-9] |$" "$T/o58.txt" || fail "call 58: the in-place row at 34.6 MB moved"
# l2drain.py (cuda/bench/l2drain.cu): a stand-in L2 draining 0.1 MB a microsecond while a kernel runs gives its
# rows back (8 MB dirty, 0.2 drained by the 3 us writer, 1.0 by a 10 us spin, 6.8 left for the flush; the host's
# idle drains nothing, with --idle 0.1 MB a microsecond of it: all of it in 1 ms); a run whose kernels do not match its manifest fails
$PY scripts/l2drain.py standin "$T/dm.txt" "$T/dn.csv" --rate 0.1
$PY scripts/l2drain.py "$T/dm.txt" "$T/dn.csv" > "$T/d.txt" || fail "l2drain.py on the stand-in: $(cat "$T/d.txt")"
grep -qxF "| 8 | 10 | 0.200, 3.0 | 1.000, 10.0 | 6.800 |" "$T/d.txt" && grep -qxF "| 8 | 1 | 0.200, 3.0 | - | 7.800 |" "$T/d.txt" ||
    fail "l2drain.py's rows: $(cat "$T/d.txt")"
$PY scripts/l2drain.py standin "$T/dm2.txt" "$T/dn2.csv" --rate 0.1 --idle
$PY scripts/l2drain.py "$T/dm2.txt" "$T/dn2.csv" > "$T/d2.txt" && grep -qxF "| 8 | 1 | 0.200, 3.0 | - | 0.000 |" "$T/d2.txt" ||
    fail "l2drain.py's stand-in with idle drain: $(grep -A6 "### none" "$T/d2.txt")"
head -n -3 "$T/dn.csv" > "$T/dn3.csv"
if $PY scripts/l2drain.py "$T/dm.txt" "$T/dn3.csv" 2> "$T/e"; then fail "l2drain.py took a run a kernel short"; fi
grep -q "has 390 kernels, .* lists 391 launches" "$T/e" || fail "l2drain.py's count error: $(cat "$T/e")"
# the strided kinds (session 31): a table per stride, the strided read as the middle kernel, the strided write as the
# writer (its trial has no middle kernel); a strided read's kernel must be sread_kernel
for k in sread1 swrite1 sread56 swrite56 sread512 swrite512; do grep -qx "### $k" "$T/d.txt" || fail "l2drain.py: no $k table"; done
grep -A4 "### sread56" "$T/d.txt" | grep -q "1 KB chunks 56 KB apart" || fail "l2drain.py: sread56's unit"
grep -A8 "### sread512" "$T/d.txt" | grep -qxF "| 8 | 2 | 0.200, 3.0 | 0.300, 3.0 | 7.500 |" || fail "l2drain.py: sread512's rows"
grep -A5 "### swrite56" "$T/d.txt" | grep -qxF "| 8 | 0 | 0.200, 3.0 | - | 7.800 |" || fail "l2drain.py: swrite56's rows"
# behind<L>: the logits written (b) and read (r) before the probe; in the stand-in 39 MB less the writer's 0.2 and the
# read's 0.3 stay dirty with the probe's 1 MB less its writer's 0.2 and the middle read's 0.3 (h 39.0); behind0 has none
grep -A5 "### behind39" "$T/d.txt" | grep -qxF "| 1 | 2 | 0.200 | 0.300 | 0.200, 3.0 | 0.300, 3.0 | 39.000 |" ||
    fail "l2drain.py: behind39's rows: $(grep -A5 "### behind39" "$T/d.txt")"
grep -A5 "### behind0" "$T/d.txt" | grep -qxF "| 1 | 2 | - | - | 0.200, 3.0 | 0.300, 3.0 | 0.500 |" || fail "l2drain.py: behind0's rows"
sed 's/sread_kernel/read_kernel/' "$T/dn.csv" > "$T/dn5.csv"
if $PY scripts/l2drain.py "$T/dm.txt" "$T/dn5.csv" 2> "$T/e"; then fail "l2drain.py took a contiguous read for a strided one"; fi
grep -q "is sread_kernel, Nsight Compute's row .* is read_kernel" "$T/e" || fail "l2drain.py's strided name error: $(cat "$T/e")"
sed 's/spin_kernel/read_kernel/' "$T/dn.csv" > "$T/dn4.csv"
if $PY scripts/l2drain.py "$T/dm.txt" "$T/dn4.csv" 2> "$T/e"; then fail "l2drain.py took a read for a spin"; fi
grep -q "launch 2 is spin_kernel, Nsight Compute's row .* is read_kernel" "$T/e" || fail "l2drain.py's name error: $(cat "$T/e")"
# l2drain share's kinds (since session 32): a stand-in L2 that writes back half the probe's dirty bytes when other
# CTAs read or rewrite them gives the control (xread0) nothing, xreadall half of 8 MB, the rewrite dirty again; a
# --clean out of [0, 1] is refused; a share run paired with the full run's log is a count error
$PY scripts/l2drain.py standin "$T/sm.txt" "$T/sn.csv" --share --clean 0.5
$PY scripts/l2drain.py "$T/sm.txt" "$T/sn.csv" > "$T/s.txt" || fail "l2drain.py on the share stand-in: $(cat "$T/s.txt")"
for k in xread0 xread1 xread66 xreadall xwrite0 xwrite66; do grep -qx "### $k" "$T/s.txt" || fail "l2drain.py: no $k table"; done
grep -A9 "### xread0" "$T/s.txt" | grep -qxF "| 8 | 0 | 0.000 | 0.000, 0.000, 3.0 | 0.000, 0.000 | 8.000 |" ||
    fail "l2drain.py: xread0's rows: $(grep -A9 "### xread0" "$T/s.txt")"
grep -A9 "### xreadall" "$T/s.txt" | grep -qxF "| 8 | 1 | 0.000 | 4.000, 0.000, 3.0 | 0.000, 0.000 | 4.000 |" ||
    fail "l2drain.py: xreadall's rows: $(grep -A9 "### xreadall" "$T/s.txt")"
grep -A9 "### xwrite66" "$T/s.txt" | grep -qxF "| 4 | 0 | 0.000 | 2.000, 0.000, 3.0 | 0.000, 0.000 | 4.000 |" ||
    fail "l2drain.py: xwrite66's rows: $(grep -A9 "### xwrite66" "$T/s.txt")"
if $PY scripts/l2drain.py standin "$T/sm2.txt" "$T/sn2.csv" --share --clean 2 2> "$T/e"; then fail "--clean 2 accepted"; fi
grep -q "needs --clean FRACTION" "$T/e" || fail "l2drain.py's --clean error: $(cat "$T/e")"
if $PY scripts/l2drain.py "$T/sm.txt" "$T/dn.csv" 2> "$T/e"; then fail "l2drain.py paired a share manifest with the full log"; fi
grep -q "has 391 kernels, .* lists 181 launches" "$T/e" || fail "l2drain.py's share count error: $(cat "$T/e")"
# `l2drain order` (session 36; chit since 37): from an LRU stand-in of 36 MB every kind gives up A first once the 8 MB probe and the
# stream pass the capacity (x 32: 4 MB of A gone, B or C whole, read from the trial that re-reads it first), both
# halves from x 36 on; the second re-read of a trial is not what the table takes
$PY scripts/l2drain.py standin "$T/om.txt" "$T/on.csv" --order --lru 36
$PY scripts/l2drain.py "$T/om.txt" "$T/on.csv" > "$T/o.txt" || fail "l2drain.py on the order stand-in: $(cat "$T/o.txt")"
for k in "rehit (and rehitr)" "rehit0 (and rehit0r)" "dclean (and dcleanr)" "chit (and chitr)"; do
    grep -qxF "### $k" "$T/o.txt" || fail "l2drain.py: no $k table: $(cat "$T/o.txt")"
done
grep -A11 "### rehit (" "$T/o.txt" | grep -qxF "| 8 | 32 | 4.000 | 4.000 | 0.000 | 0.000 | A |" &&
    grep -A11 "### rehit (" "$T/o.txt" | grep -qxF "| 8 | 28 | 0.000 | 0.000 | 0.000 | 8.000 | neither |" &&
    grep -A11 "### dclean (" "$T/o.txt" | grep -qxF "| 8 | 36 | 4.000 | 4.000 | 4.000 | 0.000 | both |" &&
    grep -A11 "### chit (" "$T/o.txt" | grep -qxF "| 8 | 32 | 0.000 | 4.000 | 0.000 | 0.000 | A |" ||
    fail "l2drain.py: the order tables' rows: $(cat "$T/o.txt")"
if $PY scripts/l2drain.py standin "$T/om2.txt" "$T/on2.csv" --order --lru 0 2> "$T/e"; then fail "--lru 0 accepted"; fi
grep -q "needs --lru MB" "$T/e" || fail "l2drain.py's --lru error: $(cat "$T/e")"
# the stand-in's options: a misspelt or unknown one, or one its mode does not use, is refused (all were ignored)
for bad in "--rate 0.1 --idel" "--rate 0.1 --bogus 7" "--order --lru 36 --idle" "--rate"; do
    # shellcheck disable=SC2086  # the options, split
    if $PY scripts/l2drain.py standin "$T/xm.txt" "$T/xn.csv" $bad 2> "$T/e"; then fail "l2drain.py standin $bad accepted"; fi
    grep -qE "^l2drain.py: standin( --order)?: (unknown option|--idle has no effect|--rate needs a value)" "$T/e" ||
        fail "l2drain.py standin $bad: $(cat "$T/e")"
done
[ ! -e "$T/xm.txt" ] || fail "a refused stand-in wrote its manifest"
# l2drain_gemm.py (`l2drain gemm`, sessions 39-40): a GEMM's launch pairs with the one or more kernels of other names
# after it (the stand-in: 2 a GEMM, then 1), the plain read with one read_kernel; from the stand-in's LRU of 40 MB the
# 8 MB probe is whole after 32 MB of stream and gone after 40; a row missing or misnamed is an error naming the launch
for nk in 2 1; do
    $PY scripts/l2drain_gemm.py standin "$T/gm$nk.txt" "$T/gn$nk.csv" --gemm-kernels $nk || fail "l2drain_gemm.py standin"
    $PY scripts/l2drain_gemm.py "$T/gm$nk.txt" "$T/gn$nk.csv" > "$T/g$nk.txt" || fail "l2drain_gemm.py: $(cat "$T/g$nk.txt")"
    grep -A8 "### gemm288" "$T/g$nk.txt" | grep -qxF "| 32 | 32.$((nk - 1))00, 0.000, $((3 * nk)).0 ($nk) | 0.000 | 0.000 | 8.000 |" &&
        grep -A9 "### plain" "$T/g$nk.txt" | grep -qxF "| 40 | 40.000, 8.000, 3.0 (1) | 4.000 | 4.000 | 0.000 |" ||
        fail "l2drain_gemm.py's rows ($nk kernels a GEMM): $(cat "$T/g$nk.txt")"
done
# the tables come in M order (the stand-in's kinds are not: gemm64, gemm288, gemm128), not in the manifest's or by name
[ "$(grep '^### ' "$T/g2.txt" | tr '\n' ' ')" = "### plain ### gemm64 ### gemm128 ### gemm288 " ] ||
    fail "l2drain_gemm.py's table order: $(grep '^### ' "$T/g2.txt")"
grep -v '^"9",' "$T/gn2.csv" > "$T/gn3.csv"   # the first trial's flush (after the three GEMMs' warm-ups)
if $PY scripts/l2drain_gemm.py "$T/gm2.txt" "$T/gn3.csv" 2> "$T/e"; then fail "l2drain_gemm.py took a run a kernel short"; fi
grep -q "launch 6 is read_kernel, .*row [0-9]* is write_kernel" "$T/e" || fail "l2drain_gemm.py's pairing error: $(cat "$T/e")"
# `l2drain rmw` (session 40): the same tables for its kinds (rmw_kernel where plain writes the probe or reads the
# stream), plain first, the others by name, then the bound kinds; a launch whose row is another of l2drain's kernels
# is an error
$PY scripts/l2drain_gemm.py standin "$T/rm.txt" "$T/rn.csv" --rmw || fail "l2drain_gemm.py standin --rmw"
$PY scripts/l2drain_gemm.py "$T/rm.txt" "$T/rn.csv" > "$T/r.txt" || fail "l2drain_gemm.py on rmw: $(cat "$T/r.txt")"
[ "$(grep '^### ' "$T/r.txt" | cut -d' ' -f2 | tr '\n' ' ')" = "plain rmwboth rmwprobe rmwstream wwprobe bwrite brmw bre " ] ||
    fail "l2drain_gemm.py's rmw tables: $(grep '^### ' "$T/r.txt")"
# ... and (session 41) the dirty bound behind one writer of D MB: the stand-in keeps 29.7 MB dirty; at 40 MB each writer
# writes back 10.3 MB, brmw reads its 40 MB, bre's plain first write writes back 10.3 and its re-dirtying reads none
grep -A10 "### bwrite" "$T/r.txt" | grep -qxF "| 40 | 0.000, 10.300, 3.0 | 29.700 |" &&
    grep -A10 "### brmw" "$T/r.txt" | grep -qxF "| 40 | 40.000, 10.300, 3.0 | 29.700 |" &&
    grep -A10 "### bre" "$T/r.txt" | grep -qxF "| 40 | 10.300 | 0.000, 10.300, 3.0 | 29.700 |" &&
    [ "$(sed -n '/### bre/,$p' "$T/r.txt" | grep -c '^| [0-9]')" = 7 ] ||
    fail "l2drain_gemm.py's bound rows: $(sed -n '/### bwrite/,$p' "$T/r.txt")"
grep -A9 "### rmwboth" "$T/r.txt" | grep -qxF "| 40 | 40.000, 8.000, 3.0 (1) | 4.000 | 4.000 | 0.000 |" ||
    fail "l2drain_gemm.py's rmwboth rows: $(cat "$T/r.txt")"
awk '/rmw_kernel/ && !done { sub(/rmw_kernel/, "write_kernel"); n++; if (n == 3) done = 1 } { print }' "$T/rn.csv" > "$T/rn2.csv"
if $PY scripts/l2drain_gemm.py "$T/rm.txt" "$T/rn2.csv" 2> "$T/e"; then fail "l2drain_gemm.py took write_kernel for rmw_kernel"; fi
grep -q "is rmw_kernel, .*row [0-9]* is write_kernel" "$T/e" || fail "l2drain_gemm.py's rmw pairing error: $(cat "$T/e")"
# ... a bound writer (brmw's first) paired with write_kernel is the same error
id=$(awk '$1 == "k" && $3 == "w" && $5 == "brmw" && $6 == "8.000" { print $2; exit }' "$T/rm.txt")
[ -n "$id" ] || fail "the stand-in has no brmw writer of 8 MB"
sed "s/^\"$id\",\"void rmw_kernel/\"$id\",\"void write_kernel/" "$T/rn.csv" > "$T/rn3.csv"
if $PY scripts/l2drain_gemm.py "$T/rm.txt" "$T/rn3.csv" 2> "$T/e"; then fail "l2drain_gemm.py took write_kernel for brmw's writer"; fi
grep -q "launch $id is rmw_kernel, .*row [0-9]* is write_kernel" "$T/e" || fail "brmw pairing error: $(cat "$T/e")"
# `l2drain after` (session 44): the weights (role g: a read, or a GEMM's kernels) before A and B, then the stream
# plan FLAG MANIFEST CSV OUT KINDS: l2drain_gemm.py's stand-in of the plan FLAG into MANIFEST and CSV, its tables into
# OUT, which hold the kinds KINDS (space-separated, a space after the last) in that order
plan() {
    $PY scripts/l2drain_gemm.py standin "$2" "$3" "$1" || fail "l2drain_gemm.py standin $1"
    $PY scripts/l2drain_gemm.py "$2" "$3" > "$4" || fail "l2drain_gemm.py on $1: $(cat "$4")"
    [ "$(grep '^### ' "$4" | cut -d' ' -f2 | tr '\n' ' ')" = "$5" ] || fail "l2drain_gemm.py's $1 tables: $(grep '^### ' "$4")"
}
plan --after "$T/am.txt" "$T/an.csv" "$T/a.txt" "after_gemm288 after_gemm64 after_plain "
grep -A10 "### after_gemm64" "$T/a.txt" | grep -qxF "| 40 | 40.000, 8.000, 3.0 (1) | 4.000 | 4.000 | 0.000 |" ||
    fail "l2drain_gemm.py's after_gemm64 rows: $(cat "$T/a.txt")"
# a GEMM's kernel where run_after reads (after_plain's first g, the stand-in's first read_kernel row of 96 MB) is a
# pairing error naming that launch
id=$(awk '$1 == "k" && $3 == "g" && $5 == "after_plain" { print $2; exit }' "$T/am.txt")
row=$(grep -m1 '"void read_kernel(int)","dram__bytes_read.sum","byte","96000000.0"' "$T/an.csv" | cut -d'"' -f2)
[ -n "$id" ] && [ -n "$row" ] || fail "the after stand-in has no plain weight read (launch '$id', row '$row')"
sed "s/^\"$row\",\"void read_kernel/\"$row\",\"void gemm_main_kernel/" "$T/an.csv" > "$T/an2.csv"
if $PY scripts/l2drain_gemm.py "$T/am.txt" "$T/an2.csv" 2> "$T/e"; then fail "l2drain_gemm.py took a GEMM for after_plain's read"; fi
grep -q "launch $id is read_kernel, .*row [0-9]* is gemm_main_kernel" "$T/e" || fail "after_plain's pairing error: $(cat "$T/e")"
# `l2drain gout` (session 46): B written by a GEMM (role v: its kernels) or plainly, turned in place (role u: rmw_kernel)
# under the rmw kinds; the tables carry B's writer's own DRAM traffic; an rmw_kernel row where a GEMM's is expected is
# a pairing error naming that launch
plan --gout "$T/um.txt" "$T/un.csv" "$T/go.txt" "gout_gemm gout_gemm512 gout_gemmrmw gout_plain gout_plainrmw "
grep -A10 "### gout_gemm512" "$T/go.txt" | grep -qxF "| 36 | 8.200, 0.000 (2) | 36.000, 4.000, 3.0 (1) | 4.000 | 0.000 | 4.000 |" &&
    grep -A10 "### gout_plainrmw" "$T/go.txt" | grep -qxF "| 40 | 0.000, 0.000 (1) | 40.000, 8.000, 3.0 (1) | 4.000 | 4.000 | 0.000 |" ||
    fail "l2drain_gemm.py's gout rows: $(cat "$T/go.txt")"
# every GEMM kernel renamed rmw_kernel: the first GEMM launch (gout_gemm's warm-up, launch 0) is named
sed 's/gemm_main_kernel/rmw_kernel/' "$T/un.csv" > "$T/un2.csv"
id=$(awk '$1 == "k" && $3 == "g0" && $5 == "gout_gemm" { print $2; exit }' "$T/um.txt")
[ "$id" = 0 ] || fail "the gout stand-in's first launch is not gout_gemm's warm-up ('$id')"
if $PY scripts/l2drain_gemm.py "$T/um.txt" "$T/un2.csv" 2> "$T/e"; then fail "l2drain_gemm.py took rmw_kernel for a GEMM"; fi
grep -q "GEMM launch $id, but .*row [0-9]* is rmw_kernel" "$T/e" || fail "gout's pairing error: $(cat "$T/e")"
# `l2drain pool` (session 47): the stream of pool_kv and pool_grid is pool_kernel (role m), pool_plain's read_kernel; a
# read_kernel row where pool_kernel is expected is a pairing error naming that launch
plan --pool "$T/pm.txt" "$T/pn.csv" "$T/po.txt" "pool_grid pool_kv pool_plain "
grep -A14 "### pool_kv" "$T/po.txt" | grep -qxF "| 36 | 36.000, 4.000, 3.0 (1) | 4.000 | 0.000 | 4.000 |" ||
    fail "l2drain_gemm.py's pool rows: $(cat "$T/po.txt")"
id=$(awk '$1 == "k" && $3 == "m" && $5 == "pool_kv" { print $2; exit }' "$T/pm.txt")
awk -v id="$id" -F'"' 'NR > 1 && $2 == id { sub(/pool_kernel/, "read_kernel") } { print }' OFS='"' "$T/pn.csv" > "$T/pn2.csv"
if $PY scripts/l2drain_gemm.py "$T/pm.txt" "$T/pn2.csv" 2> "$T/e"; then fail "l2drain_gemm.py took read_kernel for pool_kernel"; fi
grep -q "launch $id is pool_kernel, .*row [0-9]* is read_kernel" "$T/e" || fail "pool's pairing error: $(cat "$T/e")"
# `l2drain stride` (session 47): 16 KB chunks S KB apart, pool_kernel (role m)
plan --stride "$T/stm.txt" "$T/stn.csv" "$T/st.txt" "stride1024 stride16 stride256 stride512 stride64 "
grep -A12 "### stride512" "$T/st.txt" | grep -qxF "| 40 | 40.000, 8.000, 3.0 (1) | 4.000 | 4.000 | 0.000 |" ||
    fail "l2drain_gemm.py's stride rows: $(cat "$T/st.txt")"
if $PY scripts/l2drain_gemm.py standin "$T/xm.txt" "$T/xn.csv" --gout --after 2> "$T/e"; then fail "--gout --after accepted"; fi
grep -q "one plan at a time" "$T/e" || fail "l2drain_gemm.py's two-plans error: $(cat "$T/e")"
if $PY scripts/l2drain_gemm.py standin "$T/gm4.txt" "$T/gn4.csv" --gemm-kernels 0 2> "$T/e"; then fail "--gemm-kernels 0 accepted"; fi
grep -q "at least 1" "$T/e" || fail "l2drain_gemm.py's --gemm-kernels error: $(cat "$T/e")"
echo ok
