"""Checks that a results JSON of scripts/bench.sh has every field, every contender and every
target (each ratio with its per-repetition spread), that a full run has at least
FULL_RUN_REPS repetitions, that the plots exist beside it, and (with --report) that the report
shows the run and every target. For the JSON of a soak run (<date>-soak.json) it checks the
samples and the verdict, and fails when resident memory, open descriptors or files on disk
grew (a defect). Exits non-zero naming the first missing or malformed field, or the growth.

    python3 check_results.py apps/bench/results/<date>.json [--report BENCHMARKS.md]
    python3 check_results.py apps/bench/results/<date>-soak.json [--report BENCHMARKS.md]
"""
import argparse
import json
import numbers
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_breakdown  # noqa: E402
import bench_levels  # noqa: E402
import bench_soak  # noqa: E402

TOP = ["schema", "date", "quick", "command", "machine", "versions", "config", "contenders",
       "results", "targets"]
MACHINE = ["cpu", "cores", "memory_gib", "kernel", "file_system", "os"]
VERSIONS = ["cairn", "fio", "mpi", "python", "h5py", "hdf5", "numpy", "mpi4py"]
ORBAX_VERSIONS = ["orbax_checkpoint", "jax", "tensorstore"]
CONFIG = ["ranks", "cores", "oversubscribed", "total_bytes", "leaves", "shape", "dtype",
          "decomposition", "meta_leaves", "meta_leaf_bytes", "repetitions", "warmup_repetitions",
          "interleaved", "page_cache",
          "scratch"]
CONTENDERS = ["fio", "memcpy", "baselines", "h5py", "cairn", "orbax"]
RESULTS = ["fio.write_fsync", "fio.write_direct", "fio.read", "fio.read_direct",
           "fio.read_one_job", "fio.write_fsync_shared", "fio.read_shared", "memcpy.copy",
           "baseline.posix.write", "baseline.posix.read", "baseline.mpiio.write",
           "baseline.mpiio.read", "h5py.write", "h5py.read", "h5py.read_independent"]
RESTORES = ["restore", "restore_to3", "restore_to2", "restore_to1", "restore_transposed",
            "restore_3to3", "restore_3to4"]
for fmt in ("posix", "hdf5"):
    RESULTS += [f"cairn.{fmt}.{case}" for case in (
        ["save_sync", "save_async_copy", "save_async_copy_first", "save_async_zerocopy",
         "meta_save", "meta_restore"] +
        RESTORES)]
ORBAX_RESULTS = ["orbax.save_sync", "orbax.restore", "orbax.save_async", "orbax.meta_save",
                 "orbax.meta_restore"]
RESULT_FIELDS = ["seconds", "median_seconds", "repetitions", "bytes", "gbps"]
MEMORY_FIELDS = ["peak_rss_growth_bytes", "peak_rss_growth_bytes_reps", "io_buffer_bytes"]
TARGET_FIELDS = ["id", "description", "numerator", "denominator", "numerator_value",
                 "denominator_value", "op", "target", "ratio", "ratio_min", "ratio_median",
                 "ratio_max", "ratios", "judged_on", "met", "met_reps", "factor", "status"]
TARGETS = ["durable_write_posix", "durable_write_hdf5", "hdf5_save_vs_h5py",
           "hdf5_restore_vs_h5py"]
for fmt in ("posix", "hdf5"):
    TARGETS += [f"{w}_vs_orbax_{fmt}" for w in ("save", "restore", "meta_save", "meta_restore")]
    TARGETS += [f"async_copy_{fmt}", f"async_zerocopy_{fmt}", f"async_copy_vs_memcpy_{fmt}",
                f"restore_vs_fio_{fmt}",
                f"restore_to1_vs_fio_one_job_{fmt}",
                f"peak_memory_{fmt}", f"restore_peak_memory_{fmt}", f"reshard_peak_memory_{fmt}"]
    TARGETS += [f"reshard_{r}_{fmt}" for r in ("4to3", "4to2", "4to1", "3to4", "transposed")]
# The compression rows (bench_compression.py): `none` is measured in every format; zstd and zfp
# may be unavailable in a build or format, saying why.
for fmt in ("posix", "hdf5"):
    RESULTS += [f"cairn.{fmt}.compress.none.{d}.{op}" for d in ("field", "random")
                for op in ("save", "restore")]
COMPRESSION_ROWS = [f"compress_{fmt}_{c}_{d}" for fmt in ("posix", "hdf5")
                    for c in ("zstd", "zstd_plain", "zfp") for d in ("field", "random")]
# The incremental case (bench_incremental.py): every step of every repetition, off and on.
RESULTS += [f"cairn.posix.incremental.{mode}.{op}" for mode in ("off", "on")
            for op in ("save", "restore")]
