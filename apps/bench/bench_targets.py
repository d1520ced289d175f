"""The targets of the benchmark: ratios from one run, with their spread over the repetitions.

A ratio is computed per repetition: repetition i of the numerator's case over repetition i of
the denominator's case. run_bench.py runs the contenders interleaved (every contender once per
repetition, the order rotated), so both sides of a ratio of repetition i ran under the same
conditions of the machine. Each target keeps every per-repetition ratio, their min, median
and max, and is judged on the median, except the memory targets, judged on the worst
repetition (a memory bound holds in every repetition or not at all).

Each target: id, what it compares, the two measurements, `ratio` (the value judged), the
spread, the comparison and the bound, whether it is met, `met_reps` (repetitions whose own
ratio meets the bound) and `factor`: how far the numerator must improve to meet the bound
(1.0 when exactly met; below 1 means there is room to spare).
"""
import statistics

MIB = 1 << 20
FORMATS = ("posix", "hdf5")
RESHARD_BOUND = 0.8


def _per_rep(results, name, what="seconds"):
    """Per-repetition values of case `name`: seconds, GB/s or peak RSS growth (bytes)."""
    r = results.get(name)
    if not r:
        return None
    if what == "seconds":
        return list(r["seconds"])
    if what == "gbps":
        return [r["bytes"] / s / 1e9 if s > 0 else None for s in r["seconds"]]
    return r.get("peak_rss_growth_bytes_reps")


def _meets(ratio, op, bound):
    return ratio <= bound if op == "<=" else ratio >= bound


def _target(tid, text, num_name, num, den_name, den, op, bound, unavailable=None,
            judge="median"):
    """`num` and `den`: per-repetition values (lists), or one number for every repetition."""
    t = {"id": tid, "description": text, "numerator": num_name, "denominator": den_name,
         "numerator_value": None, "denominator_value": None, "op": op, "target": bound,
         "ratio": None, "ratio_min": None, "ratio_median": None, "ratio_max": None,
         "ratios": [], "judged_on": judge, "met": None, "met_reps": None, "factor": None,
         "status": "ok"}
    if unavailable:
        t["status"] = unavailable
        return t
    if num is None or den is None:
        t["status"] = f"unavailable: no measurement of {num_name if num is None else den_name}"
        return t
    if not isinstance(num, list):
        num = [num] * (len(den) if isinstance(den, list) else 1)
    if not isinstance(den, list):
        den = [den] * len(num)
    pairs = list(zip(num, den))
    if not pairs or any(a is None or b is None or b == 0 for a, b in pairs):
        t["status"] = f"unavailable: a repetition of {den_name} or {num_name} has no value"
        return t
    ratios = [a / b for a, b in pairs]
    t["numerator_value"] = statistics.median(num)
    t["denominator_value"] = statistics.median(den)
    t.update(ratios=ratios, ratio_min=min(ratios), ratio_median=statistics.median(ratios),
             ratio_max=max(ratios))
    if judge == "median":
        ratio = t["ratio_median"]
    else:  # the worst repetition
        ratio = t["ratio_max"] if op == "<=" else t["ratio_min"]
    t["ratio"] = ratio
    t["met"] = _meets(ratio, op, bound)
    t["met_reps"] = sum(_meets(r, op, bound) for r in ratios)
    if op == "<=":
        t["factor"] = ratio / bound
    else:
        t["factor"] = bound / ratio if ratio > 0 else None
    return t


