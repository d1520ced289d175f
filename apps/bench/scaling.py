"""The scaling study (scripts/bench.sh --scaling calls it with Debian's /usr/bin/python3).

Weak scaling of cairn's metadata: for every rank count P and leaf count L, one mpiexec runs
cairn_bench's scaling cases (posix and hdf5: a tree of L small 1-D leaves, each split over the
P ranks, --elems-per-rank float64 per leaf per rank), with the PMPI counting layer
(libcairn_mpi_count) preloaded. Each save and restore is a counted phase. The script keeps per
run: the index and metadata bytes and the files of a step, the collective calls of rank 0 and
their maximum over ranks, the agreement rounds (cairn's barriers and agreements go through the
primary with point-to-point messages), the bytes of the index each rank receives, rank 0's
peak memory and the save and restore times (median). From these it fits per-format models
(a * P * L + b * P + c * L + d) and extrapolates to the ranks of --model-ranks, then writes
<results-dir>/scaling-<name>.json, a PNG plot and the "Scaling" section of the report
(scaling_report.py).
"""
import argparse
import datetime
import json
import math
import os
import platform
import shutil
import statistics
import subprocess
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import scaling_report  # noqa: E402

SCHEMA = 1
FORMATS = ("posix", "hdf5")
# MPI collectives (and communicator constructors, MPI-IO collectives) the layer counts; the
# point-to-point calls are counted apart (agreement rounds).
COLLECTIVES = (
    "MPI_Barrier", "MPI_Ibarrier", "MPI_Bcast", "MPI_Ibcast", "MPI_Allreduce", "MPI_Iallreduce",
    "MPI_Reduce", "MPI_Ireduce", "MPI_Allgather", "MPI_Iallgather", "MPI_Allgatherv",
    "MPI_Iallgatherv", "MPI_Gather", "MPI_Igather", "MPI_Gatherv", "MPI_Igatherv", "MPI_Scatter",
    "MPI_Scatterv", "MPI_Alltoall", "MPI_Ialltoall", "MPI_Alltoallv", "MPI_Ialltoallv",
    "MPI_Comm_dup", "MPI_Comm_split",
    "MPI_Comm_split_type", "MPI_Comm_create", "MPI_File_open", "MPI_File_close",
    "MPI_File_set_view", "MPI_File_set_size", "MPI_File_sync", "MPI_File_write_all",
    "MPI_File_write_at_all", "MPI_File_read_all", "MPI_File_read_at_all")
POINT_TO_POINT = ("MPI_Send", "MPI_Isend", "MPI_Recv", "MPI_Irecv")


def log(text):
    print(f"scaling: {text}", flush=True)


def read_jsonl(path):
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def phase_summary(per_rank, ranks, data_bytes_per_rank):
    """Counts of one phase ("posix.save", ...): {rank: [record per repetition]} -> summary."""
    first = {r: reps[0] for r, reps in per_rank.items()}
    same = all(rec["calls"] == reps[0]["calls"] for reps in per_rank.values() for rec in reps)

    def collectives(rec):
        return sum(n for f, n in rec["calls"].items() if f in COLLECTIVES)

    def received(rec):
        return sum(n for f, n in rec["bytes"].items() if f in COLLECTIVES)

    def records(rec):  # a save's all-to-all: the shard records its sections' owner receives
        return rec["bytes"].get("MPI_Ialltoallv", 0) + rec["bytes"].get("MPI_Alltoallv", 0)

    rank0 = first[0]
    others = [first[r] for r in range(1, ranks)]
    # A non-primary rank posts one Irecv (the primary's verdict) per agreement round.
    rounds = others[0]["calls"].get("MPI_Irecv", 0) if others else 0
    return {
        "calls_rank0": {f: n for f, n in rank0["calls"].items() if f in COLLECTIVES},
        "point_to_point_rank0": {f: n for f, n in rank0["calls"].items() if f in POINT_TO_POINT},
        "collectives_rank0": collectives(rank0),
        "collectives_max": max(collectives(rec) for rec in first.values()),
        "agreement_rounds": rounds,
        "collective_ops": collectives(rank0) + rounds,
        "primary_messages": sum(rank0["calls"].get(f, 0) for f in POINT_TO_POINT),
        "counts_equal_across_reps": same,
        "bcast_bytes_rank1": others[0]["bytes"].get("MPI_Ibcast", 0) +
        others[0]["bytes"].get("MPI_Bcast", 0) if others else 0,
        "received_bytes_rank1": received(others[0]) if others else 0,
        # The primary's: in a save, the sections' summaries it gathers to write the index.
        "received_bytes_rank0": received(rank0),
        "received_bytes_max": max(received(rec) for rec in first.values()),
        "records_received_total": sum(records(rec) for rec in first.values()),
        "records_received_max": max(records(rec) for rec in first.values()),
        "received_besides_records_max": max(received(rec) - records(rec)
                                            for rec in first.values()),
        "rchar_rank0": rank0["rchar"],
        "rchar_max_other": max((rec["rchar"] for rec in others), default=0),
        # What rank 0 reads beyond what every other rank reads (its data): the metadata files.
        "primary_extra_read_bytes": rank0["rchar"] - max((rec["rchar"] for rec in others),
                                                         default=0),
        "data_bytes_per_rank": data_bytes_per_rank,
    }


