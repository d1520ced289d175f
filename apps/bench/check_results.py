"""Checks that a results JSON of scripts/bench.sh has every field, every contender and every
target, that the plots exist beside it, and (with --report) that the report shows the run.
Exits non-zero naming the first missing or malformed field.

    python3 check_results.py apps/bench/results/<date>.json [--report BENCHMARKS.md]
"""
import argparse
import json
import numbers
import os
import sys

TOP = ["schema", "date", "quick", "command", "machine", "versions", "config", "contenders",
       "results", "targets"]
MACHINE = ["cpu", "cores", "memory_gib", "kernel", "file_system", "os"]
VERSIONS = ["cairn", "fio", "mpi", "python", "h5py", "hdf5", "numpy", "mpi4py"]
ORBAX_VERSIONS = ["orbax_checkpoint", "jax", "tensorstore"]
CONFIG = ["ranks", "cores", "oversubscribed", "total_bytes", "leaves", "shape", "dtype",
          "decomposition", "meta_leaves", "meta_leaf_bytes", "repetitions", "page_cache",
          "scratch"]
CONTENDERS = ["fio", "memcpy", "baselines", "h5py", "cairn", "orbax"]
RESULTS = ["fio.write_fsync", "fio.write_direct", "fio.read", "fio.read_direct", "memcpy.copy",
           "baseline.posix.write", "baseline.posix.read", "baseline.mpiio.write",
           "baseline.mpiio.read", "h5py.write", "h5py.read"]
for fmt in ("posix", "hdf5"):
    RESULTS += [f"cairn.{fmt}.{case}" for case in (
        "save_sync", "restore", "restore_to3", "restore_to2", "save_async_copy",
        "save_async_zerocopy", "meta_save", "meta_restore")]
ORBAX_RESULTS = ["orbax.save_sync", "orbax.restore", "orbax.save_async", "orbax.meta_save",
                 "orbax.meta_restore"]
RESULT_FIELDS = ["seconds", "median_seconds", "repetitions", "bytes", "gbps"]
TARGET_FIELDS = ["id", "description", "numerator", "denominator", "numerator_value",
                 "denominator_value", "op", "target", "ratio", "met", "factor", "status"]
TARGETS = ["durable_write_posix", "durable_write_hdf5", "hdf5_save_vs_h5py",
           "hdf5_restore_vs_h5py"]
for fmt in ("posix", "hdf5"):
    TARGETS += [f"{w}_vs_orbax_{fmt}" for w in ("save", "restore", "meta_save", "meta_restore")]
    TARGETS += [f"async_copy_{fmt}", f"async_zerocopy_{fmt}", f"restore_vs_fio_{fmt}",
                f"reshard_4to3_{fmt}", f"reshard_4to2_{fmt}", f"peak_memory_{fmt}"]


class Bad(Exception):
    pass


def need(obj, keys, where):
    if not isinstance(obj, dict):
        raise Bad(f"{where} is not an object")
    for k in keys:
        if k not in obj:
            raise Bad(f"{where}.{k} is missing")


def positive(x, where):
    if not isinstance(x, numbers.Real) or isinstance(x, bool) or not x > 0:
        raise Bad(f"{where} is {x!r}, not a positive number")


def check(doc, json_path, report):
    need(doc, TOP, "results file")
    need(doc["machine"], MACHINE, "machine")
    need(doc["config"], CONFIG, "config")
    need(doc["contenders"], CONTENDERS, "contenders")
    reps = doc["config"]["repetitions"]
    if not isinstance(reps, int) or reps < 1:
        raise Bad(f"config.repetitions is {reps!r}")
    orbax = doc["contenders"]["orbax"].get("status", "")
    for name, c in doc["contenders"].items():
        status = c.get("status", "")
        if status != "ok" and not status.startswith("unavailable: "):
            raise Bad(f"contenders.{name}.status is {status!r}, not 'ok' or 'unavailable: <why>'")
        if name != "orbax" and status != "ok":
            raise Bad(f"contenders.{name} is {status!r}: only Orbax may be unavailable")
    need(doc["versions"], VERSIONS + (ORBAX_VERSIONS if orbax == "ok" else []), "versions")
    names = RESULTS + (ORBAX_RESULTS if orbax == "ok" else [])
    for name in names:
        if name not in doc["results"]:
            raise Bad(f"results.{name} is missing")
        r = doc["results"][name]
        need(r, RESULT_FIELDS, f"results.{name}")
        if len(r["seconds"]) != reps or r["repetitions"] != reps:
            raise Bad(f"results.{name} has {len(r['seconds'])} repetitions, not {reps}")
        for i, s in enumerate(r["seconds"]):
            positive(s, f"results.{name}.seconds[{i}]")
        positive(r["median_seconds"], f"results.{name}.median_seconds")
        positive(r["bytes"], f"results.{name}.bytes")
        positive(r["gbps"], f"results.{name}.gbps")
        if "save_async" in name:
            need(r, ["median_total_seconds"], f"results.{name}")
        if name.startswith("cairn.") and name.endswith(".save_sync"):
            need(r, ["peak_rss_growth_bytes", "io_buffer_bytes"], f"results.{name}")
    targets = {t.get("id"): t for t in doc["targets"]}
    for tid in TARGETS:
        if tid not in targets:
            raise Bad(f"targets.{tid} is missing")
        t = targets[tid]
        need(t, TARGET_FIELDS, f"targets.{tid}")
        if t["status"] == "ok":
            positive(t["ratio"], f"targets.{tid}.ratio")
            if not isinstance(t["met"], bool):
                raise Bad(f"targets.{tid}.met is {t['met']!r}")
        elif "orbax" in tid and orbax != "ok":
            if t["status"] != orbax:
                raise Bad(f"targets.{tid}.status is {t['status']!r}, Orbax is {orbax!r}")
        elif not (tid.startswith("peak_memory") and t["status"].startswith("unavailable: ")):
            raise Bad(f"targets.{tid}.status is {t['status']!r}")
    base = os.path.splitext(json_path)[0]
    for suffix in ("throughput", "async", "metadata"):
        png = f"{base}-{suffix}.png"
        if not os.path.isfile(png) or os.path.getsize(png) == 0:
            raise Bad(f"plot {png} is missing")
    if report:
        with open(report) as f:
            text = f.read()
        if os.path.basename(json_path) not in text:
            raise Bad(f"{report} does not show {os.path.basename(json_path)}")


def main():
    p = argparse.ArgumentParser()
    p.add_argument("json")
    p.add_argument("--report")
    a = p.parse_args()
    try:
        with open(a.json) as f:
            doc = json.load(f)
        check(doc, a.json, a.report)
    except (Bad, OSError, ValueError) as e:
        print(f"check_results: {a.json}: {e}", file=sys.stderr)
        return 1
    print(f"check_results: {a.json}: every field present "
          f"(Orbax: {doc['contenders']['orbax']['status']})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
