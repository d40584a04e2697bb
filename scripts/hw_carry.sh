#!/usr/bin/env bash
# hw_carry.sh - a device call's working tree without datasets/hw (the device tool carries at most 64 MiB, and
# datasets/hw alone is more), and nothing lost on the way back (since session 48, when a command.sh written into the
# emptied tree was deleted with it).  Run from the repository root.
#
#   bash scripts/hw_carry.sh out DIR...   datasets/hw moved to the stash; datasets/hw remade holding each DIR's
#                                         command.sh alone (DIR: a call folder under datasets/hw, e.g.
#                                         datasets/hw/2026-12-05/call133)
#   bash scripts/hw_carry.sh back         every file under datasets/hw that the stash lacks copied into it first
#                                         (one that differs from the stash's kept beside it as FILE.carried), each
#                                         named; then the stash moved back to datasets/hw
#   bash scripts/hw_carry.sh status       whether a stash is out, and from where
#
# The stash: $HW_CARRY_STASH, default ${TMPDIR:-/tmp}/dkv-hw-carry; one at a time (`out` refuses while one is out,
# `back` when none is, or when it was taken from another tree).  Exit status: 0; 1 when a step fails or is refused
# (the message names what; nothing is moved); 2 on a usage error.
set -uo pipefail
usage() { sed -n '2,/^[^#]/{/^#/p}' "$0" | sed 's/^# \{0,1\}//'; }   # the comment lines on top
die() { echo "hw_carry: $*" >&2; exit 1; }
STASH=${HW_CARRY_STASH:-${TMPDIR:-/tmp}/dkv-hw-carry}
HW=datasets/hw
case ${1:-} in
-h|--help) usage; exit 0 ;;
out)
    shift
    [ $# -ge 1 ] || { echo "hw_carry: out wants at least one call folder (--help)" >&2; exit 2; }
    [ -d "$HW" ] || die "no $HW here ($PWD): run from the repository root"
    [ -e "$STASH" ] && die "a stash is out already ($STASH, from $(cat "$STASH/ROOT" 2> /dev/null)): 'back' first"
    for d in "$@"; do
        d=${d%/}
        [[ $d == "$HW"/* ]] || die "$d is not a folder under $HW"
        [ -f "$d/command.sh" ] || die "$d has no command.sh"
    done
    mkdir -p "$STASH" && echo "$PWD" > "$STASH/ROOT" || die "cannot make $STASH"
    mv "$HW" "$STASH/hw" || { rm -rf "$STASH"; die "cannot move $HW to $STASH"; }
    for d in "$@"; do
        d=${d%/}
        mkdir -p "$d" && cp "$STASH/hw/${d#"$HW"/}/command.sh" "$d/command.sh" || die "cannot put back $d/command.sh"
        echo "carried: $d/command.sh"
    done
    echo "stash: $STASH (bash scripts/hw_carry.sh back, after the call)" ;;
back)
    [ $# = 1 ] || { echo "hw_carry: back takes no argument (--help)" >&2; exit 2; }
    [ -d "$STASH/hw" ] || die "no stash out ($STASH)"
    [ "$(cat "$STASH/ROOT" 2> /dev/null)" = "$PWD" ] || die "the stash was taken from $(cat "$STASH/ROOT" 2> /dev/null), not $PWD"
    if [ -d "$HW" ]; then
        while IFS= read -r -d '' f; do
            rel=${f#"$HW"/} s="$STASH/hw/${f#"$HW"/}"
            if [ ! -e "$s" ]; then
                mkdir -p "$(dirname "$s")" && cp -p "$f" "$s" || die "cannot keep $f in the stash"
                echo "kept: $HW/$rel (new in the carried tree)"
            elif ! cmp -s "$f" "$s"; then
                cp -p "$f" "$s.carried" || die "cannot keep $f in the stash"
                echo "kept: $HW/$rel.carried (differs from the stashed $HW/$rel)"
            fi
        done < <(find "$HW" -type f -print0)
        rm -rf "$HW" || die "cannot remove the carried $HW"
    fi
    mv "$STASH/hw" "$HW" || die "cannot move the stash back to $HW (it stays in $STASH/hw)"
    rm -rf "$STASH"
    echo "back: $HW" ;;
status)
    if [ -d "$STASH/hw" ]; then echo "out: $STASH, from $(cat "$STASH/ROOT" 2> /dev/null)"; else echo "none out ($STASH)"; fi ;;
*) echo "hw_carry: out DIR..., back or status expected (--help)" >&2; exit 2 ;;
esac
