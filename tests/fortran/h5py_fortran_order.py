"""h5py reads the checkpoint that xlang_fortran saved (format HDF5) the way cairn documents for
Fortran arrays: the Fortran array u(6, 8) is the dataset fields/u of shape (8, 6), with
u(x, y) (1-based) at [y - 1, x - 1]. Usage: h5py_fortran_order.py <checkpoint root>."""
import pathlib
import sys

import h5py
import numpy

root = pathlib.Path(sys.argv[1])
with h5py.File(root / "1" / "data.h5", "r") as f:
    u = f["fields/u"][...]
    expected = numpy.array([[100.0 * y + x + 1 for x in range(6)] for y in range(8)])
    assert u.shape == (8, 6), f"fields/u has shape {u.shape}, not (8, 6)"
    assert (u == expected).all(), "fields/u does not hold u[y, x] = 100 y + x + 1"
    assert list(f["n"][...]) == [7, 1, -1], "n"
    assert list(f["z"][...]) == [1 - 1j, 2 + 0.5j], "z"
print(f"h5py_fortran_order: {root} reads as documented")