INCREMENTAL_STEPS = ["step_seconds_reps", "step_written_bytes_reps", "step_allocated_bytes_reps"]
# The levels case (bench_levels.py): every measurement, and the redundancy bytes of every local
# save, in every repetition (on 2 ranks or more; on one it says why it is unavailable).
LEVELS_RESULTS = [bench_levels.PREFIX + name for name, _ in bench_levels.MEASUREMENTS]
LEVELS_FIELDS = ["status", "data_bytes", "nodes", "xor_group", "seconds", "copy_bytes",
                 "drain_in_flight", "targets", "reported", "model"]
LEVELS_TARGET_FIELDS = ["id", "description", "op", "target", "ratios", "ratio_min",
                        "ratio_median", "ratio_max", "ratio", "met", "met_reps", "status"]
# A full run (not --quick) has at least this many repetitions, so that the spread means something.
FULL_RUN_REPS = 5


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


def check_spread(t, reps, where):
    """A judged target: one ratio per repetition, min <= median <= max, the judged ratio."""
    if len(t["ratios"]) != reps:
        raise Bad(f"{where}.ratios has {len(t['ratios'])} values, not one per repetition")
    for i, x in enumerate(t["ratios"]):
        if "peak_memory" in t["id"]:  # a restore may allocate nothing the counter sees
            if not isinstance(x, numbers.Real) or x < 0:
                raise Bad(f"{where}.ratios[{i}] is {x!r}, not a number >= 0")
        else:
            positive(x, f"{where}.ratios[{i}]")
    lo, mid, hi = t["ratio_min"], t["ratio_median"], t["ratio_max"]
    if (lo, mid, hi) != (min(t["ratios"]), statistics.median(t["ratios"]), max(t["ratios"])):
        raise Bad(f"{where}: ratio_min/median/max are not those of its ratios")
    judged = {"median": mid, "worst": hi if t["op"] == "<=" else lo}.get(t["judged_on"])
    if judged is None or t["ratio"] != judged:
        raise Bad(f"{where}.ratio is not the {t['judged_on']!r} of its ratios")
    if not isinstance(t["met"], bool):
        raise Bad(f"{where}.met is {t['met']!r}")
    if not isinstance(t["met_reps"], int) or not 0 <= t["met_reps"] <= reps:
        raise Bad(f"{where}.met_reps is {t['met_reps']!r}")


def check_incremental(doc, reps):
    """The incremental records hold one value per step of every repetition, and the summary
    has its three ratios on / off with one value per repetition."""
    if "incremental" not in doc:
        raise Bad("results file.incremental is missing")
    for mode in ("off", "on"):
        name = f"cairn.posix.incremental.{mode}.save"
        r = doc["results"][name]
        need(r, INCREMENTAL_STEPS + ["steps"], f"results.{name}")
        for key in INCREMENTAL_STEPS:
            if len(r[key]) != reps or any(len(steps) != r["steps"] for steps in r[key]):
                raise Bad(f"results.{name}.{key} has not {r['steps']} steps in each of {reps} "
                          "repetitions")
            for i, steps in enumerate(r[key]):
                for k, x in enumerate(steps):
                    positive(x, f"results.{name}.{key}[{i}][{k}]")
    inc = doc["incremental"]
    need(inc, ["status", "off", "on", "bytes", "save", "restore"], "incremental")
    if inc["status"] != "ok":
        raise Bad(f"incremental.status is {inc['status']!r}")
    for key in ("bytes", "save", "restore"):
        ratio, where = inc[key], f"incremental.{key}"
        if len(ratio["ratios"]) != reps:
            raise Bad(f"{where}.ratios has {len(ratio['ratios'])} values, not {reps}")
        if (ratio["ratio_min"], ratio["ratio_median"], ratio["ratio_max"]) != (
                min(ratio["ratios"]), statistics.median(ratio["ratios"]), max(ratio["ratios"])):
            raise Bad(f"{where}: ratio_min/median/max are not those of its ratios")


