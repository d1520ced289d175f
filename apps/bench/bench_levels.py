"""Multi-level checkpointing in one run: what a node-local level costs and saves against the
persistent level alone, judged against the targets of the local level, and a model of the
redundancy traffic at 1,000 nodes.

cairn_bench's cairn-levels case runs every rank as a node of its own (ranks_per_node = 1, local
directories on /dev/shm, the persistent level in the scratch directory) and records, per
repetition, one measurement after the other so that each ratio pairs measurements made under
the same conditions:

    cairn.levels.persistent.save        synchronous save, manager without a local level
    cairn.levels.memcpy                 memcpy of the same bytes on every rank
    cairn.levels.local.write            pwrite of the same bytes into a new file per rank in the
                                        local directory, and fsync (the bound of a local save)
    cairn.levels.local.<r>.save         local save, redundancy r in none, partner, xor, nothing
                                        drained; "copy_bytes": cairn-level/*.copy of every node
    cairn.levels.restore.local          restore of the partner save from the local level, every
                                        node intact (the bound of the restore after a loss)
    cairn.levels.restore.rebuild        restore of the partner save after the last node lost
                                        its local directory (rebuilt from its partner's copy)
    cairn.levels.restore.persistent     the same step from the persistent level
    cairn.levels.drain.during           partner save while the drain of the save before it is
                                        in flight ("drain_in_flight_before", "..._after")
    cairn.levels.drain.without          the same save, nothing drained

or "cairn.levels.unavailable" on one rank. A ratio is computed per repetition, repetition i of
the numerator over repetition i of the denominator, and kept with its min, median and max; a
target is judged on the median, as bench_targets.py's are.

    python3 bench_levels.py RESULTS.jsonl --report BENCHMARKS.md --ranks 4 --command CMD

writes the section from the JSON lines of a run of the case alone (cairn_bench --cases
cairn-levels).
"""
import argparse
import datetime
import json
import os
import statistics

from bench_markdown import fmt_number as _fmt, paired_ratios, replace_section, spread_text

PREFIX = "cairn.levels."
REDUNDANCIES = ("none", "partner", "xor")
# (record, what it measures), in the order of the table of times.
MEASUREMENTS = (("persistent.save", "persistent level: synchronous save"),
                ("memcpy", "memcpy of the same bytes on every rank"),
                ("local.write", "pwrite of the same bytes into new files in the local "
                                "directory"),
                ("local.none.save", "local save, no redundancy"),
                ("local.xor.save", "local save, XOR parity"),
                ("local.partner.save", "local save, partner copy"),
                ("restore.local", "restore of the same step from the local level, every node "
                                  "intact"),
                ("restore.rebuild", "restore after losing the last node's local files "
                                    "(rebuilt from its partner's copy)"),
                ("restore.persistent", "restore of the same step from the persistent level"),
                ("drain.without", "partner save, no drain"),
                ("drain.during", "partner save while a drain is in flight"))
