#!/bin/bash
# h5py reads a zfp-compressed data.h5 of cairn through Debian's H5Z-ZFP plugin (libh5zzfp.so,
# package hdf5-filter-plugin-zfp-serial):
#   h5py_zfp_test.sh TEST_HDF5_ZFP MPIEXEC "MPIEXEC_FLAGS" WORK_DIR
# Runs test_hdf5_zfp's bound tests on 2 ranks with the plugin on HDF5_PLUGIN_PATH (cairn keeps
# its own filter), the absolute one leaving its file (CAIRN_SAMPLE_DIR), then reads that file
# with /usr/bin/python3 and h5py, HDF5_PLUGIN_PATH set to the plugin's directory only, and
# checks every value within the bound (1e-3). Prints SKIP and exits 77 when h5py or
# the plugin is missing.
set -euo pipefail
test_binary=$1 mpiexec=$2 work=$4
read -r -a flags <<<"$3"

if ! /usr/bin/python3 -c 'import h5py, numpy' >/dev/null 2>&1; then
  echo "SKIP: /usr/bin/python3 has no h5py or numpy"
  exit 77
fi
plugin=""
for candidate in /usr/lib/*/hdf5/serial/plugins/libh5zzfp.so /usr/lib/hdf5/plugins/libh5zzfp.so; do
  if [ -e "$candidate" ]; then
    plugin=$candidate
    break
  fi
done
if [ -z "$plugin" ]; then
  echo "SKIP: no H5Z-ZFP plugin (libh5zzfp.so; Debian: hdf5-filter-plugin-zfp-serial)"
  exit 77
fi
rm -rf "$work" && mkdir -p "$work"
# The plugin visible to cairn too: cairn uses its own zfp filter, not the plugin's.
CAIRN_SAMPLE_DIR=$work HDF5_PLUGIN_PATH=$(dirname "$plugin") \
  "$mpiexec" -n 2 "${flags[@]}" "$test_binary" \
  --gtest_filter=Hdf5Zfp.AbsoluteBoundIsHonouredNToM:Hdf5Zfp.RelativeBound*
test -s "$work/zfp.h5"

HDF5_PLUGIN_PATH=$(dirname "$plugin") /usr/bin/python3 - "$work/zfp.h5" <<'PY'
import sys, h5py, numpy as np
f = h5py.File(sys.argv[1], "r")
y, x = np.meshgrid(np.arange(48), np.arange(40), indexing="ij")
want = np.sin(0.1 * y) * np.cos(0.07 * x) + np.where(y >= 40, 2000.0 * np.cos(0.05 * x), 0.0)
d = f["u"]
assert 32013 in d._filters or "32013" in d._filters, d._filters
got = d[()]
assert got.dtype == np.float64 and got.shape == (48, 40), (got.dtype, got.shape)
error = float(np.max(np.abs(got - want)))
assert error <= 1e-3, error
assert d.attrs["cairn_compression"] == "zfp absolute error 0.001", d.attrs["cairn_compression"]
print(f"h5py read u (zfp, filter 32013, H5Z-ZFP) within 1e-3: max error {error:.3g}")
PY
