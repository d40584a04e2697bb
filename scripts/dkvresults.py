"""dkvresults - a dkv results file (HDF5 written by `dkv run`) as pandas DataFrames.

Run with /usr/bin/python3 (Debian's python3-h5py and python3-pandas; scripts/deps.sh installs
them).  From the repository root:

    import sys; sys.path.insert(0, "scripts")
    import dkvresults as dr
    df = dr.runs("results/quickstart.h5")            # one row per run: parameters + summary
    df[["run", "mem.kind", "scheduler.kind", "latency_p99_s", "peak_kv_bytes"]]
    st = dr.steps("results/quickstart.h5", "blockpool:phase")   # one row per engine step
    dr.swept(df)                                       # the parameters that differ between runs

runs(path) -> one row per run, in the file's order.  Columns:
  run                      the run's name
  summary keys             every attribute of /runs/<run>/summary (latency_p99_s, tokens_per_s,
                           peak_kv_bytes, kv_external_frag_peak, ...), in the units the file
                           records (units.<key>): seconds (`_s`), bytes (`_bytes`), tokens,
                           requests/s, $/h, "" for ratios; df.attrs["units"] maps each column to
                           its unit.
  configuration keys       every attribute of /runs/<run>/config: the resolved configuration,
                           flat ("decode.cache", "policies.offload.t1", "mem.block_tokens",
                           "workload.rate_scale", "gpu.name", ...); units as in docs/LUA_API.md
                           (bytes, seconds, tokens; fractions are 0..1).
  params keys              every attribute of /runs/<run>/params ("model", "gpu", and what
                           dkv.write_run / m:write were given).
  run attributes           status, backend (sim | cuda | none), device, driver, gpu_preset,
                           model_preset, cost_profile, gpu_expected_error, build, run.seed (the configuration's is "seed"),
                           dkv_version, git_commit, host, start_time,
                           end_time, shard, script_path, defines (not `script` nor the Lua
                           `config` literal: provenance(path, run) has every attribute).
  A name present in two places keeps one column, the first in the order summary, config,
  params, run attributes; a later one with a different value becomes "config.<key>",
  "params.<key>" or "run.<key>".  df.attrs["parameters"] lists the configuration, params and
  run-attribute columns (what a run was asked to do), df.attrs["metrics"] the summary columns.

steps(path, run), requests(path, run), memory(path, run), kernels(path, run), table(path, run,
name) -> one row per record of that table (docs/HDF5_SCHEMA.md lists every field and unit);
df.attrs["units"] maps each column to its unit; fixed-length strings become str.  kernels()
adds a column `class` with the kernel class's name (qkv, attn, ..., compress).

swept(df) -> the parameter columns whose value differs between rows (a sweep's axes), most
informative first (fewest distinct values last).  Bookkeeping columns (times, host, seed,
workload counts derived from the others) are left out.

Errors: FileNotFoundError for a missing file; ValueError for a file that is not a dkv results
file (or whose run or table is not a group or a compound dataset); KeyError naming the run or
table (and the ones the file has) when they are missing.
"""
import os
import sys

import h5py
import numpy as np
import pandas as pd

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import script_io  # noqa: E402  (open_h5: the file's refusal, in one line)

__all__ = ["runs", "steps", "requests", "memory", "kernels", "table", "tables", "run_names",
           "provenance", "swept", "KERNEL_CLASSES"]

# dkv_kernel_class (core/engine/backend.h), in order; kernels.kind indexes it.
KERNEL_CLASSES = ["qkv", "attn", "o_proj", "ffn", "lm_head", "kv_store", "kv_gather", "reorder",
                  "elementwise", "compress"]

_RUN_SKIP = {"script", "config"}          # long texts: see provenance()
_NOT_SWEPT = {"start_time", "end_time", "host", "git_commit", "dkv_version", "script_path",
              "defines", "status", "shard", "build", "driver", "workload.count",
              "workload.skipped", "workload.source"}


def _str(v):
    if isinstance(v, bytes):
        return v.decode("utf-8", "replace")
    if isinstance(v, np.ndarray):
        return v if v.size != 1 else _str(v.reshape(-1)[0])
    if isinstance(v, np.generic):
        return v.item()
    return v


def _open(path):
    if not os.path.exists(path):
        raise FileNotFoundError("%s: no such file" % path)

    def refuse(msg):   # script_io.open_h5's message ("a folder, not a file", "not an HDF5 file (...)"), raised
        raise ValueError(msg)
    f = script_io.open_h5(path, refuse, need=())
    if _str(f.attrs.get("format", "")) != "dkv-results" or "runs" not in f or not isinstance(f["runs"], h5py.Group):
        f.close()
        raise ValueError("%s: not a dkv results file (no format = 'dkv-results')" % path)
    return f


def _run(f, path, run):
    if run not in f["runs"]:
        have = list(f["runs"].keys())
        raise KeyError("%s has no run %r (runs: %s)" % (path, run, ", ".join(have[:20]) +
                                                         (", ..." if len(have) > 20 else "")))
    if not isinstance(f["runs"][run], h5py.Group):
        raise ValueError("%s: /runs/%s is not a group (not a run dkv wrote)" % (path, run))
    return f["runs"][run]


def run_names(path):
    """The runs of the file, in creation order."""
    with _open(path) as f:
        return list(f["runs"].keys())


def provenance(path, run):
    """Every attribute of /runs/<run> (script text and the Lua config literal included)."""
    with _open(path) as f:
        return {k: _str(v) for k, v in _run(f, path, run).attrs.items()}