# A bytes ratio "= 1.0" is met within this relative distance (headers of the copies).
EQUAL_WITHIN = 0.01
# Significant digits of the bytes ratios, which differ from 1/1 and 1/3 by their headers only.
BYTES_DIGITS = 5
# The targets: (id, description, numerator, denominator, op, bound). A numerator or
# denominator is a record (its seconds) or ("copy_bytes", record): its redundancy bytes over
# the data bytes.
TARGETS = (
    ("local_vs_persistent", "local save (no redundancy) ÷ persistent synchronous save",
     "local.none.save", "persistent.save", "<=", 0.25),
    ("local_vs_memcpy", "local save (no redundancy) ÷ memcpy of the same bytes",
     "local.none.save", "memcpy", "<=", 2.0),
    ("partner_vs_none", "local save with partner copy ÷ without redundancy",
     "local.partner.save", "local.none.save", "<=", 2.0),
    ("partner_bytes", "partner: redundancy bytes stored ÷ data bytes",
     ("copy_bytes", "local.partner.save"), None, "=", 1.0),
    ("xor_bytes", "xor(group=4): redundancy bytes stored ÷ data bytes",
     ("copy_bytes", "local.xor.save"), None, "<=", 0.34),
    ("rebuild_vs_persistent_restore",
     "rebuild of one lost node + restore ÷ restore from the persistent level",
     "restore.rebuild", "restore.persistent", "<=", 0.5),
    ("save_during_drain", "partner save during a drain ÷ without a drain",
     "drain.during", "drain.without", "<=", 1.2),
)
# Reported next to the targets, not judged.
REPORTED = (("local_vs_write",
             "local save (no redundancy) ÷ pwrite of the same bytes to the local directory "
             "(its bound)", "local.none.save", "local.write"),
            ("write_vs_memcpy",
             "pwrite to the local directory ÷ memcpy (what a tmpfs write costs over a copy)",
             "local.write", "memcpy"),
            ("local_restore_vs_persistent",
             "restore from the local level, no loss ÷ from the persistent level (the bound of "
             "the rebuild target)", "restore.local", "restore.persistent"),
            ("rebuild_vs_local_restore",
             "rebuild of one lost node + restore ÷ restore from the local level, no loss",
             "restore.rebuild", "restore.local"),
            ("xor_vs_none", "local save with XOR parity ÷ without redundancy",
             "local.xor.save", "local.none.save"),
            ("partner_vs_persistent", "local save with partner copy ÷ persistent synchronous save",
             "local.partner.save", "persistent.save"))
# The model: nodes, and the XOR group sizes it shows.
MODEL_NODES = 1000
MODEL_GROUPS = (4, 8, 16)

BEGIN = "<!-- bench:levels:begin (generated by scripts/bench.sh; edits here are lost) -->"
END = "<!-- bench:levels:end -->"


def _values(res, ref, data_bytes):
    """Per-repetition values of `ref`: a record's seconds, or ("copy_bytes", record): its
    redundancy bytes over `data_bytes`. None when not measured."""
    if isinstance(ref, tuple):
        r = res.get(PREFIX + ref[1])
        if not r or "copy_bytes_reps" not in r or not data_bytes:
            return None
        return [b / data_bytes for b in r["copy_bytes_reps"]]
    r = res.get(PREFIX + ref)
    return list(r["seconds"]) if r else None


def _meets(value, op, bound):
    if op == "=":
        return abs(value - bound) <= EQUAL_WITHIN * bound
    return value <= bound


def _ratio(tid, text, num, den, op=None, bound=None):
    """{id, description, op, target, ratios, ratio_min, ratio_median, ratio_max, ratio, met,
    met_reps, status} of num / den per repetition (den None: num itself)."""
    out = {"id": tid, "description": text, "op": op, "target": bound, "ratios": [],
           "ratio_min": None, "ratio_median": None, "ratio_max": None, "ratio": None,
           "met": None, "met_reps": None, "status": "ok"}
    if num is not None and den is None:
        den = [1.0] * len(num)
    ratios = paired_ratios(num, den)
    if ratios is None:
        out["status"] = "unavailable: a repetition of a measurement has no value"
        return out
    out.update(ratios)
    out["ratio"] = out["ratio_median"]
    if op is not None:
        out["met"] = _meets(out["ratio"], op, bound)
        out["met_reps"] = sum(_meets(r, op, bound) for r in out["ratios"])
    return out


