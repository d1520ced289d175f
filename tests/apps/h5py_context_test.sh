#!/usr/bin/env bash
# A data.h5 explains itself to h5py: heat2d saves on 3 ranks (format hdf5), and h5py, with no
# other file of the checkpoint, finds the step, the metrics (a JSON text), the cairn and format
# versions, the number of ranks, the write time and each dataset's decomposition, every string
# a str; the values agree with cairn-step.json. `cairn convert` of the step on 2 ranks keeps
# the metrics and records its own ranks and decomposition. Skipped (77) without Debian's h5py.
#
#   h5py_context_test.sh HEAT2D CAIRN MPIEXEC "MPIEXEC FLAGS" WORKDIR CAIRN_VERSION
set -uo pipefail
heat2d="$1" cairn="$2" mpiexec="$3"
read -r -a flags <<<"$4"
work="$5" version="$6"
python=/usr/bin/python3  # Debian's, with h5py
"$python" -c "import h5py" 2>/dev/null || { echo "h5py is not installed: skipped"; exit 77; }
rm -rf "$work" && mkdir -p "$work" && cd "$work" || exit 2

"$mpiexec" -n 3 "${flags[@]}" "$heat2d" --nx 50 --ny 41 --px 1 --py 3 --steps 20 \
  --save-every 10 --format hdf5 --checkpoint-dir root --quiet >heat2d.log 2>&1 ||
  { cat heat2d.log; exit 2; }
"$mpiexec" -n 2 "${flags[@]}" "$cairn" convert --format hdf5 --quiet root/20 converted \
  >convert.log 2>&1 || { cat convert.log; exit 2; }

"$python" - root/20 "$version" <<'PY'
import json, pathlib, re, sys
import h5py

step_dir, version = pathlib.Path(sys.argv[1]), sys.argv[2]
failures = 0
def check(what, ok, got=None):
    global failures
    if not ok:
        print("FAIL:", what, repr(got))
        failures += 1

with h5py.File(step_dir / "field" / "data.h5", "r") as f:
    a = dict(f.attrs)
    for name in ("cairn_version", "cairn_metrics", "cairn_write_time"):
        check(f"{name} is a str", type(a.get(name)) is str, a.get(name))
    check("cairn_step", a.get("cairn_step") == 20, a.get("cairn_step"))
    check("cairn_version", a.get("cairn_version") == version, a.get("cairn_version"))
    check("cairn_format_version", a.get("cairn_format_version") == 6, a.get("cairn_format_version"))
    check("cairn_world_size", a.get("cairn_world_size") == 3, a.get("cairn_world_size"))
    check("cairn_write_time", re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ",
                                           str(a.get("cairn_write_time"))), a.get("cairn_write_time"))
    metrics = json.loads(a.get("cairn_metrics", "null")) or {}
    check("cairn_metrics names energy and residual",
          set(metrics) == {"energy", "residual"}, metrics)
    u = f["u"]
    for name in ("cairn_dtype", "cairn_order", "cairn_decomposition"):
        check(f"u.{name} is a str", type(u.attrs.get(name)) is str, u.attrs.get(name))
    check("u.cairn_dtype", u.attrs.get("cairn_dtype") == "float64", u.attrs.get("cairn_dtype"))
    # 41 rows over 3 ranks in slabs (--py 3): three cells along the rows, the columns whole.
    decomposition = json.loads(u.attrs.get("cairn_decomposition", "null")) or {}
    check("u is a grid of 3 x 1 slabs", decomposition.get("grid") == [3, 1], decomposition)
    cuts = decomposition.get("cuts") or [[None], [None]]
    check("u's cuts span the field", cuts[0][0] == 0 and cuts[0][-1] == 41 and len(cuts[0]) == 4
          and cuts[1] == [0, 50], cuts)
    check("step.cairn_kind is a str", f["step"].attrs.get("cairn_kind") == "scalar",
          f["step"].attrs.get("cairn_kind"))

step = json.loads((step_dir / "cairn-step.json").read_text())
check("metrics equal cairn-step.json's", metrics == step["custom"]["metrics"], step["custom"])
check("written before the commit", a["cairn_write_time"] <= step["commit_time"], step["commit_time"])

with h5py.File("converted/field/data.h5", "r") as f:
    c = dict(f.attrs)
    check("converted: metrics kept", json.loads(c.get("cairn_metrics", "null")) == metrics, c)
    check("converted: its own world size", c.get("cairn_world_size") == 2, c)
    check("converted: no step (not saved by a manager)", "cairn_step" not in c, c)
    d = json.loads(f["u"].attrs.get("cairn_decomposition", "null")) or {}
    check("converted: u in 2 parts", len(d.get("shards", [])) == 2 or
          (d.get("grid") and d["grid"][0] * d["grid"][1] == 2), d)
sys.exit(1 if failures else 0)
PY
status=$?
[ "$status" = 0 ] && echo "h5py context: all checks passed"
exit "$status"
