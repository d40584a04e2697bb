#!/usr/bin/python3
"""claims_pins.py - pins every simulated figure quoted in docs/CLAIMS.md to the experiment that prints it.

    scripts/claims_pins.py DKV [--update [--exact]] [--only ROW] [--pins tests/claims_pins.txt] [--claims docs/CLAIMS.md]

tests/claims_pins.txt has one pin per line (tab-separated; '#' starts a comment):

    ROW <tab> COMMAND <tab> REGEX <tab> QUOTED [<tab> SCALE [<tab> COUNT]]

ROW is the ledger row ("1a", "8", ...): the line of docs/CLAIMS.md starting with "| ROW |" must contain
QUOTED, the figure as the ledger writes it ("57.71", "+9.5 %", "2.46×"), COUNT times (default 1): a row
that states one figure twice gives COUNT 2 and --update rewrites both; a quote found another number of
times fails (it could pass on another figure that reads the same, and --update would rewrite that one).  COMMAND is what follows
`dkv run` (an experiment and its -D options; run once per distinct command, output cached; under
tests/run.sh, $DKV_RUN_CACHE set, through tests/run_cached.sh: a run another test made is reused).  REGEX is
searched in the command's printed output (Python re, MULTILINE); its first group, times SCALE (default
1; 100 turns a printed fraction into the ledger's per cent), is the figure.  A pin
passes when the printed figure is within 1 % of the quoted one, or within half a unit of the quoted
one's last digit (the ledger cannot be more precise than it writes: "0.03 %" holds 0.028).
Commands needing the Azure code trace (the text 'AZURE' in COMMAND, replaced by the trace's path) are
skipped, and counted, when ../shared/datasets/AzureLLMInferenceTrace_code.csv is not there.

--update rewrites QUOTED (in the pins file and in its CLAIMS.md line) to the printed figure, keeping
the quoted format (decimals, sign, unit), for a deliberate re-run of the ledger, where the pin fails; with --exact
also where it passes but the printed figure, written in the quote's format, is not the quote (65.4 quoted, 65.23
printed: 65.2), so the ledger shows what the command prints to the digits it quotes; review the diff and run
it once more without --update (a quote holding two pinned figures is rewritten by both, and the pin whose quote held the other follows it).
Exit status 0 when every pin that ran passed, 1 otherwise (a figure off, a REGEX not found, or a group that does
not read as a number), 2 on usage: a pins file that is malformed (a REGEX without a group included), holds no pin or
cannot be read, a ledger that cannot be read, or an --only ROW no pin names.  --update writes both files through
FILE.tmp, renamed when whole.
"""
import atexit
import os
import re
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import script_io  # noqa: E402  (write_text: --update's files written whole or not at all)

TRACE = os.environ.get('DKV_AZURE_TRACE', '../shared/datasets/AzureLLMInferenceTrace_code.csv')
NUM = re.compile(r'[-+]?\d[\d,]*(?:\.\d+)?')


def parse_quoted(q):
    m = NUM.search(q)
    if not m:
        raise ValueError('no number in %r' % q)
    return float(m.group(0).replace(',', '')), m


def fmt_like(q, v):
    """v written in the format of the quoted q (sign, decimals, thousands separators, surrounding text)."""
    x, m = parse_quoted(q)
    s = m.group(0)
    dec = len(s.split('.')[1]) if '.' in s else 0
    body = '%.*f' % (dec, abs(v))
    if ',' in s:
        ip, _, fp = body.partition('.')
        ip = '{:,}'.format(int(ip))
        body = ip + ('.' + fp if fp else '')
    sign = '-' if v < 0 else ('+' if s.startswith('+') else '')
    if s.startswith('-') and v >= 0:
        sign = '+' if v > 0 else ''
    return q[:m.start()] + sign + body + q[m.end():]


def usage_error(msg):
    print('claims_pins.py: %s' % msg, file=sys.stderr)
    sys.exit(2)