def run_config(a, ranks, leaves):
    """One mpiexec: both formats at `ranks` x `leaves`; returns a list of run summaries."""
    work = os.path.join(a.scratch, f"p{ranks}-l{leaves}")
    counts = os.path.join(work, "counts")
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(counts)
    out = os.path.join(work, "records.jsonl")
    elems = ranks * a.elems_per_rank
    cmd = (["timeout", str(a.timeout), "mpiexec", "-n", str(ranks)] + a.mpiexec_flags.split() +
           ["-x", f"LD_PRELOAD={a.count_lib}", "-x", f"CAIRN_MPI_COUNT_DIR={counts}", a.driver,
            "--dir", work, "--out", out, "--cases",
            ",".join(f"cairn-scaling-{f}" for f in a.formats), "--meta-leaves", str(leaves),
            "--meta-elems", str(elems), "--reps", str(a.reps), "--no-drop-caches"])
    log(" ".join(cmd))
    subprocess.run(cmd, check=True)
    records = read_jsonl(out)
    phases = {}
    for r in range(ranks):
        for rec in read_jsonl(os.path.join(counts, f"rank-{r}.jsonl")):
            phases.setdefault(rec["phase"], {}).setdefault(r, []).append(rec)
    runs = []
    for fmt in a.formats:
        saves = [x for x in records if x["name"] == f"cairn.{fmt}.scaling_save"]
        restores = [x for x in records if x["name"] == f"cairn.{fmt}.scaling_restore"]
        data_per_rank = leaves * a.elems_per_rank * 8
        run = {"format": fmt, "ranks": ranks, "leaves": leaves,
               "bytes_per_leaf_per_rank": a.elems_per_rank * 8,
               "data_bytes": saves[0]["bytes"]}
        for key in ("files", "step_bytes", "metadata_files", "metadata_bytes", "index_files",
                    "index_bytes", "index_json_bytes", "index_binary_bytes"):
            run[key] = saves[0].get(key, 0)
        if "per_node_files" in saves[0]:  # posix: the same save with one file per node
            run["per_node_files"] = saves[0]["per_node_files"]
            run["per_node_save_seconds"] = [x["per_node_save_seconds"] for x in saves]
        run["save_seconds"] = [x["seconds"] for x in saves]
        run["restore_seconds"] = [x["seconds"] for x in restores]
        run["save_median_seconds"] = statistics.median(run["save_seconds"])
        run["restore_median_seconds"] = statistics.median(run["restore_seconds"])
        run["primary_index_json_seconds"] = statistics.median(
            x["primary_index_json_seconds"] for x in saves)
        run["primary_peak_rss_save_bytes"] = max(x["primary_peak_rss_bytes"] for x in saves)
        run["primary_peak_rss_restore_bytes"] = max(x["primary_peak_rss_bytes"] for x in restores)
        run["primary_peak_growth_save_bytes"] = max(x["primary_peak_growth_bytes"] for x in saves)
        run["primary_peak_growth_restore_bytes"] = max(
            x["primary_peak_growth_bytes"] for x in restores)
        run["save"] = phase_summary(phases[f"{fmt}.save"], ranks, data_per_rank)
        run["restore"] = phase_summary(phases[f"{fmt}.restore"], ranks, data_per_rank)
        runs.append(run)
    shutil.rmtree(work, ignore_errors=True)
    return runs


