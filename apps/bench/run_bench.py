"""Runs every contender of the benchmark on the same data and writes the results JSON, the
plots and the report (scripts/bench.sh calls it with Debian's /usr/bin/python3).

The physical limit (fio, memcpy), the hand-written baselines and cairn (cairn_bench), h5py
(h5py_bench.py) and Orbax (orbax_bench.py, in its virtual environment) run interleaved: each
repetition runs every contender once, in an order rotated from one repetition to the next, so
that the two sides of a ratio of repetition i ran under the same conditions of the machine.
A first, warm-up repetition (--warmup) runs everything once and is not counted: it pays the
one-time costs (the page cache of the programs and libraries, staging pages, the first
creation of the scratch directories). The JSON keeps every counted repetition and the median,
the ratios of bench_targets.py, those of compression to no compression (bench_compression.py),
those of incremental saves to whole ones (bench_incremental.py) and those of the node-local
level (bench_levels.py), each with its min, median and max over the repetitions, and the time
breakdown of one more, instrumented repetition of the cairn cases (bench_breakdown.py).
"""
import argparse
import datetime
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import bench_breakdown  # noqa: E402
import bench_compression  # noqa: E402
import bench_data as bd  # noqa: E402
import bench_incremental  # noqa: E402
import bench_levels  # noqa: E402
import bench_report  # noqa: E402
import bench_soak  # noqa: E402
import bench_targets  # noqa: E402

SCHEMA = 1


def log(text):
    print(f"bench: {text}", flush=True)


def run(cmd, **kw):
    log(" ".join(str(c) for c in cmd))
    subprocess.run([str(c) for c in cmd], check=True, **kw)


def output(cmd):
    try:
        return subprocess.run(cmd, check=True, capture_output=True, text=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError) as e:
        return f"unknown ({e})"


def fio_case(a, scratch, name, rw, direct, rep, rec, drop, jobs=None, files="seq",
             shared=False):
    """fio on `jobs` jobs (processes; default `ranks`), each 1/jobs of the bytes, 1 MiB
    sequential I/O, in files named after `files`; `shared`: every job in one file, at its own
    offset (the pattern of one shared file such as data.h5)."""
    jobs = jobs or a.ranks
    per_job = a.total_bytes // jobs
    if rw == "write":
        shutil.rmtree(scratch, ignore_errors=True)
        os.makedirs(scratch)
    status = bd.drop_caches(drop)
    cmd = ["fio", f"--name={files}", f"--directory={scratch}", f"--rw={rw}", "--bs=1M",
           f"--size={per_job}", f"--numjobs={jobs}", "--group_reporting",
           "--ioengine=psync", f"--direct={1 if direct else 0}", "--output-format=json"]
    if shared:
        cmd += [f"--filename={files}.dat", f"--offset_increment={per_job}"]
    if rw == "write":
        # Create and allocate the files during the timed job, as every other contender
        # does (by default fio lays them out, preallocated, before the clock starts).
        cmd += ["--create_on_open=1", "--fallocate=none", "--end_fsync=1"]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    job = json.loads(out[out.index("{"):])["jobs"][0][rw]
    # fio's runtime of the group (ms) includes end_fsync.
    seconds = job["runtime"] / 1000.0
    rec.add(name, rep, seconds, job["io_bytes"], page_cache=status)


def run_fio(a, rec, drop, rep):
    """One repetition of every fio case."""
    scratch = os.path.join(a.scratch, "fio")
    fio_case(a, scratch, "fio.write_direct", "write", True, rep, rec, drop)
    fio_case(a, scratch, "fio.write_fsync", "write", False, rep, rec, drop)
    fio_case(a, scratch, "fio.read", "read", False, rep, rec, drop)
    fio_case(a, scratch, "fio.read_direct", "read", True, rep, rec, drop)
    # One file written and read by every job at its own offset: the limit of a shared-file
    # format (cairn's hdf5, h5py, MPI-IO), whose writes all go to one inode.
    fio_case(a, scratch, "fio.write_fsync_shared", "write", False, rep, rec, drop,
             files="shared", shared=True)
    fio_case(a, scratch, "fio.read_shared", "read", False, rep, rec, drop, files="shared",
             shared=True)
    # One process reading all the bytes from one file: the limit of a restore on one rank
    # (4->1), whose reads are one stream. Its file is written (untimed) first.
    subprocess.run(["fio", "--name=one", f"--directory={scratch}", "--rw=write", "--bs=1M",
                    f"--size={a.total_bytes}", "--numjobs=1", "--end_fsync=1"],
                   check=True, capture_output=True)
    fio_case(a, scratch, "fio.read_one_job", "read", False, rep, rec, drop, jobs=1,
             files="one")
    shutil.rmtree(scratch, ignore_errors=True)


