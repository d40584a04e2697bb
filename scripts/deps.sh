#!/usr/bin/env bash
# scripts/deps.sh - installs the Debian packages dkv needs to build, test and plot, when missing.
# Only Debian packages; nothing else is downloaded.  Needs root (or sudo) when a package is missing.
set -eu
pkgs=(scons gcc pkg-config libhdf5-dev hdf5-tools liblua5.4-dev libcmocka-dev
      python3 python3-h5py python3-matplotlib python3-numpy python3-pandas valgrind)
missing=()
for p in "${pkgs[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
echo "deps: installing ${missing[*]}" >&2
SUDO=""
[ "$(id -u)" -ne 0 ] && SUDO=sudo
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
