#!/usr/bin/env bash
# scripts/deps.sh - installs the Debian packages dkv needs to build, test and plot, when missing.
# Only Debian packages; nothing else is downloaded.  Needs root (or sudo) when a package is missing.
set -eu
pkgs=(scons gcc pkg-config libhdf5-dev hdf5-tools liblua5.4-dev libcmocka-dev
      libopenblas-dev python3 python3-h5py python3-matplotlib python3-numpy python3-pandas valgrind
      fortunes wordnet-base dict-gcide)   # the tiny dLLM corpus (scripts/tiny_corpus.py)
# Optional: clang and its libFuzzer runtime build the fuzz harnesses of tests/fuzz (scons fuzz).
# When they cannot be installed, the build goes on and tests/run.sh prints a SKIP line for them.
optional=(clang libclang-rt-14-dev)
missing=()
for p in "${pkgs[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
opt_missing=()
for p in "${optional[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || opt_missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && [ ${#opt_missing[@]} -eq 0 ] && exit 0
SUDO=""
[ "$(id -u)" -ne 0 ] && SUDO=sudo
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
if [ ${#missing[@]} -gt 0 ]; then
    echo "deps: installing ${missing[*]}" >&2
    $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
fi
if [ ${#opt_missing[@]} -gt 0 ]; then
    echo "deps: installing ${opt_missing[*]} (optional: the fuzz harnesses)" >&2
    $SUDO apt-get install -y -qq --no-install-recommends "${opt_missing[@]}" >&2 ||
        echo "deps: could not install ${opt_missing[*]}: the fuzz tests will be skipped" >&2
fi