def run_interleaved(a, raw, contenders):
    """Runs `contenders` ([(name, run(part_path))], each running one repetition of its cases
    and recording them in part_path) --warmup + --reps times, the order rotated by one at
    each repetition; appends the records of the counted repetitions to `raw`, numbered by
    repetition."""
    part = raw + ".part"
    for rep in range(-a.warmup, a.reps):
        k = rep % len(contenders)
        order = contenders[k:] + contenders[:k]
        label = "warm-up" if rep < 0 else f"repetition {rep + 1} of {a.reps}"
        log(f"{label}: " + ", ".join(name for name, _ in order))
        for _, body in order:
            if os.path.exists(part):
                os.remove(part)
            body(part)
            if rep < 0 or not os.path.exists(part):
                continue
            with open(part) as f, open(raw, "a") as out:
                for line in f:
                    if line.strip():
                        record = json.loads(line)
                        record["rep"] = rep
                        out.write(json.dumps(record) + "\n")
    if os.path.exists(part):
        os.remove(part)


def aggregate(records):
    """name -> {seconds: [...], median_seconds, bytes, gbps, extra medians/maxima, the peak
    RSS growth of every repetition and its maximum}."""
    by_name = {}
    for r in records:
        by_name.setdefault(r["name"], []).append(r)
    results = {}
    for name, rs in sorted(by_name.items()):
        rs.sort(key=lambda r: r["rep"])
        med = statistics.median(r["seconds"] for r in rs)
        entry = {"seconds": [r["seconds"] for r in rs], "median_seconds": med,
                 "repetitions": len(rs), "bytes": rs[0]["bytes"],
                 "gbps": rs[0]["bytes"] / med / 1e9 if med > 0 else None}
        if "total_seconds" in rs[0]:
            entry["total_seconds"] = [r["total_seconds"] for r in rs]
            entry["median_total_seconds"] = statistics.median(entry["total_seconds"])
        if "peak_rss_growth_bytes" in rs[0]:
            entry["peak_rss_growth_bytes_reps"] = [r["peak_rss_growth_bytes"] for r in rs]
            entry["peak_rss_growth_bytes"] = max(entry["peak_rss_growth_bytes_reps"])
        if "disk_bytes" in rs[0]:
            entry["disk_bytes_reps"] = [r["disk_bytes"] for r in rs]
        if "max_error" in rs[0]:
            entry["max_error"] = max(r["max_error"] for r in rs)
        for key in ("step_seconds", "step_written_bytes", "step_allocated_bytes", "copy_bytes",
                    "drain_in_flight_before", "drain_in_flight_after"):
            if key in rs[0]:
                entry[f"{key}_reps"] = [r[key] for r in rs]
        for key in ("io_buffer_bytes", "staging_bytes", "ranks", "saved_ranks", "layout",
                    "leaves", "page_cache", "data_bytes", "compression", "data", "unavailable",
                    "steps", "changed_fraction", "chunk_bytes", "nodes", "ranks_per_node",
                    "redundancy", "xor_group", "lost_node", "persistent_every"):
            if key in rs[0]:
                entry[key] = rs[0][key]
        results[name] = entry
    return results


def machine(scratch):
    cpu = "unknown"
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    with open("/proc/meminfo") as f:
        mem_kib = int(f.readline().split()[1])
    return {"cpu": cpu, "cores": os.cpu_count(), "memory_gib": round(mem_kib / 2**20, 1),
            "kernel": platform.release(),
            "file_system": output(["findmnt", "-n", "-o", "FSTYPE,SOURCE,TARGET", "-T", scratch]),
            "os": output(["sh", "-c", ". /etc/os-release && echo $PRETTY_NAME"])}


def versions(a):
    v = {"cairn": a.cairn_version, "fio": output(["fio", "--version"]),
         "mpi": output(["mpiexec", "--version"]).splitlines()[0],
         "python": platform.python_version()}
    code = ("import h5py, numpy, mpi4py; print(h5py.__version__, h5py.version.hdf5_version, "
            "numpy.__version__, mpi4py.__version__)")
    parts = output(["/usr/bin/python3", "-c", code]).split()
    if len(parts) == 4:
        v.update(h5py=parts[0], hdf5=parts[1], numpy=parts[2], mpi4py=parts[3])
    if a.orbax_python:
        code = ("import importlib.metadata as m; print(m.version('orbax-checkpoint'), "
                "m.version('jax'), m.version('tensorstore'))")
        parts = output([a.orbax_python, "-c", code]).split()
        if len(parts) == 3:
            v.update(orbax_checkpoint=parts[0], jax=parts[1], tensorstore=parts[2])
    return v