def check_levels(doc, reps):
    """Every levels measurement in every repetition, the redundancy bytes of each local save,
    and every target with one ratio per repetition, its spread and its verdict; on one rank,
    the reason the case is unavailable."""
    if "levels" not in doc:
        raise Bad("results file.levels is missing")
    lv = doc["levels"]
    if doc["config"]["ranks"] < 2:
        if not lv.get("status", "").startswith("unavailable: "):
            raise Bad(f"levels.status is {lv.get('status')!r} on one rank")
        return
    need(lv, LEVELS_FIELDS, "levels")
    if lv["status"] != "ok":
        raise Bad(f"levels.status is {lv['status']!r}")
    for r in bench_levels.REDUNDANCIES:
        name = f"{bench_levels.PREFIX}local.{r}.save"
        copies = doc["results"][name].get("copy_bytes_reps")
        if not isinstance(copies, list) or len(copies) != reps:
            raise Bad(f"results.{name}.copy_bytes_reps has not one value per repetition")
        if any(not isinstance(x, int) or x < 0 or (r != "none" and x == 0) for x in copies):
            raise Bad(f"results.{name}.copy_bytes_reps is {copies!r}")
    ids = [t.get("id") for t in lv["targets"]]
    if ids != [t[0] for t in bench_levels.TARGETS]:
        raise Bad(f"levels.targets are {ids!r}")
    for t in lv["targets"] + lv["reported"]:
        where = f"levels.targets.{t.get('id')}"
        need(t, LEVELS_TARGET_FIELDS, where)
        if t["status"] != "ok":
            raise Bad(f"{where}.status is {t['status']!r}")
        if len(t["ratios"]) != reps:
            raise Bad(f"{where}.ratios has {len(t['ratios'])} values, not {reps}")
        if (t["ratio_min"], t["ratio_median"], t["ratio_max"]) != (
                min(t["ratios"]), statistics.median(t["ratios"]), max(t["ratios"])):
            raise Bad(f"{where}: ratio_min/median/max are not those of its ratios")
        if t["op"] is None:
            continue
        if t["met"] is None:
            if t["id"] != "xor_bytes" or lv["xor_group"] == 4:
                raise Bad(f"{where} is not judged")
        elif not isinstance(t["met"], bool) or not 0 <= t["met_reps"] <= reps:
            raise Bad(f"{where}.met is {t['met']!r}, met_reps {t['met_reps']!r}")


def check_breakdown(doc):
    """The time breakdown: for each format, the save and the restore with every phase of
    bench_breakdown.py on the slowest rank and on average."""
    if "breakdown" not in doc:
        raise Bad("results file.breakdown is missing")
    for fmt in bench_breakdown.FORMATS:
        for op, phases in (("save", bench_breakdown.SAVE_PHASES),
                           ("restore", bench_breakdown.RESTORE_PHASES)):
            where = f"breakdown.{fmt}.{op}"
            s = doc["breakdown"].get(fmt, {}).get(op)
            if s is None:
                raise Bad(f"{where} is missing")
            if s.get("status") != "ok":
                raise Bad(f"{where}.status is {s.get('status')!r}")
            for phase in phases + ("total",):
                p = s["phases"].get(phase)
                if p is None or not all(isinstance(p.get(k), numbers.Real) for k in ("max", "mean")):
                    raise Bad(f"{where}.phases.{phase} lacks max or mean")


def check_compression(doc, reps):
    """Every compression row, each ratio with one value per repetition (or the row unavailable,
    saying why)."""
    if "compression" not in doc:
        raise Bad("results file.compression is missing")
    rows = {r.get("id"): r for r in doc["compression"]}
    for rid in COMPRESSION_ROWS:
        if rid not in rows:
            raise Bad(f"compression.{rid} is missing")
        row = rows[rid]
        need(row, ["format", "compression", "data", "status", "bytes", "save", "restore"],
             f"compression.{rid}")
        if row["status"] != "ok":
            if not row["status"].startswith("unavailable: ") or row["compression"] == "none":
                raise Bad(f"compression.{rid}.status is {row['status']!r}")
            continue
        for key in ("bytes", "save", "restore"):
            ratio, where = row[key], f"compression.{rid}.{key}"
            if len(ratio["ratios"]) != reps:
                raise Bad(f"{where}.ratios has {len(ratio['ratios'])} values, not {reps}")
            for i, x in enumerate(ratio["ratios"]):
                positive(x, f"{where}.ratios[{i}]")
            if (ratio["ratio_min"], ratio["ratio_median"], ratio["ratio_max"]) != (
                    min(ratio["ratios"]), statistics.median(ratio["ratios"]),
                    max(ratio["ratios"])):
                raise Bad(f"{where}: ratio_min/median/max are not those of its ratios")


SOAK_TOP = ["schema", "kind", "date", "quick", "command", "machine", "versions", "config",
            "samples", "verdict"]
SOAK_CONFIG = ["ranks", "cores", "saves", "max_to_keep", "tree_bytes", "manager", "scratch"]