def fit(runs, value):
    """Least-squares a*P*L + b*P + c*L + d over `runs` of `value(run)`; returns coefficients."""
    x = np.array([[r["ranks"] * r["leaves"], r["ranks"], r["leaves"], 1.0] for r in runs])
    y = np.array([float(value(r)) for r in runs])
    coef, *_ = np.linalg.lstsq(x, y, rcond=None)
    residual = float(np.max(np.abs(x @ coef - y))) if len(y) else 0.0
    return {"per_rank_leaf": float(coef[0]), "per_rank": float(coef[1]),
            "per_leaf": float(coef[2]), "constant": float(coef[3]), "max_residual": residual}


def predict(c, ranks, leaves):
    return (c["per_rank_leaf"] * ranks * leaves + c["per_rank"] * ranks +
            c["per_leaf"] * leaves + c["constant"])


# Bytes of a page of a section of cairn-tree.bin (kSectionPageBytes): a longer section has a
# checksum per page, and the ranks of a restore check its pages apart.
SECTION_PAGE_BYTES = 16384


def check_units(binary_bytes, leaves):
    """The units a restore checks, each on one rank, and their size: L sections of equal size,
    each one unit or, when longer than a page, one unit per page."""
    section = binary_bytes / leaves
    pages = max(1, math.ceil(section / SECTION_PAGE_BYTES)) if section > SECTION_PAGE_BYTES else 1
    return leaves * pages, section / pages