def reshard_cases(ranks):
    """(target id, same-decomposition case, resharded case, what) of every reshard row, for a
    run on `ranks` ranks; case names without the "cairn.<format>." prefix."""
    rows = []
    for m in sorted({ranks - 1, ranks // 2, 1}, reverse=True):
        if 1 <= m < ranks:
            rows.append((f"reshard_{ranks}to{m}", "restore", f"restore_to{m}",
                         f"{ranks}->{m} ranks, row slabs"))
    if ranks > 1:
        w = ranks - 1
        rows.append((f"reshard_{w}to{ranks}", f"restore_{w}to{w}", f"restore_{w}to{ranks}",
                     f"{w}->{ranks} ranks, row slabs (same decomposition: {w}->{w})"))
    rows.append(("reshard_transposed", "restore", "restore_transposed",
                 f"{ranks}->{ranks} ranks, 2-D blocks to column slabs"))
    return rows


def _min_per_rep(lists):
    """Element-wise minimum of per-repetition lists (None when one is missing)."""
    if not lists or any(v is None for v in lists):
        return None
    return [min(vs) for vs in zip(*lists)]


def _max_per_rep(lists):
    """Element-wise maximum of per-repetition lists (None when one is missing)."""
    if not lists or any(v is None for v in lists):
        return None
    return [max(vs) for vs in zip(*lists)]


def _memory_target(tid, text, res, names):
    """Peak RSS growth of the worst of `names` in each repetition / (io_buffer_bytes + 64 MiB)."""
    growth = _max_per_rep([_per_rep(res, n, "peak") for n in names])
    io = max((res[n].get("io_buffer_bytes", 16 * MIB) for n in names if n in res),
             default=16 * MIB)
    t = _target(tid, text, " ".join(names) + ": peak_rss_growth_bytes", growth,
                "io_buffer_bytes + 64 MiB", io + 64 * MIB, "<=", 1.0, judge="worst")
    if growth is not None and min(growth) < 0:
        t.update(ratio=None, ratio_min=None, ratio_median=None, ratio_max=None, ratios=[],
                 met=None, met_reps=None, factor=None,
                 status="unavailable: /proc/self/clear_refs is not writable here")
    return t


def evaluate(doc):
    res = doc["results"]
    ranks = doc["config"]["ranks"]
    orbax = doc["contenders"]["orbax"]["status"]
    no_orbax = orbax if orbax != "ok" else None
    out = []
    # The limit of each format: fio on one file per job for posix (a file per rank), fio on
    # one shared file, every job at its own offset, for hdf5 (one data.h5).
    for fmt, bound, fio, files in (("posix", 0.90, "fio.write_fsync", "a file per job"),
                                   ("hdf5", 0.80, "fio.write_fsync_shared", "one shared file")):
        n = f"cairn.{fmt}.save_sync"
        out.append(_target(f"durable_write_{fmt}",
                           f"cairn {fmt} save GB/s / fio durable write GB/s ({files})",
                           n, _per_rep(res, n, "gbps"), fio, _per_rep(res, fio, "gbps"), ">=",
                           bound))
    out.append(_target("hdf5_save_vs_h5py", "cairn hdf5 save time / h5py collective save time",
                       "cairn.hdf5.save_sync", _per_rep(res, "cairn.hdf5.save_sync"),
                       "h5py.write", _per_rep(res, "h5py.write"), "<=", 0.8))
    out.append(_target("hdf5_restore_vs_h5py",
                       "cairn hdf5 restore time / the faster of h5py's collective and "
                       "independent reads",
                       "cairn.hdf5.restore", _per_rep(res, "cairn.hdf5.restore"),
                       "min(h5py.read, h5py.read_independent)",
                       _min_per_rep([_per_rep(res, "h5py.read"),
                                     _per_rep(res, "h5py.read_independent")]), "<=", 0.8))
    for fmt in FORMATS:
        for what, bound in (("save", 0.5), ("restore", 0.5), ("meta_save", 0.2),
                            ("meta_restore", 0.2)):
            case = "save_sync" if what == "save" else what
            n, d = f"cairn.{fmt}.{case}", f"orbax.{case}"
            tree = "10,000-leaf tree" if what.startswith("meta") else "same tree"
            out.append(_target(f"{what}_vs_orbax_{fmt}",
                               f"cairn {fmt} {what.replace('meta_', '')} time / Orbax's ({tree})",
                               n, _per_rep(res, n), d, _per_rep(res, d), "<=", bound, no_orbax))
    for fmt in FORMATS:
        s = f"cairn.{fmt}.save_sync"
        for mode, bound in (("copy", 0.15), ("zerocopy", 0.02)):
            n = f"cairn.{fmt}.save_async_{mode}"
            out.append(_target(f"async_{mode}_{fmt}",
                               f"cairn {fmt} async ({mode}) blocking time / sync save time",
                               n, _per_rep(res, n), s, _per_rep(res, s), "<=", bound))
        # The physical limit of a blocking copy: memcpy of the same bytes, every rank at once.
        n = f"cairn.{fmt}.save_async_copy"
        out.append(_target(f"async_copy_vs_memcpy_{fmt}",
                           f"cairn {fmt} async (copy) blocking time / memcpy of the same bytes",
                           n, _per_rep(res, n), "memcpy.copy", _per_rep(res, "memcpy.copy"),
                           "<=", 1.3))
    for fmt, fio, files in (("posix", "fio.read", "a file per job"),
                            ("hdf5", "fio.read_shared", "one shared file")):
        n = f"cairn.{fmt}.restore"
        out.append(_target(f"restore_vs_fio_{fmt}",
                           f"cairn {fmt} restore GB/s / fio read GB/s ({files})",
                           n, _per_rep(res, n, "gbps"), fio, _per_rep(res, fio, "gbps"), ">=",
                           0.85))
        n1 = f"cairn.{fmt}.restore_to1"
        one_job = None
        if n1 in res:
            one_job = _target(f"restore_to1_vs_fio_one_job_{fmt}",
                              f"cairn {fmt} restore on 1 rank GB/s / fio read GB/s, one job",
                              n1, _per_rep(res, n1, "gbps"), "fio.read_one_job",
                              _per_rep(res, "fio.read_one_job", "gbps"), ">=", 0.85)
            out.append(one_job)
        for tid, same, resharded, what in reshard_cases(ranks):
            a, b = f"cairn.{fmt}.{same}", f"cairn.{fmt}.{resharded}"
            row = _target(f"{tid}_{fmt}",
                          f"cairn {fmt} restore {what}: same-decomposition time / "
                          f"resharded time", a, _per_rep(res, a), b, _per_rep(res, b),
                          ">=", RESHARD_BOUND)
            if resharded == "restore_to1" and one_job and row["met"] is False and one_job["met"]:
                # One reader stream bounds a restore on 1 rank: the row is met when that
                # stream runs within 0.85 of fio's one-job read.
                row["met"] = True
                row["met_through"] = one_job["id"]
            out.append(row)
    for fmt in FORMATS:
        out.append(_memory_target(f"peak_memory_{fmt}",
                                  f"cairn {fmt} sync save: peak RSS growth / "
                                  f"(io_buffer_bytes + 64 MiB)", res, [f"cairn.{fmt}.save_sync"]))
        rows = reshard_cases(ranks)
        same = sorted({f"cairn.{fmt}.{r[1]}" for r in rows})
        resharded = [f"cairn.{fmt}.{r[2]}" for r in rows]
        out.append(_memory_target(f"restore_peak_memory_{fmt}",
                                  f"cairn {fmt} same-decomposition restores: peak RSS growth / "
                                  f"(io_buffer_bytes + 64 MiB)", res, same))
        out.append(_memory_target(f"reshard_peak_memory_{fmt}",
                                  f"cairn {fmt} resharded restores: peak RSS growth / "
                                  f"(io_buffer_bytes + 64 MiB)", res, resharded))
    return out