def read_lines(path, what):
    try:
        with open(path) as fh:
            return fh.read().split('\n')
    except (OSError, UnicodeDecodeError) as e:
        usage_error('%s (%s): %s' % (path, what, getattr(e, 'strerror', None) or e))


def load_pins(path):
    pins = []
    text = read_lines(path, 'the pins file')
    if text and text[-1] == '':   # the newline that ends the last line
        text.pop()
    for n, raw in enumerate(text, 1):
        if not raw.strip() or raw.lstrip().startswith('#'):
            pins.append((n, None, raw))
            continue
        f = raw.split('\t')
        if len(f) == 4:
            f.append('1')
        if len(f) == 5:
            f.append('1')
        if len(f) != 6:
            usage_error('%s:%d: expected 4 to 6 tab-separated fields (row, command, regex, quoted[, scale[, '
                        'count]]), got %d' % (path, n, len(f)))
        try:
            if re.compile(f[2]).groups < 1:
                raise ValueError('regex %r has no group: its first group is the figure' % f[2])
            parse_quoted(f[3])
            float(f[4])
            if not f[5].isdigit() or int(f[5]) < 1:
                raise ValueError('count %r: expected a positive integer' % f[5])
        except (re.error, ValueError) as e:
            usage_error('%s:%d: %s' % (path, n, e))
        pins.append((n, f, raw))
    if not any(f for _, f, _ in pins):
        usage_error('%s: no pin (every line blank or a comment)' % path)
    return pins


def claims_line(lines, row):
    key = '| %s |' % row
    for i, l in enumerate(lines):
        if l.startswith(key):
            return i
    return -1


