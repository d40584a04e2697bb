#!/usr/bin/env bash
# tests/run_cached.sh OUT.h5 ARG... - `"$DKV" run ARG... -o OUT.h5` (same stdout, stderr, exit status
# and results file), run once per tests/run.sh: several tests check the same experiment
# (test_experiments.sh, test_claims.sh through scripts/claims_pins.py, test_docs_python.sh), and
# a simulation is deterministic, so the second asks for the first's run instead of repeating it.
#
# The cache is the folder $DKV_RUN_CACHE (tests/run.sh makes one per invocation, under its scratch
# folder: nothing is kept between invocations); without it this is just `dkv run`.  An entry is keyed
# by $DKV, the working directory and ARG... less any --time-limit; a test waits (flock) while
# another runs the same command.  A stored run serves a request only when it exited 0 under a time
# limit no larger than the request's (0 = none): a run that passed the default 10 s limit passes
# `--time-limit 600` with the same output, never the reverse; otherwise the request runs itself
# (exactly as without the cache).  So the first request runs under the smaller of its limit and the
# default, whoever comes first.
set -u
: "${DKV:?}"
out=$1; shift
[ -n "${DKV_RUN_CACHE:-}" ] || exec "$DKV" run "$@" -o "$out"

args=(); limit=""
while [ $# -gt 0 ]; do
    if [ "$1" = --time-limit ] && [ $# -ge 2 ]; then limit=$2; shift 2; else args+=("$1"); shift; fi
done
# the default limit, as `dkv run --help` states it ("(default 10 s; 0 =")
def=$("$DKV" run --help 2>&1 | sed -n 's/.*--time-limit SECONDS.*(default \([0-9.]*\) s.*/\1/p')
[ -n "$def" ] || { echo "tests/run_cached.sh: no default --time-limit in 'dkv run --help'" >&2; exit 2; }
lim_args=()
[ -z "$limit" ] && limit=$def || lim_args=(--time-limit "$limit")
le() {   # limit a <= limit b, 0 being none (infinite)
    awk -v a="$1" -v b="$2" 'BEGIN { if (b == 0) exit 0; if (a == 0) exit 1; exit !(a <= b) }'
}
# a new entry runs under the smaller of the request's limit and the default, so that it serves
# every request (every experiment passes under the default: test_experiments.sh)
run_limit=$limit
le "$limit" "$def" || run_limit=$def

key=$(printf '%s\0' "$DKV" "$PWD" "${args[@]}" | sha1sum | cut -c1-16)
entry="$DKV_RUN_CACHE/$key"
exec 9>"$entry.lock"
flock 9
if [ ! -f "$entry/rc" ]; then
    mkdir -p "$entry"
    printf '%s\n' "${args[@]}" >"$entry/args"
    "$DKV" run "${args[@]}" --time-limit "$run_limit" -o "$entry/out.h5" >"$entry/stdout" 2>"$entry/stderr"
    echo "$? $run_limit" >"$entry/rc"
fi
read -r rc ran_limit <"$entry/rc"
if [ "$rc" != 0 ] || ! le "$ran_limit" "$limit"; then
    flock -u 9
    exec "$DKV" run "${args[@]}" "${lim_args[@]}" -o "$out"
fi
flock -u 9
cat "$entry/stdout"
cat "$entry/stderr" >&2
[ ! -e "$entry/out.h5" ] || cp "$entry/out.h5" "$out"