def model(runs, a):
    """Fits per format and the predictions at --model-ranks x --model-leaves."""
    out = {}
    quantities = {
        "index_bytes": lambda r: r["index_bytes"],
        "index_json_bytes": lambda r: r.get("index_json_bytes", r["index_bytes"]),
        "index_binary_bytes": lambda r: r.get("index_binary_bytes", 0),
        "metadata_bytes": lambda r: r["metadata_bytes"],
        "files": lambda r: r["files"],
        "save_bytes_received_by_one_rank": lambda r: r["save"]["received_bytes_rank1"],
        "restore_bytes_received_by_one_rank": lambda r: r["restore"]["received_bytes_rank1"],
        "save_bytes_received_by_primary": lambda r: r["save"]["received_bytes_rank0"],
        "save_records_received_total": lambda r: r["save"].get("records_received_total", 0),
        "save_received_besides_records_max": lambda r: r["save"].get(
            "received_besides_records_max", r["save"]["received_bytes_max"]),
        "primary_metadata_read_save": lambda r: r["save"]["primary_extra_read_bytes"],
        "primary_metadata_read_restore": lambda r: r["restore"]["primary_extra_read_bytes"],
        "save_collective_ops": lambda r: r["save"]["collective_ops"],
        "restore_collective_ops": lambda r: r["restore"]["collective_ops"],
        "save_primary_messages": lambda r: r["save"]["primary_messages"],
        "restore_primary_messages": lambda r: r["restore"]["primary_messages"],
    }
    for fmt in a.formats:
        mine = [r for r in runs if r["format"] == fmt]
        fits = {k: fit(mine, f) for k, f in quantities.items()}
        big = [r for r in mine if r["leaves"] == max(x["leaves"] for x in mine)]
        # The primary's JSON work (read + parse + serialize the index), seconds per index byte:
        # a lower bound of its metadata time (it also gathers the records and builds them).
        json_rate = statistics.median(r["primary_index_json_seconds"] / r["index_bytes"]
                                      for r in big)
        # Growth of rank 0's peak memory over a save, per index byte (largest runs).
        memory_rate = statistics.median(r["primary_peak_growth_save_bytes"] / r["index_bytes"]
                                        for r in big)
        # Save time against index bytes, with a per-rank term (oversubscription) and a constant:
        # an upper estimate of the primary's metadata time per index byte.
        x = np.array([[r["index_bytes"], r["ranks"], 1.0] for r in mine])
        y = np.array([r["save_median_seconds"] for r in mine])
        time_rate = float(np.linalg.lstsq(x, y, rcond=None)[0][0])
        predictions = []
        for ranks in a.model_ranks:
            p = {"ranks": ranks, "leaves": a.model_leaves}
            for k, c in fits.items():
                p[k] = predict(c, ranks, a.model_leaves)
            p["primary_index_json_seconds"] = json_rate * p["index_bytes"]
            p["save_seconds_from_index_fit"] = (time_rate * p["index_bytes"]
                                                if time_rate > 0 else None)
            p["primary_peak_growth_bytes"] = memory_rate * p["index_bytes"]
            p["nodes"] = -(-ranks // a.ranks_per_node)
            aggregated = [r["per_node_files"] for r in mine if "per_node_files" in r]
            if aggregated:
                # posix_aggregation per node, measured on one node: one shard file per node
                # and the same metadata files at every P.
                p["files_per_node_aggregation"] = p["nodes"] + max(aggregated) - 1
            # A restoring rank receives cairn-tree.json, reads its part of cairn-tree.bin (its
            # 1/P of the shard records and checksums, the leaves being split over all) and
            # checks its share of the units: a section of one page, or a page of a longer one.
            leaves = a.model_leaves
            units, unit_bytes = check_units(p["index_binary_bytes"], leaves)
            p["index_checked_by_one_rank"] = -(-units // ranks) * unit_bytes
            p["index_read_by_one_rank"] = (
                p["index_json_bytes"] + p["index_binary_bytes"] / ranks +
                p["index_checked_by_one_rank"])
            p["read_by_one_rank"] = max(
                p["primary_metadata_read_save"], p["primary_metadata_read_restore"],
                p["index_read_by_one_rank"])
            # In a save, a rank receives the records of the ceil(L/P) leaves whose sections it
            # owns, besides what every rank receives (layouts, file names, section lengths;
            # the primary: the sections' summaries).
            p["save_received_by_owner"] = (
                p["save_received_besides_records_max"] +
                -(-leaves // ranks) * p["save_records_received_total"] / leaves)
            p["received_by_one_rank"] = max(
                p["save_received_by_owner"], p["restore_bytes_received_by_one_rank"],
                p["save_bytes_received_by_primary"])
            predictions.append(p)
        out[fmt] = {"fits": fits, "primary_json_seconds_per_index_byte": json_rate,
                    "save_seconds_per_index_byte": time_rate,
                    "primary_peak_growth_per_index_byte": memory_rate,
                    "predictions": predictions}
    return out


def leaf_independence(runs, a):
    """Item: are the collective calls per save and per restore equal at every leaf count?"""
    out = {}
    for fmt in a.formats:
        for phase in ("save", "restore"):
            for ranks in a.ranks:
                mine = [r for r in runs if r["format"] == fmt and r["ranks"] == ranks]
                ops = {str(r["leaves"]): r[phase]["collective_ops"] for r in mine}
                calls = {str(r["leaves"]): r[phase]["calls_rank0"] for r in mine}
                out[f"{fmt}.{phase}.p{ranks}"] = {
                    "collective_ops": ops, "calls_rank0": calls,
                    "equal": len(set(ops.values())) == 1 and
                    all(c == next(iter(calls.values())) for c in calls.values())}
    return out


def main():
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--driver", required=True, help="cairn_bench")
    p.add_argument("--count-lib", required=True, help="libcairn_mpi_count.so")
    p.add_argument("--scratch", required=True)
    p.add_argument("--results-dir", required=True)
    p.add_argument("--report", required=True, help="BENCHMARKS.md whose Scaling section to write")
    p.add_argument("--ranks", default="4,16,64")
    p.add_argument("--leaves", default="10,1000")
    p.add_argument("--formats", default=",".join(FORMATS))
    p.add_argument("--elems-per-rank", type=int, default=256, help="float64 per leaf per rank")
    p.add_argument("--reps", type=int, default=3)
    p.add_argument("--timeout", type=int, default=1800, help="seconds per mpiexec")
    p.add_argument("--model-ranks", default="1024,10000")
    p.add_argument("--model-leaves", type=int, default=1000)
    p.add_argument("--ranks-per-node", type=int, default=64, help="for the files target")
    p.add_argument("--mpiexec-flags", default="--oversubscribe")
    p.add_argument("--cairn-version", default="unknown")
    p.add_argument("--command", default="")
    p.add_argument("--name", default="")
    p.add_argument("--check", action="store_true",
                   help="exit 1 unless collective calls were counted and their number per save "
                        "and per restore is the same at every leaf count")
    a = p.parse_args()
    for attr in ("driver", "count_lib", "scratch", "results_dir", "report"):
        setattr(a, attr, os.path.abspath(getattr(a, attr)))
    a.ranks = [int(x) for x in a.ranks.split(",")]
    a.leaves = [int(x) for x in a.leaves.split(",")]
    a.formats = a.formats.split(",")
    a.model_ranks = [int(x) for x in a.model_ranks.split(",")]
    stamp = datetime.datetime.now(datetime.timezone.utc)
    name = a.name or stamp.strftime("%Y-%m-%d-%H%M")
    os.makedirs(a.results_dir, exist_ok=True)
    os.makedirs(a.scratch, exist_ok=True)

    runs = []
    for ranks in a.ranks:
        for leaves in a.leaves:
            runs += run_config(a, ranks, leaves)
    doc = {
        "schema": SCHEMA,
        "date": stamp.isoformat(timespec="seconds"),
        "command": a.command,
        "machine": {"host": platform.node(), "cores": os.cpu_count(),
                    "kernel": platform.release()},
        "cairn_version": a.cairn_version,
        "config": {"ranks": a.ranks, "leaves": a.leaves, "formats": a.formats,
                   "bytes_per_leaf_per_rank": a.elems_per_rank * 8, "dtype": "float64",
                   "decomposition": "each 1-D leaf split in P contiguous ranges",
                   "repetitions": a.reps, "page_cache": "not dropped",
                   "oversubscribed_above": os.cpu_count(),
                   "model_ranks": a.model_ranks, "model_leaves": a.model_leaves,
                   "ranks_per_node": a.ranks_per_node},
        "runs": runs,
    }
    doc["leaf_independence"] = leaf_independence(runs, a)
    doc["model"] = model(runs, a)
    doc["targets"] = scaling_report.targets(doc)
    path = os.path.join(a.results_dir, f"scaling-{name}.json")
    with open(path, "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")
    log(f"results: {path}")
    plot = scaling_report.plot(doc, a.results_dir, f"scaling-{name}")
    scaling_report.update_markdown(doc, a.report, path, plot)
    log(f"report: {a.report}")
    for t in doc["targets"]:
        log(f"{t['format']}: {t['target']}: {'met' if t['met'] else 'missed'} ({t['detail']})")
    if a.check:
        problems = [f"{r['format']} {phase} at {r['ranks']} ranks: no collective call counted"
                    for r in runs for phase in ("save", "restore")
                    if r[phase]["collectives_rank0"] == 0]
        problems += [f"{key}: collective calls differ between leaf counts: {v['calls_rank0']}, "
                     f"collective operations {v['collective_ops']}"
                     for key, v in doc["leaf_independence"].items() if not v["equal"]]
        for problem in problems:
            log(f"check failed: {problem}")
        if problems:
            sys.exit(1)
        log("check: collective calls counted, the same at every leaf count")


if __name__ == "__main__":
    main()