def main():
    args = sys.argv[1:]
    if not args or args[0] in ('-h', '--help'):
        print(__doc__, file=sys.stdout if args else sys.stderr)
        sys.exit(0 if args else 2)
    dkv = args.pop(0)
    if not os.access(dkv, os.X_OK):
        sys.exit('claims_pins.py: no dkv at %s (the first argument)' % dkv)
    known = {'--update': 0, '--exact': 0, '--only': 1, '--pins': 1, '--claims': 1}
    i = 0
    while i < len(args):
        if args[i] not in known or i + known[args[i]] >= len(args):
            print('claims_pins.py: unknown or incomplete option %r' % args[i], file=sys.stderr)
            sys.exit(2)
        i += 1 + known[args[i]]
    update = '--update' in args
    exact = '--exact' in args
    if exact and not update:
        usage_error('--exact rewrites quotes: it goes with --update')
    only = args[args.index('--only') + 1] if '--only' in args else None
    pins_path = args[args.index('--pins') + 1] if '--pins' in args else 'tests/claims_pins.txt'
    claims_path = args[args.index('--claims') + 1] if '--claims' in args else 'docs/CLAIMS.md'
    pins = load_pins(pins_path)
    if only is not None and not any(f and f[0] == only for _, f, _ in pins):
        usage_error('--only %s: no pin of row %s in %s' % (only, only, pins_path))
    lines = read_lines(claims_path, 'the ledger')
    have_trace = os.path.exists(TRACE)
    out_cache, tmp = {}, tempfile.mkdtemp(prefix='claims-')
    atexit.register(shutil.rmtree, tmp, True)   # the runs' results files go with the check
    failed = skipped = passed = 0
    new_pins = []
    for n, f, raw in pins:
        if f is None or (only and f[0] != only):
            new_pins.append(raw)
            continue
        row, cmd, rx, quoted, scale, count = f[0], f[1], f[2], f[3], f[4], int(f[5])
        if 'AZURE' in cmd and not have_trace:
            skipped += 1
            new_pins.append(raw)
            continue
        cmd = cmd.replace('AZURE', TRACE)
        if cmd not in out_cache:
            h5 = os.path.join(tmp, '%d.h5' % len(out_cache))
            argv = [dkv, 'run', '--time-limit', '600'] + cmd.split() + ['-o', h5]
            if os.environ.get('DKV_RUN_CACHE'):   # under tests/run.sh: a run another test made (tests/run_cached.sh)
                argv = ['bash', os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'tests', 'run_cached.sh'),
                        h5, '--time-limit', '600'] + cmd.split()
            p = subprocess.run(argv, capture_output=True, text=True, env=dict(os.environ, DKV=dkv))
            if p.returncode != 0:
                print('FAIL %s: dkv run %s exited %d: %s' % (row, cmd, p.returncode, p.stderr.strip()[-300:]))
                failed += 1
                new_pins.append(raw)
                continue
            out_cache[cmd] = p.stdout
        m = re.search(rx, out_cache[cmd], re.M)
        li = claims_line(lines, row)
        if not m:
            print('FAIL %s (pins line %d): /%s/ not found in the output of `dkv run %s`' % (row, n, rx, cmd))
            failed += 1
            new_pins.append(raw)
            continue
        try:
            got = float(m.group(1).replace(',', '')) * float(scale)
        except (AttributeError, ValueError):   # an optional group that did not take part, or not a number
            print('FAIL %s (pins line %d): /%s/ matched %r, whose first group %r is not a number'
                  % (row, n, rx, m.group(0)[:80], m.group(1)))
            failed += 1
            new_pins.append(raw)
            continue
        want, qm = parse_quoted(quoted)
        if li < 0 or quoted not in lines[li]:
            print('FAIL %s (pins line %d): %r is not in docs/CLAIMS.md row %s' % (row, n, quoted, row))
            failed += 1
            new_pins.append(raw)
            continue
        if lines[li].count(quoted) != count:   # which one is pinned? a figure quoted twice is pinned twice
            print('FAIL %s (pins line %d): %r occurs %d times in docs/CLAIMS.md row %s, the pin says %d: quote more '
                  'of its context, or give the count when every occurrence is this figure'
                  % (row, n, quoted, lines[li].count(quoted), row, count))
            failed += 1
            new_pins.append(raw)
            continue
        # within 1 %, or within half a unit of the quoted figure's last digit (0.03 % quotes 0.028)
        digits = qm.group(0).split('.')
        tol = max(0.01 * abs(want), 0.5 * 10 ** -(len(digits[1]) if len(digits) > 1 else 0))
        ok = abs(got - want) <= tol
        if update and (not ok or (exact and fmt_like(quoted, got) != quoted)):
            nq = fmt_like(quoted, got)
            lines[li] = lines[li].replace(quoted, nq, count)
            print('UPDATE %s: %s -> %s' % (row, quoted, nq))
            # an earlier pin of the row whose quote held this one ("758 → 357 s" and "→ 357 s") follows
            for i, p in enumerate(new_pins):
                g = p.split('\t')
                if len(g) >= 4 and g[0] == row and quoted in g[3] and g[3] not in lines[li]:
                    g[3] = g[3].replace(quoted, nq, 1)
                    new_pins[i] = '\t'.join(g)
            new_pins.append('\t'.join([row, f[1], rx, nq] + ([scale, str(count)] if count != 1 else
                                                               [scale] if scale != '1' else [])))
            passed += 1
            continue
        new_pins.append(raw)
        if ok:
            passed += 1
        else:
            print('FAIL %s (pins line %d): CLAIMS.md quotes %s, `dkv run %s` prints %s (%+.2f %%)'
                  % (row, n, quoted, cmd, m.group(1), 100 * (got / want - 1) if want else float('inf')))
            failed += 1
    if update:
        try:
            script_io.write_text(claims_path, '\n'.join(lines))
            script_io.write_text(pins_path, '\n'.join(new_pins) + '\n')
        except OSError as e:
            print('claims_pins.py: cannot write %s: %s' % (e.filename or 'an output', e.strerror), file=sys.stderr)
            sys.exit(1)
    print('claims pins: %d passed, %d failed, %d skipped%s'
          % (passed, failed, skipped, ' (no Azure code trace at %s; DKV_AZURE_TRACE names it)' % TRACE
             if skipped else ''))
    sys.exit(1 if failed else 0)


if __name__ == '__main__':
    main()