def run_soak(a, stamp, name):
    """The soak run on a.soak_ranks ranks: its own results JSON (<name>-soak.json) and the soak
    section of the report. Returns the path of the JSON."""
    raw = os.path.join(a.results_dir, name + "-soak.jsonl")
    if os.path.exists(raw):
        os.remove(raw)
    mpiexec = ["mpiexec", "-n", str(a.soak_ranks)] + a.mpiexec_flags.split()
    log(f"soak: {a.soak_saves} async saves on {a.soak_ranks} ranks, max_to_keep "
        f"{a.soak_keep}")
    run(mpiexec + [a.driver, "--dir", a.scratch, "--out", raw, "--cases", "soak",
                   "--soak-saves", a.soak_saves, "--soak-keep", a.soak_keep])
    with open(raw) as f:
        records = [json.loads(line) for line in f if line.strip()]
    os.remove(raw)
    samples = bench_soak.samples_of(records)
    first = next(r for r in records if r["name"] == "cairn.soak.sample")
    doc = {
        "schema": SCHEMA,
        "kind": "soak",
        "date": stamp.isoformat(timespec="seconds"),
        "quick": a.quick,
        "command": a.command,
        "machine": machine(a.scratch),
        "versions": {"cairn": a.cairn_version,
                     "mpi": output(["mpiexec", "--version"]).splitlines()[0]},
        "config": {"ranks": a.soak_ranks, "cores": os.cpu_count(), "saves": a.soak_saves,
                   "max_to_keep": a.soak_keep, "tree_bytes": first["tree_bytes"],
                   "manager": "CheckpointManager, async saves, format posix",
                   "scratch": os.path.abspath(a.scratch)},
        "samples": samples,
        "verdict": bench_soak.verdict(samples, a.soak_saves, a.soak_keep),
    }
    path = os.path.join(a.results_dir, name + "-soak.json")
    with open(path, "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")
    bench_report.update_soak_markdown(doc, a.report, path)
    v = doc["verdict"]
    log(f"soak: {path}: " + ("flat" if v["flat"] else "DEFECTS: " + "; ".join(v["defects"])))
    return path


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--driver", required=True, help="the cairn_bench executable")
    p.add_argument("--scratch", required=True, help="directory on the file system to measure")
    p.add_argument("--results-dir", required=True)
    p.add_argument("--report", required=True, help="BENCHMARKS.md to update")
    p.add_argument("--total-bytes", type=int, default=2 << 30)
    p.add_argument("--leaves", type=int, default=8)
    p.add_argument("--cols", type=int, default=4096)
    p.add_argument("--meta-leaves", type=int, default=10000)
    p.add_argument("--meta-elems", type=int, default=512)
    p.add_argument("--reps", type=int, default=5)
    p.add_argument("--warmup", type=int, default=1,
                   help="repetitions run first and not counted (one-time costs)")
    p.add_argument("--ranks", type=int, default=4)
    p.add_argument("--quick", action="store_true")
    p.add_argument("--no-drop-caches", action="store_true")
    p.add_argument("--orbax-python", default="", help="python of the Orbax environment")
    p.add_argument("--orbax-unavailable", default="", help="why Orbax cannot run")
    p.add_argument("--mpiexec-flags", default="--oversubscribe")
    p.add_argument("--cairn-version", default="unknown")
    p.add_argument("--command", default="", help="the command line, for the report")
    p.add_argument("--name", default="", help="file name of the results (default: the date)")
    p.add_argument("--soak", action="store_true", help="run the soak only")
    p.add_argument("--no-soak", action="store_true", help="leave the soak out of the run")
    p.add_argument("--soak-saves", type=int, default=2000)
    p.add_argument("--soak-keep", type=int, default=3)
    p.add_argument("--soak-ranks", type=int, default=2)
    a = p.parse_args()

    for attr in ("driver", "scratch", "results_dir", "report"):
        setattr(a, attr, os.path.abspath(getattr(a, attr)))
    rows = max(a.ranks * 2, a.total_bytes // (8 * a.leaves * a.cols))
    a.total_bytes = a.leaves * rows * a.cols * 8
    stamp = datetime.datetime.now(datetime.timezone.utc)
    name = a.name or stamp.strftime("%Y-%m-%d-%H%M") + ("-quick" if a.quick else "")
    os.makedirs(a.results_dir, exist_ok=True)
    raw = os.path.join(a.results_dir, name + ".jsonl")
    if os.path.exists(raw):
        os.remove(raw)
    os.makedirs(a.scratch, exist_ok=True)
    if a.soak:
        run_soak(a, stamp, name)
        return
    drop = not a.no_drop_caches
    drop_status = bd.drop_caches(drop)
    nodrop = ["--no-drop-caches"] if not drop else []
    mpiexec = ["mpiexec", "-n", str(a.ranks)] + a.mpiexec_flags.split()
    shape = ["--rows", rows, "--cols", a.cols, "--leaves", a.leaves]

    log(f"{a.total_bytes / 2**30:.2f} GiB in {a.leaves} arrays of {rows} x {a.cols} float64, "
        f"{a.meta_leaves} x {a.meta_elems * 8} B metadata-heavy tree, {a.reps} repetitions "
        f"(interleaved, after {a.warmup} warm-up), "
        f"{a.ranks} ranks on {os.cpu_count()} cores, page cache: {drop_status}")
    contenders = [
        ("fio", lambda part: run_fio(a, bd.Recorder(part), drop, 0)),
        ("cairn_bench", lambda part: run(mpiexec + [
            a.driver, "--dir", a.scratch, "--out", part, "--reps", 1, "--meta-leaves",
            a.meta_leaves, "--meta-elems", a.meta_elems] + shape + nodrop)),
        ("h5py", lambda part: run(mpiexec + [
            "/usr/bin/python3", os.path.join(HERE, "h5py_bench.py"), "--dir", a.scratch,
            "--out", part, "--reps", 1] + shape + nodrop)),
    ]
    orbax = {"status": "ok"}
    if a.orbax_python:
        # A failure here is a bug of the benchmark, not a missing environment: it stops the run.
        contenders.append(("orbax", lambda part: run([
            a.orbax_python, os.path.join(HERE, "orbax_bench.py"), "--dir", a.scratch, "--out",
            part, "--reps", 1, "--meta-leaves", a.meta_leaves, "--meta-elems",
            a.meta_elems] + shape + nodrop)))
    else:
        orbax = {"status": f"unavailable: {a.orbax_unavailable or 'no Orbax environment'}"}
    run_interleaved(a, raw, contenders)
    log("breakdown: one instrumented repetition of the cairn cases (not counted)")
    breakdown = bench_breakdown.run(mpiexec, a.driver, a.scratch, raw + ".breakdown",
                                    ["--meta-leaves", a.meta_leaves, "--meta-elems",
                                     a.meta_elems] + shape + nodrop)

    with open(raw) as f:
        records = [json.loads(line) for line in f if line.strip()]
    results = aggregate(records)
    doc = {
        "schema": SCHEMA,
        "date": stamp.isoformat(timespec="seconds"),
        "quick": a.quick,
        "command": a.command,
        "machine": machine(a.scratch),
        "versions": versions(a),
        "config": {"ranks": a.ranks, "cores": os.cpu_count(),
                   "oversubscribed": a.ranks > (os.cpu_count() or 1),
                   "total_bytes": a.total_bytes, "leaves": a.leaves, "shape": [rows, a.cols],
                   "dtype": "float64", "decomposition": "2-D blocks on a near-square grid",
                   "meta_leaves": a.meta_leaves, "meta_leaf_bytes": a.meta_elems * 8,
                   "repetitions": a.reps, "warmup_repetitions": a.warmup,
                   "interleaved": True, "page_cache": drop_status,
                   "scratch": os.path.abspath(a.scratch)},
        "contenders": {"fio": {"status": "ok"}, "memcpy": {"status": "ok"},
                       "baselines": {"status": "ok"}, "h5py": {"status": "ok"},
                       "cairn": {"status": "ok"}, "orbax": orbax},
        "results": results,
        "breakdown": breakdown,
    }
    doc["targets"] = bench_targets.evaluate(doc)
    doc["compression"] = bench_compression.evaluate(doc)
    doc["incremental"] = bench_incremental.evaluate(doc)
    doc["levels"] = bench_levels.evaluate(doc)
    path = os.path.join(a.results_dir, name + ".json")
    with open(path, "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")
    os.remove(raw)
    log(f"results: {path}")
    plots = bench_report.plots(doc, a.results_dir, name)
    bench_report.update_markdown(doc, a.report, path, plots)
    bench_compression.update_markdown(doc, a.report)
    bench_incremental.update_markdown(doc, a.report)
    bench_levels.update_markdown(doc, a.report)
    bench_breakdown.update_markdown(doc, a.report)
    log(f"report: {a.report}")
    for t in doc["targets"]:
        log(bench_report.target_line(t))
    for line in (bench_compression.summary_lines(doc) + bench_incremental.summary_lines(doc) +
                 bench_levels.summary_lines(doc) + bench_breakdown.summary_lines(doc)):
        log(line)
    if not a.no_soak:
        run_soak(a, stamp, name)


if __name__ == "__main__":
    main()
