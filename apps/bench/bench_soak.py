"""The soak run (scripts/bench.sh --soak, and part of the full run): thousands of async saves
with retention on a small tree (cairn_bench --cases soak), and the verdict on its samples:
resident memory, open file descriptors and files on disk must stay flat. Growth is a defect:
check_results.py fails on it. Shared by run_bench.py, bench_report.py and check_results.py.
"""
import statistics

# Resident memory may move by allocator noise, not by this much, between the first and the
# last quarter of the steady samples.
RSS_LIMIT_BYTES = 1 << 20
# The heap in use (malloc's count) must not grow by more than this: a leak of a few dozen
# bytes per save shows here long before it shows in the resident memory.
HEAP_LIMIT_BYTES = 256 << 10
# Address space may grow by a few malloc arenas (64 MiB each) as threads come and go, not by
# more: a thread that is never joined keeps its stack mapped.
VM_LIMIT_BYTES = 256 << 20
# The bytes on disk may vary with the step number's digits and the timings in the metadata.
DISK_LIMIT_FRACTION = 0.10

SAMPLE_FIELDS = ["saves", "seconds", "rss_bytes", "heap_bytes", "vm_bytes", "fds", "files", "disk_bytes", "steps_kept"]
VERDICT_FIELDS = ["warm_up_saves", "steady_samples", "rss_first_bytes", "rss_last_bytes",
                  "rss_growth_bytes", "rss_growth_per_1000_saves_bytes", "heap_first_bytes",
                  "heap_last_bytes", "heap_growth_bytes", "vm_first_bytes", "vm_last_bytes",
                  "fds_first", "fds_last",
                  "fds_max", "files_first", "files_last", "files_max", "disk_first_bytes",
                  "disk_last_bytes", "saves_per_second", "defects", "flat"]


def samples_of(records):
    """The soak samples of cairn_bench's records, in order."""
    out = []
    for r in sorted((r for r in records if r["name"] == "cairn.soak.sample"),
                    key=lambda r: r["saves"]):
        out.append({k: r[k] for k in SAMPLE_FIELDS})
    return out


def verdict(samples, saves, keep):
    """What the samples say: first and last figures of the steady part (after the warm-up:
    the first `keep` saves fill the retention window, and the first tenth of the run lets the
    allocator and the staging area reach their size), growth, and the defects found."""
    warm = max(2 * keep, saves // 10)
    steady = [s for s in samples if s["saves"] >= warm]
    if len(steady) < 4:
        raise ValueError(f"{len(steady)} samples after the warm-up of {warm} saves: need 4")
    quarter = max(1, len(steady) // 4)
    rss_first = statistics.median(s["rss_bytes"] for s in steady[:quarter])
    rss_last = statistics.median(s["rss_bytes"] for s in steady[-quarter:])
    heap_first = statistics.median(s["heap_bytes"] for s in steady[:quarter])
    heap_last = statistics.median(s["heap_bytes"] for s in steady[-quarter:])
    first, last = steady[0], steady[-1]
    span = max(1, last["saves"] - first["saves"])
    v = {"warm_up_saves": warm, "steady_samples": len(steady),
         "rss_first_bytes": int(rss_first), "rss_last_bytes": int(rss_last),
         "rss_growth_bytes": int(rss_last - rss_first),
         "rss_growth_per_1000_saves_bytes": int((last["rss_bytes"] - first["rss_bytes"]) *
                                                1000 / span),
         "heap_first_bytes": int(heap_first), "heap_last_bytes": int(heap_last),
         "heap_growth_bytes": int(heap_last - heap_first),
         "vm_first_bytes": first["vm_bytes"], "vm_last_bytes": last["vm_bytes"],
         "fds_first": first["fds"], "fds_last": last["fds"],
         "fds_max": max(s["fds"] for s in steady),
         "files_first": first["files"], "files_last": last["files"],
         "files_max": max(s["files"] for s in steady),
         "disk_first_bytes": first["disk_bytes"], "disk_last_bytes": last["disk_bytes"],
         "saves_per_second": samples[-1]["saves"] / samples[-1]["seconds"]
         if samples[-1]["seconds"] > 0 else None}
    defects = []
    if v["rss_growth_bytes"] > RSS_LIMIT_BYTES:
        defects.append(f"resident memory grew by {v['rss_growth_bytes'] / 2**20:.2f} MiB "
                       f"(limit {RSS_LIMIT_BYTES / 2**20:.0f} MiB) between the first and the "
                       "last quarter of the steady samples")
    if v["heap_growth_bytes"] > HEAP_LIMIT_BYTES:
        defects.append(f"the heap in use grew by {v['heap_growth_bytes'] / 1024:.0f} KiB "
                       f"(limit {HEAP_LIMIT_BYTES >> 10} KiB) between the first and the last "
                       "quarter of the steady samples")
    if v["vm_last_bytes"] - v["vm_first_bytes"] > VM_LIMIT_BYTES:
        defects.append(f"the address space grew by "
                       f"{(v['vm_last_bytes'] - v['vm_first_bytes']) / 2**20:.0f} MiB (limit "
                       f"{VM_LIMIT_BYTES >> 20} MiB): threads or mappings are not released")
    if v["fds_max"] > v["fds_first"]:
        defects.append(f"open file descriptors grew from {v['fds_first']} to {v['fds_max']}")
    if v["files_max"] > v["files_first"]:
        defects.append(f"files under the root grew from {v['files_first']} to {v['files_max']}")
    if v["disk_last_bytes"] > v["disk_first_bytes"] * (1 + DISK_LIMIT_FRACTION):
        defects.append(f"bytes under the root grew from {v['disk_first_bytes']} to "
                       f"{v['disk_last_bytes']}")
    kept = {s["steps_kept"] for s in steady}
    if kept != {keep}:
        defects.append(f"retention kept {sorted(kept)} steps, not {keep}")
    v["defects"] = defects
    v["flat"] = not defects
    return v
