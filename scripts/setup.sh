#!/usr/bin/env bash
# Installs every package cairn needs to build, test and run its demo on Debian 12.
# Idempotent: when everything is present it prints nothing and returns at once.
# Must run as root (or with sudo available) the first time. Packages given as arguments are
# installed too (scripts/bench.sh passes the benchmark's own list).
set -euo pipefail

packages=(
  build-essential cmake pkg-config git
  openmpi-bin libopenmpi-dev            # MPI: coordination and collective I/O
  libhdf5-openmpi-dev hdf5-tools        # parallel HDF5 format, h5dump for users
  libboost-json1.81-dev                 # metadata files (JSON)
  libxxhash-dev                         # XXH3-64 shard checksums
  libzstd-dev libzfp-dev                # compression of stored arrays (zstd; ZFP, lossy)
  libfmt-dev libspdlog-dev              # formatting and the structured logger
  libcli11-dev                          # command-line parsing for apps/
  libgtest-dev googletest               # test framework
  clang-format                          # formatting check in scripts/test.sh
  doxygen                               # API reference (target cairn_docs), checked by test.sh
  clang libclang-rt-14-dev              # libFuzzer targets (tests/fuzz) in scripts/test.sh
  gfortran                              # Fortran bindings
  python3-h5py python3-numpy            # interoperability test: h5py reads cairn files
  hdf5-filter-plugin-zfp-serial         # H5Z-ZFP plugin: h5py reads cairn's zfp datasets
)
packages+=("$@")

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  SUDO="sudo"
fi

echo "setup: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
if ! $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null; then
  # apt's resolver can fail on a set it solves package by package (the benchmark's fio and
  # python3-matplotlib with the core list have pulled the wrong Boost -dev version): retry so.
  echo "setup: installing the packages one by one"
  for p in "${missing[@]}"; do
    $SUDO apt-get install -y -qq --no-install-recommends "$p" >/dev/null
  done
fi
echo "setup: done"
