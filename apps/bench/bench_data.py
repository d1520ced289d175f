"""What the Python contenders share with cairn_bench: the same arrays, block decomposition,
values, page-cache dropping and JSON-lines records (see bench_common.hpp)."""
import argparse
import json
import os
import time

import numpy as np


def contender_parser():
    """The options every Python contender takes, as cairn_bench names them: --dir (scratch),
    --out (JSON lines), --rows, --cols, --leaves, --reps, --no-drop-caches."""
    p = argparse.ArgumentParser()
    p.add_argument("--dir", required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--rows", type=int, required=True)
    p.add_argument("--cols", type=int, required=True)
    p.add_argument("--leaves", type=int, required=True)
    p.add_argument("--reps", type=int, default=3)
    p.add_argument("--no-drop-caches", action="store_true")
    return p


def split(n, part, parts):
    begin = n * part // parts
    return begin, n * (part + 1) // parts - begin


def block_of(rows, cols, rank, size):
    """Rank `rank`'s (row offset, col offset, rows, cols) on a near-square grid."""
    grid_rows = 1
    d = 1
    while d * d <= size:
        if size % d == 0:
            grid_rows = d
        d += 1
    grid_cols = size // grid_rows
    r0, rn = split(rows, rank // grid_cols, grid_rows)
    c0, cn = split(cols, rank % grid_cols, grid_cols)
    return r0, c0, rn, cn


def fill_block(rows, cols, leaf, box):
    """The values cairn_bench writes: leaf * 1e12 + i * cols + j (exact in float64)."""
    r0, c0, rn, cn = box
    i = np.arange(r0, r0 + rn, dtype=np.float64)[:, None] * cols
    j = np.arange(c0, c0 + cn, dtype=np.float64)[None, :]
    return i + j + leaf * 1e12


def leaf_path(leaf):
    return f"params/layer{leaf}/w"


def meta_path(leaf):
    return f"params/block{leaf // 100}/p{leaf % 100}"


def meta_value(leaf, elems):
    return np.arange(elems, dtype=np.float64) + 1e6 * leaf


def drop_caches(enabled):
    """Writes back dirty pages and drops the page cache; returns what happened."""
    if not enabled:
        return "disabled"
    os.sync()
    try:
        with open("/proc/sys/vm/drop_caches", "w") as f:
            f.write("3\n")
        return "dropped"
    except OSError as e:
        return f"not permitted: writing /proc/sys/vm/drop_caches failed: {e.strerror}"


class Recorder:
    """Appends one JSON object per measurement to `path`."""

    def __init__(self, path):
        self.path = path

    def add(self, name, rep, seconds, nbytes, **extra):
        record = dict(extra, name=name, rep=rep, seconds=seconds, bytes=int(nbytes))
        with open(self.path, "a") as f:
            f.write(json.dumps(record) + "\n")


def now():
    return time.perf_counter()
