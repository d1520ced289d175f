#!/usr/bin/env bash
# h5py reads what a data.h5 says about itself, with no other file of the save: the root
# attributes (step, metrics, cairn and format versions, world size, write time) and each array's
# decomposition, every string attribute a `str`; string leaves are variable-length UTF-8, so
# `.asstr()` gives back the exact text (a text with a NUL byte stays a fixed-length string).
# The file is written by test_hdf5_context's save_tree() case on 1 and 4 ranks
# (CAIRN_SAMPLE_DIR). The format-version-1 sample (fixed-length strings, no root attributes)
# still opens, its strings read as bytes that decode to the index's values.
# Skipped (77) without Debian's h5py.
#
#   h5py_context_test.sh TEST_HDF5_CONTEXT MPIEXEC "MPIEXEC FLAGS" WORKDIR CAIRN_VERSION V1_SAMPLE
set -uo pipefail
test_binary="$1" mpiexec="$2"
read -r -a flags <<<"$3"
work="$4" version="$5" v1="$6"
python=/usr/bin/python3  # Debian's, with h5py
"$python" -c "import h5py, numpy" 2>/dev/null || { echo "h5py is not installed: skipped"; exit 77; }
rm -rf "$work" && mkdir -p "$work" || exit 2

for n in 1 4; do
  mkdir -p "$work/$n" || exit 2
  CAIRN_SAMPLE_DIR="$work/$n" "$mpiexec" -n "$n" "${flags[@]}" "$test_binary" \
    --gtest_filter=Hdf5Context.SaveTreeRecordsProvenanceDecompositionAndUtf8Strings \
    >"$work/$n.log" 2>&1 || { cat "$work/$n.log"; exit 2; }
  test -s "$work/$n/data.h5" || { echo "no data.h5 written on $n ranks"; exit 2; }
done

"$python" - "$work" "$version" "$v1" <<'PY'
import json, pathlib, re, sys
import h5py

work, version, v1 = pathlib.Path(sys.argv[1]), sys.argv[2], pathlib.Path(sys.argv[3])
failures = 0
def check(what, ok, got=None):
    global failures
    if not ok:
        print("FAIL:", what, repr(got))
        failures += 1

def check_sample(n):
    with h5py.File(work / str(n) / "data.h5", "r") as f:
        a = dict(f.attrs)
        for name in ("cairn_version", "cairn_metrics", "cairn_write_time"):
            check(f"{n} ranks: {name} is a str", type(a.get(name)) is str, a.get(name))
        check(f"{n} ranks: cairn_version", a.get("cairn_version") == version, a.get("cairn_version"))
        check(f"{n} ranks: cairn_format_version", a.get("cairn_format_version") == 6, a)
        check(f"{n} ranks: cairn_world_size", a.get("cairn_world_size") == n, a)
        check(f"{n} ranks: cairn_step", a.get("cairn_step") == 1234, a.get("cairn_step"))
        check(f"{n} ranks: cairn_metrics", json.loads(a.get("cairn_metrics", "null")) ==
              {"loss": 0.25, "tag": "é"}, a.get("cairn_metrics"))
        check(f"{n} ranks: cairn_write_time", re.fullmatch(
            r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", str(a.get("cairn_write_time"))), a)

        u = f["fields/u"]
        check(f"{n} ranks: u's shape", u.shape == (2 * n + 1, 5), u.shape)
        for name in ("cairn_dtype", "cairn_order", "cairn_decomposition"):
            check(f"{n} ranks: u.{name} is a str", type(u.attrs.get(name)) is str, u.attrs.get(name))
        d = json.loads(u.attrs.get("cairn_decomposition", "null")) or {}
        grid, cuts = d.get("grid") or [0, 0], d.get("cuts") or [[None], [None]]
        check(f"{n} ranks: u is a grid of {n} blocks", grid[0] * grid[1] == n, d)
        check(f"{n} ranks: u's cuts span it", [c[0] for c in cuts] == [0, 0] and
              [c[-1] for c in cuts] == [2 * n + 1, 5] and [len(c) - 1 for c in cuts] == grid, d)
        part = json.loads(f["part"].attrs.get("cairn_decomposition", "null"))
        check(f"{n} ranks: part lists rank 0's shard",
              part == {"shards": [{"rank": 0, "offset": [2], "extent": [3]}]}, part)

        for path, text in (("meta/name", "température"), ("meta/config", '{"a":[1,2]}')):
            s = f[path]
            info = h5py.check_string_dtype(s.dtype)
            check(f"{n} ranks: {path} is variable-length UTF-8",
                  info is not None and info.encoding == "utf-8" and info.length is None, info)
            value = s.asstr()[()]
            check(f"{n} ranks: {path} reads as the str", type(value) is str and value == text, value)
            check(f"{n} ranks: {path}.cairn_kind is a str",
                  type(s.attrs.get("cairn_kind")) is str, s.attrs.get("cairn_kind"))
        nul = f["meta/nul"]
        info = h5py.check_string_dtype(nul.dtype)
        check(f"{n} ranks: meta/nul is a fixed-length string of 3 bytes",
              info is not None and info.length == 3, info)
        check(f"{n} ranks: meta/nul keeps its NUL", nul[()] == b"a\0b", nul[()])

for n in (1, 4):
    check_sample(n)

# A file written before (format version 1): fixed-length strings, which h5py returns as bytes.
index = {leaf["path"]: leaf for leaf in json.loads((v1 / "cairn-tree.json").read_text())["leaves"]}
with h5py.File(v1 / "data.h5", "r") as f:
    check("v1: no root attributes", "cairn_version" not in f.attrs, dict(f.attrs))
    dtype = f["fields/temperature"].attrs.get("cairn_dtype")
    check("v1: cairn_dtype is fixed-length bytes", isinstance(dtype, bytes) and
          dtype.decode() == index["fields/temperature"]["dtype"], dtype)
    name = f["run/name"]
    info = h5py.check_string_dtype(name.dtype)
    check("v1: run/name is fixed-length", info is not None and info.length is not None, info)
    check("v1: run/name decodes to the index's value",
          name.asstr()[()] == index["run/name"]["value"], name.asstr()[()])
sys.exit(1 if failures else 0)
PY
status=$?
[ "$status" = 0 ] && echo "h5py context: all checks passed"
exit "$status"