def _attrs(g, name):
    if name not in g or not isinstance(g[name], h5py.Group):
        return {}
    return {k: _str(v) for k, v in g[name].attrs.items() if not k.startswith("units.")}


def _same(a, b):
    try:
        return bool(np.all(a == b)) or (a != a and b != b)
    except (TypeError, ValueError):
        return False


def runs(path):
    """One row per run: summary, flat configuration, params and run attributes (see above)."""
    rows, units, params, metrics = [], {}, [], []
    with _open(path) as f:
        for name in f["runs"]:
            g = _run(f, path, name)
            row = {"run": name}
            summ = _attrs(g, "summary")
            row.update(summ)
            for k in summ:
                if k not in metrics:
                    metrics.append(k)
                u = g["summary"].attrs.get("units." + k)
                if u is not None:
                    units[k] = _str(u)
            runattrs = {k: _str(v) for k, v in g.attrs.items() if k not in _RUN_SKIP}
            for prefix, d in (("config.", _attrs(g, "config")), ("params.", _attrs(g, "params")),
                              ("run.", runattrs)):
                for k, v in d.items():
                    col = k
                    if (k in row and not _same(row[k], v)) or (prefix == "run." and k == "seed"):
                        col = prefix + k      # the run attribute seed is provenance: "run.seed"
                    if col not in row:
                        row[col] = v
                        if col not in params:
                            params.append(col)
            rows.append(row)
    df = pd.DataFrame(rows)
    for c in df.columns:        # a column of integers with a gap (a run without that key) stays numeric
        if df[c].dtype == object and df[c].map(lambda v: isinstance(v, (int, float)) or v is None).all():
            df[c] = pd.to_numeric(df[c])
    df.attrs["units"] = units
    df.attrs["parameters"] = [c for c in params if c in df.columns and c not in metrics]
    df.attrs["metrics"] = metrics
    return df


def tables(path, run):
    """Names of the tables (compound datasets) of a run."""
    with _open(path) as f:
        g = _run(f, path, run)
        return [k for k in g if isinstance(g[k], h5py.Dataset)]


def table(path, run, name):
    """Table `name` of run `run` as a DataFrame (units in df.attrs["units"])."""
    with _open(path) as f:
        g = _run(f, path, run)
        if name not in g or not isinstance(g[name], h5py.Dataset):
            have = [k for k in g if isinstance(g[k], h5py.Dataset)]
            raise KeyError("%s: run %r has no table %r (tables: %s)" % (path, run, name,
                                                                       ", ".join(have) or "none"))
        d = g[name]
        if d.dtype.names is None:
            raise ValueError("%s: run %r: %r is a dataset of %s, not a table (a compound dataset)"
                             % (path, run, name, d.dtype))
        data = d[()]
        units = {k[6:]: _str(v) for k, v in d.attrs.items() if k.startswith("units.")}
    df = pd.DataFrame({c: data[c] for c in data.dtype.names})
    for c in data.dtype.names:
        if data.dtype[c].kind == "S":
            df[c] = [v.decode("utf-8", "replace") for v in data[c]]
    df.attrs["units"] = units
    return df


def steps(path, run):
    """Table `steps`: one row per engine iteration (start_s, time_s, compute_s, ...)."""
    return table(path, run, "steps")


def requests(path, run):
    """Table `requests`: one row per workload request (arrival_s, latency_s, ...)."""
    return table(path, run, "requests")


def memory(path, run):
    """Table `memory`: bytes per tag over time (two samples per sampled step)."""
    return table(path, run, "memory")


def kernels(path, run):
    """Table `kernels` (cfg.record.kernels = true) with a `class` column naming `kind`."""
    df = table(path, run, "kernels")
    df["class"] = [KERNEL_CLASSES[k] if 0 <= k < len(KERNEL_CLASSES) else "?" for k in df["kind"]]
    return df


def _determines(df, a, b):
    """True when column a's value fixes column b's (b is a function of a over these rows)."""
    ka = df[a].map(_hashable)
    kb = df[b].map(_hashable)
    return bool((pd.DataFrame({"a": ka, "b": kb}).groupby("a", dropna=False)["b"]
                 .nunique(dropna=False) <= 1).all())


def _hashable(v):
    return tuple(v) if isinstance(v, np.ndarray) else v


_PREFERRED = ["model", "gpu", "scheduler.kind", "decode.cache", "mem.kind", "instances.placement",
              "policies.offload.mode", "policies.retention.set"]


def swept(df):
    """Parameter columns whose value differs between the rows of df (runs(path) or a subset)."""
    cols = df.attrs.get("parameters") or [c for c in df.columns if c != "run"]
    cand = []
    for c in cols:
        if c in _NOT_SWEPT or c.startswith("run.") or c not in df.columns:
            continue
        vals = df[c].map(_hashable).replace("", np.nan)   # a run without the key (or "") has no value
        if vals.nunique(dropna=True) > 1:
            cand.append(c)
    # a preset name or a kind before the numbers it implies (gpu before gpu.hbm_bw)
    def rank(c):
        return (c not in _PREFERRED, _PREFERRED.index(c) if c in _PREFERRED else 0,
                not c.endswith((".name", ".kind", ".mode", "_preset")), cols.index(c))
    kept = []
    for c in sorted(cand, key=rank):
        if not any(_determines(df, k, c) for k in kept):
            kept.append(c)
    return kept
