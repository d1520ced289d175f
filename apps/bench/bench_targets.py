"""The targets of the benchmark (ratios from one run, medians of the repetitions).

Each target: id, what it compares, the two measurements, the ratio, the comparison and the
bound, whether it is met, and `factor`: how far the numerator must improve to meet the bound
(1.0 when exactly met; below 1 means there is room to spare).
"""

MIB = 1 << 20
FORMATS = ("posix", "hdf5")


def _gbps(results, name):
    r = results.get(name)
    return r["gbps"] if r else None


def _seconds(results, name, key="median_seconds"):
    r = results.get(name)
    return r[key] if r else None


def _target(tid, text, num_name, num, den_name, den, op, bound, unavailable=None):
    t = {"id": tid, "description": text, "numerator": num_name, "denominator": den_name,
         "numerator_value": num, "denominator_value": den, "op": op, "target": bound,
         "ratio": None, "met": None, "factor": None, "status": "ok"}
    if unavailable:
        t["status"] = unavailable
        return t
    if num is None or den is None or den == 0:
        t["status"] = f"unavailable: no measurement of {num_name if num is None else den_name}"
        return t
    ratio = num / den
    t["ratio"] = ratio
    if op == "<=":
        t["met"] = ratio <= bound
        t["factor"] = ratio / bound
    else:
        t["met"] = ratio >= bound
        t["factor"] = bound / ratio if ratio > 0 else None
    return t


def evaluate(doc):
    res = doc["results"]
    orbax = doc["contenders"]["orbax"]["status"]
    no_orbax = orbax if orbax != "ok" else None
    out = []
    for fmt, bound in (("posix", 0.90), ("hdf5", 0.80)):
        n = f"cairn.{fmt}.save_sync"
        out.append(_target(f"durable_write_{fmt}", f"cairn {fmt} save GB/s / fio durable write GB/s",
                           n, _gbps(res, n), "fio.write_fsync", _gbps(res, "fio.write_fsync"),
                           ">=", bound))
    out.append(_target("hdf5_save_vs_h5py", "cairn hdf5 save time / h5py collective save time",
                       "cairn.hdf5.save_sync", _seconds(res, "cairn.hdf5.save_sync"),
                       "h5py.write", _seconds(res, "h5py.write"), "<=", 0.8))
    out.append(_target("hdf5_restore_vs_h5py", "cairn hdf5 restore time / h5py read time",
                       "cairn.hdf5.restore", _seconds(res, "cairn.hdf5.restore"),
                       "h5py.read", _seconds(res, "h5py.read"), "<=", 0.8))
    for fmt in FORMATS:
        for what, cairn_case, orbax_case, bound in (
                ("save", "save_sync", "save_sync", 0.5),
                ("restore", "restore", "restore", 0.5),
                ("meta_save", "meta_save", "meta_save", 0.2),
                ("meta_restore", "meta_restore", "meta_restore", 0.2)):
            n, d = f"cairn.{fmt}.{cairn_case}", f"orbax.{orbax_case}"
            tree = "10,000-leaf tree" if what.startswith("meta") else "same tree"
            out.append(_target(f"{what}_vs_orbax_{fmt}",
                               f"cairn {fmt} {what.replace('meta_', '')} time / Orbax's ({tree})",
                               n, _seconds(res, n), d, _seconds(res, d), "<=", bound, no_orbax))
    for fmt in FORMATS:
        s = f"cairn.{fmt}.save_sync"
        for mode, bound in (("copy", 0.15), ("zerocopy", 0.02)):
            n = f"cairn.{fmt}.save_async_{mode}"
            out.append(_target(f"async_{mode}_{fmt}",
                               f"cairn {fmt} async ({mode}) blocking time / sync save time",
                               n, _seconds(res, n), s, _seconds(res, s), "<=", bound))
    for fmt in FORMATS:
        n = f"cairn.{fmt}.restore"
        out.append(_target(f"restore_vs_fio_{fmt}", f"cairn {fmt} restore GB/s / fio read GB/s",
                           n, _gbps(res, n), "fio.read", _gbps(res, "fio.read"), ">=", 0.85))
        ranks = doc["config"]["ranks"]
        for m in sorted({ranks - 1, ranks // 2}, reverse=True):
            if m < 1 or m == ranks:
                continue
            r = f"cairn.{fmt}.restore_to{m}"
            out.append(_target(f"reshard_{ranks}to{m}_{fmt}",
                               f"cairn {fmt} restore {ranks}->{m} GB/s / same-decomposition GB/s",
                               r, _gbps(res, r), n, _gbps(res, n), ">=", 0.8))
    for fmt in FORMATS:
        n = f"cairn.{fmt}.save_sync"
        r = res.get(n, {})
        growth = r.get("peak_rss_growth_bytes")
        allowed = 64 * MIB + r.get("io_buffer_bytes", 16 * MIB)
        t = _target(f"peak_memory_{fmt}",
                    f"cairn {fmt} sync save: peak RSS growth / (64 MiB + one I/O buffer)",
                    n + ".peak_rss_growth_bytes", growth, "64 MiB + io_buffer_bytes", allowed,
                    "<=", 1.0)
        if growth is not None and growth < 0:
            t.update(ratio=None, met=None, factor=None,
                     status="unavailable: /proc/self/clear_refs is not writable here")
        out.append(t)
    return out