def check_soak(doc, json_path, report):
    """A soak run: every field, samples that cover the run, the verdict recomputed from them,
    and no growth."""
    need(doc, SOAK_TOP, "soak results")
    need(doc["machine"], MACHINE, "machine")
    need(doc["config"], SOAK_CONFIG, "config")
    samples = doc["samples"]
    for i, s in enumerate(samples):
        need(s, bench_soak.SAMPLE_FIELDS, f"samples[{i}]")
        for k in ("rss_bytes", "heap_bytes", "vm_bytes", "fds", "files", "disk_bytes"):
            positive(s[k], f"samples[{i}].{k}")
    if not samples or samples[-1]["saves"] != doc["config"]["saves"]:
        raise Bad("samples do not reach the last save")
    need(doc["verdict"], bench_soak.VERDICT_FIELDS, "verdict")
    again = bench_soak.verdict(samples, doc["config"]["saves"], doc["config"]["max_to_keep"])
    if again != doc["verdict"]:
        raise Bad("verdict does not follow from the samples")
    if report:
        with open(report) as f:
            text = f.read()
        rel = os.path.relpath(json_path, os.path.dirname(os.path.abspath(report)))
        if rel not in text or doc["date"] not in text:
            raise Bad(f"{report} does not show this soak run ({rel})")
    if not doc["verdict"]["flat"]:
        raise Bad("soak found growth: " + "; ".join(doc["verdict"]["defects"]))


def check(doc, json_path, report):
    if doc.get("kind") == "soak":
        check_soak(doc, json_path, report)
        return
    need(doc, TOP, "results file")
    need(doc["machine"], MACHINE, "machine")
    need(doc["config"], CONFIG, "config")
    need(doc["contenders"], CONTENDERS, "contenders")
    reps = doc["config"]["repetitions"]
    if not isinstance(reps, int) or reps < 1:
        raise Bad(f"config.repetitions is {reps!r}")
    if not doc["quick"] and reps < FULL_RUN_REPS:
        raise Bad(f"config.repetitions is {reps}: a full run needs at least {FULL_RUN_REPS}")
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
        # The main tree's cairn cases (not the compress and incremental cases, which measure no
        # memory).
        main_case = (name.startswith("cairn.") and ".compress." not in name and
                     ".incremental." not in name)
        if main_case and name.split(".")[-1] in ["save_sync"] + RESTORES:
            need(r, MEMORY_FIELDS, f"results.{name}")
            if len(r["peak_rss_growth_bytes_reps"]) != reps:
                raise Bad(f"results.{name}.peak_rss_growth_bytes_reps has "
                          f"{len(r['peak_rss_growth_bytes_reps'])} values, not {reps}")
            if r["peak_rss_growth_bytes"] != max(r["peak_rss_growth_bytes_reps"]):
                raise Bad(f"results.{name}.peak_rss_growth_bytes is not the maximum of its reps")
        if main_case and name.split(".")[-1] in RESTORES:
            need(r, ["ranks", "saved_ranks", "layout"], f"results.{name}")
    check_compression(doc, reps)
    check_breakdown(doc)
    check_incremental(doc, reps)
    if doc["config"]["ranks"] >= 2:
        for name in LEVELS_RESULTS:
            r = doc["results"].get(name)
            if not r or len(r["seconds"]) != reps:
                raise Bad(f"results.{name} has not {reps} repetitions")
            for i, x in enumerate(r["seconds"]):
                positive(x, f"results.{name}.seconds[{i}]")
    check_levels(doc, reps)
    targets = {t.get("id"): t for t in doc["targets"]}
    for tid in TARGETS:
        if tid not in targets:
            raise Bad(f"targets.{tid} is missing")
        t = targets[tid]
        need(t, TARGET_FIELDS, f"targets.{tid}")
        if t["status"] == "ok":
            check_spread(t, reps, f"targets.{tid}")
        elif "orbax" in tid and orbax != "ok":
            if t["status"] != orbax:
                raise Bad(f"targets.{tid}.status is {t['status']!r}, Orbax is {orbax!r}")
        elif not ("peak_memory" in tid and t["status"].startswith("unavailable: ")):
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
        for t in doc["targets"]:
            if t["description"] not in text:
                raise Bad(f"{report} does not show the target {t['id']}")
        if "## Compression" not in text or "bytes on disk ÷ none" not in text:
            raise Bad(f"{report} has no Compression section")
        if "## Incremental saves" not in text or "| on ÷ off |" not in text:
            raise Bad(f"{report} has no Incremental saves section")
        if bench_levels.BEGIN not in text or bench_levels.END not in text:
            raise Bad(f"{report} has no Multi-level checkpointing section")
        if doc["levels"]["status"] == "ok":
            for t in doc["levels"]["targets"]:
                if t["description"] not in text:
                    raise Bad(f"{report} does not show the levels target {t['id']}")


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
    if doc.get("kind") == "soak":
        print(f"check_results: {a.json}: soak flat")
    else:
        print(f"check_results: {a.json}: every field present "
              f"(Orbax: {doc['contenders']['orbax']['status']})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