def group_sizes(nodes, g):
    """The XOR group sizes of `nodes` nodes in groups of `g` (a last group of one joins the one
    before), as cairn forms them: {size: how many groups}."""
    count = max(1, nodes // g + (1 if nodes % g >= 2 else 0))
    sizes = {}
    for index in range(count):
        size = g if index < count - 1 else nodes - index * g
        sizes[size] = sizes.get(size, 0) + 1
    return sizes


def scheme_model(kind, g=None):
    """Bytes per checkpoint and per rebuild of one scheme, in multiples of one node's data D
    (every node holding D; archive headers and padding left out), for a group of `g` nodes.

    partner: a node sends its D to its partner and stores its partner's D. After a node loss
    the node holding its copy sends D, and the node whose copy it held sends D again to refill
    it: 2 D from 2 nodes.
    xor(g): a node's data is cut into g - 1 segments of D / (g - 1); each of the g parities of
    a group is a reduction of one segment from each of the g - 1 other members (g - 1
    messages of a segment, whatever the reduction tree), so a group moves g (g - 1) segments
    = g D per checkpoint: D per node; a node stores one parity, D / (g - 1). A rebuild reduces
    each of the lost node's g - 1 segments from the g - 1 survivors (the parity holding it
    and one segment of every other member): (g - 1)^2 segments = (g - 1) D, D from each
    survivor; refilling the lost node's own parity is one more reduction: D."""
    if kind == "partner":
        return {"sends": 1.0, "stores": 1.0, "rebuild": 1.0, "rebuild_senders": 1,
                "refill": 1.0, "total": 2.0}
    return {"sends": 1.0, "stores": 1.0 / (g - 1), "rebuild": float(g - 1),
            "rebuild_senders": g - 1, "refill": 1.0, "total": float(g)}


def model(nodes=MODEL_NODES, groups=MODEL_GROUPS):
    """The rows of the model table at `nodes` nodes: partner, then xor for each group size
    (with the last group of another size where `nodes` is not a multiple)."""
    rows = [dict(scheme="partner(distance=1)", groups={}, **scheme_model("partner"))]
    for g in groups:
        sizes = group_sizes(nodes, g)
        row = dict(scheme=f"xor(group={g})", groups=sizes, **scheme_model("xor", g))
        row["other"] = {m: scheme_model("xor", m) for m in sizes if m != g}
        rows.append(row)
    return rows


def evaluate(doc):
    """The case's summary: the medians of every measurement, the redundancy bytes over the data
    bytes, whether the drain was in flight, every target and reported ratio, the model, and
    the status ("ok", or "unavailable: <why>")."""
    res = doc["results"]
    out = {"status": "ok", "model": model(), "targets": [], "reported": []}
    unavailable = res.get(PREFIX + "unavailable")
    if unavailable:
        out["status"] = f"unavailable: {unavailable.get('unavailable', 'not measured')}"
        return out
    missing = [name for name, _ in MEASUREMENTS if PREFIX + name not in res]
    if missing:
        out["status"] = f"unavailable: no measurement of {', '.join(PREFIX + m for m in missing)}"
        return out
    first = res[PREFIX + "persistent.save"]
    data_bytes = first.get("data_bytes")
    xor = res[PREFIX + "local.xor.save"]
    out.update(data_bytes=data_bytes, nodes=first.get("nodes"),
               ranks_per_node=first.get("ranks_per_node"), xor_group=xor.get("xor_group"),
               redundancy={r: res[PREFIX + f"local.{r}.save"].get("redundancy")
                           for r in REDUNDANCIES},
               page_cache=res[PREFIX + "restore.persistent"].get("page_cache"),
               lost_node=res[PREFIX + "restore.rebuild"].get("lost_node"),
               seconds={name: res[PREFIX + name]["median_seconds"] for name, _ in MEASUREMENTS},
               copy_bytes={r: _ratio(f"{r}_bytes", "", _values(
                   res, ("copy_bytes", f"local.{r}.save"), data_bytes), None)
                           for r in REDUNDANCIES})
    during = res[PREFIX + "drain.during"]
    out["drain_in_flight"] = {
        key: sum(bool(x) for x in during.get(f"drain_in_flight_{key}_reps", []))
        for key in ("before", "after")}
    out["repetitions"] = during.get("repetitions")
    for tid, text, num, den, op, bound in TARGETS:
        t = _ratio(tid, text, _values(res, num, data_bytes),
                   None if den is None else _values(res, den, data_bytes), op, bound)
        if tid == "xor_bytes" and t["status"] == "ok" and out["xor_group"] != 4:
            t.update(met=None, met_reps=None,
                     not_judged=f"the XOR group has {out['xor_group']} nodes (the target is "
                                "for 4)")
        out["targets"].append(t)
        if t["status"] != "ok" and out["status"] == "ok":
            out["status"] = t["status"]
    for tid, text, num, den in REPORTED:
        out["reported"].append(_ratio(tid, text, _values(res, num, data_bytes),
                                      _values(res, den, data_bytes)))
    return out


def _mib(b):
    return f"{b / 2**20:.4g} MiB"


def _op_text(op, bound):
    return f"= {bound:g} (within {EQUAL_WITHIN:.0%})" if op == "=" else f"≤ {bound:g}"


def _verdict(t):
    if t["status"] != "ok":
        return t["status"]
    if t["met"] is None:
        return f"not judged: {t['not_judged']}"
    word = "met" if t["met"] else "not met"
    return f"{word} ({t['met_reps']} of {len(t['ratios'])} repetitions)"


def _model_lines(rows):
    lines = ["", f"Model at {MODEL_NODES:,} nodes (computed, not measured): bytes per checkpoint "
             "and per rebuild in multiples of one node's data D, every node holding D (archive "
             "headers and the padding of XOR segments to the group's largest archive left "
             "out). Partner: a node sends D to its partner and stores its partner's D; after a "
             "node loss the node holding its copy sends D, and the node whose copy it held "
             "sends D again to refill it. XOR(g): a node's data is cut into g − 1 segments of "
             "D/(g − 1); each of a group's g parities is a reduction of one segment from each "
             "of the g − 1 other members, so a group moves g(g − 1) segments = g·D per "
             "checkpoint (D per node), and a node stores one parity, D/(g − 1). A rebuild "
             "reduces each of the lost node's g − 1 segments from the g − 1 survivors (the "
             "parity that holds it and one segment of every other member): (g − 1)² segments "
             "= (g − 1)·D, D from each survivor; refilling the lost node's own parity is one "
             "more reduction, D.", "",
             "| scheme | groups | sends per node | stores per node | rebuild: bytes moved | "
             "rebuild: nodes sending D each | refill of its redundancy | rebuild in all |",
             "|---|---|---|---|---|---|---|---|"]
    for row in rows:
        groups = ", ".join(f"{n} of {m}" for m, n in sorted(row["groups"].items(),
                                                            key=lambda kv: -kv[0])) or "—"
        cells = [row["scheme"], groups]
        for key, unit in (("sends", "D"), ("stores", "D"), ("rebuild", "D"),
                          ("rebuild_senders", ""), ("refill", "D"), ("total", "D")):
            text = f"{_fmt(row[key])}{' ' + unit if unit else ''}"
            for m, other in sorted(row.get("other", {}).items()):
                if other[key] != row[key]:
                    text += f" ({_fmt(other[key])}{' ' + unit if unit else ''} in the group of {m})"
            cells.append(text)
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def _section(doc):
    cfg, lv = doc["config"], doc["levels"]
    quick = " (quick mode: small sizes, not for conclusions)" if doc["quick"] else ""
    lines = [BEGIN, ""]
    if lv["status"] != "ok" and "seconds" not in lv:
        lines += [f"Run of {doc['date']}{quick}: {lv['status']}."]
        lines += _model_lines(lv["model"]) + ["", END]
        return "\n".join(lines)
    over = ", oversubscribed" if cfg["oversubscribed"] else ""
    reps = lv["repetitions"]
    lines += [f"Run of {doc['date']}{quick}, `{doc['command']}`: the main tree, "
              f"{_mib(lv['data_bytes'])} of float64 in 2-D blocks, on {cfg['ranks']} ranks "
              f"({cfg['cores']} cores{over}), each rank a node of its own (`ranks_per_node = "
              f"{lv['ranks_per_node']}`) with its local directory on /dev/shm (tmpfs); the "
              "persistent level is the scratch directory, saves in the posix format. Each "
              "repetition runs every measurement once, in the order of the table, so that each "
              "ratio pairs measurements of one repetition. Local saves drain nothing "
              "(`persistent_every = 0`) except the drain case, where the save before the one "
              "measured is drained (`persistent_every = 2`). The restore after a loss removes "
              f"node {lv['lost_node']}'s local directory after the partner save (drained to the "
              "persistent level first) and opens a new manager, which rebuilds the node from "
              "its partner's copy; the persistent restore reads that drained step through a "
              "manager without a local level. Restores follow a drop of the page cache "
              f"({lv['page_cache']}) and are checked exactly. Times: the slowest rank's, "
              f"medians over the {reps} repetitions.", "",
              "| measurement | median time |", "|---|---|"]
    for name, label in MEASUREMENTS:
        if name.startswith("local.") and name.endswith(".save"):
            label += f" (`{lv['redundancy'][name.split('.')[1]]}`)"
        lines.append(f"| {label} | {_fmt(lv['seconds'][name])} s |")
    copies = "; ".join(f"{lv['redundancy'][r]} {spread_text(lv['copy_bytes'][r], BYTES_DIGITS)}"
                       for r in REDUNDANCIES)
    lines += ["", "Redundancy bytes stored (`cairn-level/*.copy` of every node ÷ data bytes, min "
              f"/ median / max): {copies}. The drain of the previous save was in flight when "
              f"the measured save began in {lv['drain_in_flight']['before']} of {reps} "
              f"repetitions, and still when it returned in {lv['drain_in_flight']['after']} "
              f"of {reps} (`is_saving_in_progress()` on any rank).", "",
              "Each ratio is computed per repetition and given as min / median / max; a target "
              "is judged on the median.", "",
              "| ratio | min / median / max | target | judged |", "|---|---|---|---|"]
    for t in lv["targets"]:
        digits = BYTES_DIGITS if t["id"].endswith("_bytes") else 3
        lines.append(f"| {t['description']} | {spread_text(t, digits)} | "
                     f"{_op_text(t['op'], t['target'])} | {_verdict(t)} |")
    for t in lv["reported"]:
        lines.append(f"| {t['description']} | {spread_text(t)} | — | reported |")
    lines += _model_lines(lv["model"]) + ["", END]
    return "\n".join(lines)


def update_markdown(doc, report):
    """Replaces the levels section of `report` (appending one when it has none)."""
    replace_section(report, BEGIN, END, _section(doc),
                    heading="## Multi-level checkpointing\n\n")


def summary_lines(doc):
    """One line for the log of the run."""
    lv = doc["levels"]
    if lv["status"] != "ok" and "seconds" not in lv:
        return [f"levels: {lv['status']}"]
    parts = []
    for t in lv["targets"]:
        verdict = t["status"] if t["status"] != "ok" else (
            "not judged" if t["met"] is None else "met" if t["met"] else "NOT met")
        digits = BYTES_DIGITS if t["id"].endswith("_bytes") else 3
        parts.append(f"{t['id']} {spread_text(t, digits)} ({_op_text(t['op'], t['target'])}: "
                     f"{verdict})")
    return ["levels: " + "; ".join(parts)]


def main():
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("jsonl", help="cairn_bench's --out of a run of cairn-levels")
    p.add_argument("--report", required=True, help="BENCHMARKS.md to update")
    p.add_argument("--ranks", type=int, required=True, help="the ranks of the run")
    p.add_argument("--command", required=True, help="the command line, for the report")
    a = p.parse_args()
    # Here, not at the top: run_bench imports this module.
    from run_bench import aggregate
    with open(a.jsonl) as f:
        records = [json.loads(line) for line in f if line.strip()]
    results = aggregate(records)
    stamp = datetime.datetime.fromtimestamp(os.path.getmtime(a.jsonl), datetime.timezone.utc)
    cores = os.cpu_count() or 1
    doc = {"date": stamp.isoformat(timespec="seconds"), "quick": False, "command": a.command,
           "config": {"ranks": a.ranks, "cores": cores, "oversubscribed": a.ranks > cores},
           "results": results}
    doc["levels"] = evaluate(doc)
    update_markdown(doc, a.report)
    for line in summary_lines(doc):
        print(line)


if __name__ == "__main__":
    main()
