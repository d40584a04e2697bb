#!/usr/bin/python3
"""hw_gpu_check.py - whether a device call's runs were measured on the GPU a preset's profile was measured on
(scripts/hw_session.sh post runs it before it creates anything, since session 49: an H100 run set posted under the
default GPU_BASE=h200 would be compared against the H200's kernel times without a word).

    /usr/bin/python3 scripts/hw_gpu_check.py --preset NAME [--profile FILE.lua] DIR...

DIR: a device call's folder (its hw_h5*.tgz archives, or h5/*.h5 files).  The GPU of the runs: the `device` attribute
of every `:real` run, up to its first comma ("NVIDIA H100 80GB HBM3, sm_90, ..." -> "NVIDIA H100 80GB HBM3"); runs
without one naming an NVIDIA GPU (stand-ins, simulated halves) are left out.  The GPU of a profile: its provenance's
`gpu = "..."` (a profile without one, a stand-in, is not compared).  The profiles checked: the one datasets/presets/gpu/NAME.lua names (directly or through its `base`
chain), and FILE.lua when given (post's PROFILE=, or a folder's profile.lua).  Prints one line saying what it
compared.  Exit status: 0 the same GPU everywhere, or nothing to compare (no NVIDIA runs, or a roofline preset without
a profile and no FILE); 2 a run's GPU is not a profile's (the message names both and how to go on: the matching
GPU_BASE, or GPU_BASE_ANY=1 for a deliberate comparison across GPUs); 1 an unreadable file or preset."""
import glob
import os
import re
import sys
import tarfile
import tempfile

import h5py

# the repository's presets and profiles, found from this script's own place (scripts/ under the root), not from the
# current folder
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PRESETS = os.path.join(ROOT, "datasets", "presets", "gpu")
PROFILES = os.path.join(ROOT, "datasets", "profiles")
sys.path.insert(0, os.path.join(ROOT, "scripts"))
import script_io  # noqa: E402  (read_text: a file refused in one line naming it)


def die(code, msg):
    sys.stderr.write("hw_gpu_check: %s\n" % msg)
    sys.exit(code)


def field(text, name):
    m = re.search(r'(?m)^\s*%s\s*=\s*"([^"]*)"' % name, text)
    return m.group(1) if m else None


def preset_profile(name, seen=()):
    """The profile name the preset NAME resolves to ('' for the roofline), following `base`"""
    path = os.path.join(PRESETS, name + ".lua")
    text = script_io.read_text(path, lambda m: die(1, m))
    prof = field(text, "profile")
    if prof is not None:
        return prof
    base = field(text, "base")
    if base and base not in seen:
        return preset_profile(base, seen + (name,))
    return ""


def profile_gpu(path):
    text = script_io.read_text(path, lambda m: die(1, m))
    return field(text, "gpu")   # None: a profile that names no GPU (a stand-in), not compared


def run_gpus(dirs, tmp):
    """{gpu: first file} over the :real runs of every h5 file in the folders (archives unpacked into tmp)"""
    files = []
    for d in dirs:
        if not os.path.isdir(d):
            die(1, "%s: not a folder" % d)
        files += sorted(glob.glob(os.path.join(d, "h5", "*.h5")))
        for i, tgz in enumerate(sorted(glob.glob(os.path.join(d, "hw_h5*.tgz")))):
            try:
                with tarfile.open(tgz) as t:
                    for mem in t.getmembers():
                        if mem.isfile() and mem.name.endswith(".h5"):
                            out = os.path.join(tmp, "%d_%d_%s" % (len(files), i, os.path.basename(mem.name)))
                            with open(out, "wb") as o:
                                o.write(t.extractfile(mem).read())
                            files.append(out)
            except (OSError, tarfile.TarError) as e:
                die(1, "%s: %s" % (tgz, e))
    gpus = {}
    for fn in files:
        try:
            with h5py.File(fn, "r") as f:
                for n, r in f.get("runs", {}).items():
                    dev = r.attrs.get("device", b"")
                    dev = dev.decode() if isinstance(dev, bytes) else str(dev)
                    if n.endswith(":real") and dev.startswith("NVIDIA"):
                        gpus.setdefault(dev.split(",")[0].strip(), n)
        except OSError as e:
            die(1, "%s: %s" % (fn, e))
    return gpus


def main():
    p = script_io.arg_parser(description="the runs' GPU against a preset's profile's")
    p.add_argument("--preset", required=True)
    p.add_argument("--profile")
    p.add_argument("dirs", nargs="+", metavar="DIR")
    a = p.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        gpus = run_gpus(a.dirs, tmp)
    profs = []
    name = preset_profile(a.preset)
    if name and gpus:
        profs.append(("preset %s (profile %s)" % (a.preset, name), profile_gpu(os.path.join(PROFILES, name + ".lua"))))
    if a.profile and gpus:
        profs.append((a.profile, profile_gpu(a.profile)))
    profs = [(w, g) for w, g in profs if g is not None]
    if not gpus or not profs:
        print("hw_gpu_check: nothing to compare (%s)" % ("no runs on an NVIDIA GPU" if not gpus else
                                                         "no profile naming its GPU: preset %s and %s" %
                                                         (a.preset, a.profile or "no PROFILE")))
        return
    for what, pg in profs:
        for g, run in sorted(gpus.items()):
            if g != pg:
                die(2, "the runs were measured on %s (%s), %s on %s: give the preset of the runs' GPU (GPU_BASE=...), "
                       "or GPU_BASE_ANY=1 to compare across GPUs on purpose" % (g, run, what, pg))
    print("hw_gpu_check: runs on %s, as %s" % (", ".join(sorted(gpus)), " and ".join(w for w, _ in profs)))


if __name__ == "__main__":
    main()
