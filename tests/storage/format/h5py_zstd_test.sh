#!/bin/bash
# h5py reads a zstd-compressed data.h5 of cairn through cairn's filter plugin:
#   h5py_zstd_test.sh TEST_HDF5_COMPRESSION PLUGIN_DIR MPIEXEC "MPIEXEC_FLAGS" WORK_DIR
# Writes the file with test_hdf5_compression's round trip on 2 ranks (CAIRN_SAMPLE_DIR), then
# reads every value with /usr/bin/python3 and h5py, HDF5_PLUGIN_PATH set to PLUGIN_DIR only.
# Prints SKIP and exits 77 when h5py is missing.
set -euo pipefail
test_binary=$1 plugin_dir=$2 mpiexec=$3 work=$5
read -r -a flags <<<"$4"

if ! /usr/bin/python3 -c 'import h5py, numpy' >/dev/null 2>&1; then
  echo "SKIP: /usr/bin/python3 has no h5py or numpy"
  exit 77
fi
rm -rf "$work" && mkdir -p "$work"
CAIRN_SAMPLE_DIR=$work "$mpiexec" -n 2 "${flags[@]}" "$test_binary" \
  --gtest_filter=Hdf5Compression.ZstdRoundTripsExactly
test -s "$work/data.h5"

HDF5_PLUGIN_PATH=$plugin_dir /usr/bin/python3 - "$work/data.h5" <<'PY'
import sys, h5py, numpy as np
f = h5py.File(sys.argv[1], "r")
y, x = np.meshgrid(np.arange(48), np.arange(40), indexing="ij")
u = 0.25 * y + 0.5 * x
w = ((y * 3 + x) % 11).astype(np.int32)
for name, want in (("u", u), ("w", w), ("v", u)):
    d = f[name]
    got = d[()]
    assert got.dtype == want.dtype, (name, got.dtype)
    assert np.array_equal(got, want), name
assert 32015 in f["u"]._filters or "32015" in f["u"]._filters, f["u"]._filters
assert f["u"].attrs["cairn_compression"] == "shuffle + zstd level 3", f["u"].attrs["cairn_compression"]
# HDF5's own shuffle filter runs before zstd (on by default): h5py needs nothing more.
for name in ("u", "w"):
    assert "shuffle" in f[name]._filters, (name, f[name]._filters)
print("h5py read u, w (shuffle + zstd, filter 32015) and v (contiguous) exactly")
PY
