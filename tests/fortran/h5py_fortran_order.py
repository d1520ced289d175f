"""h5py reads the checkpoint that xlang_fortran saved (format HDF5) the way cairn documents for
Fortran arrays: the Fortran array u(6, 8) is the dataset fields/u of shape (8, 6), with
u(x, y) (1-based) at [y - 1, x - 1]. The checkpoint records that its arrays came from Fortran:
each array dataset has the attribute cairn_order = "F" and cairn-tree.json says "order": "F".
The C checkpoint that xlang_c saved (format posix), when given, says "order": "C" instead.
Usage: h5py_fortran_order.py <Fortran checkpoint root> [<C checkpoint root>]."""
import json
import pathlib
import sys

import h5py
import numpy


def orders(step):
    """Leaf path -> "order" of every array leaf of the tree item in `step`."""
    index = json.loads((step / "cairn-tree.json").read_text())
    return {leaf["path"]: leaf.get("order") for leaf in index["leaves"]
            if leaf["kind"] == "array"}


root = pathlib.Path(sys.argv[1])
with h5py.File(root / "1" / "data.h5", "r") as f:
    u = f["fields/u"][...]
    expected = numpy.array([[100.0 * y + x + 1 for x in range(6)] for y in range(8)])
    assert u.shape == (8, 6), f"fields/u has shape {u.shape}, not (8, 6)"
    assert (u == expected).all(), "fields/u does not hold u[y, x] = 100 y + x + 1"
    assert list(f["n"][...]) == [7, 1, -1], "n"
    assert list(f["z"][...]) == [1 - 1j, 2 + 0.5j], "z"
    for name in ("fields/u", "n", "z"):
        order = f[name].attrs.get("cairn_order")
        assert order == "F", f"{name} has cairn_order {order!r}, not 'F'"

saved = orders(root / "1")
assert saved == {"fields/u": "F", "n": "F", "z": "F"}, f"cairn-tree.json orders: {saved}"

if len(sys.argv) > 2:
    c_root = pathlib.Path(sys.argv[2])
    saved = orders(c_root / "1")
    assert saved == {"fields/u": "C", "n": "C", "z": "C"}, f"C cairn-tree.json orders: {saved}"
    print(f"h5py_fortran_order: {c_root} records C order")
print(f"h5py_fortran_order: {root} reads as documented")
