#!/usr/bin/env python3
"""Plots and a markdown report from manyalloc_heap_peers_bench JSON Lines.

Usage: report.py PEERS.jsonl [--out DIR] [--env environment.txt]
                 [--commit SHA] [--command "exact command"]

Writes REPORT.md and PNG plots (throughput_alloc.png, throughput_free.png,
throughput_cold.png, churn.png, large.png, usable.png) into --out (default:
a folder next to the JSONL named <stem>_report). The report gives device,
commit, date and command; per experiment a side-by-side table with each of our
allocators against the best peer (ratio > 1: ours is faster / hands out more);
and a plain list of every row where our best allocator loses to the best peer.
Without matplotlib (python3-matplotlib) it writes the report without plots.
"""
import argparse
import gzip
import json
import math
import os
import sys
from collections import OrderedDict, defaultdict

try:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # noqa: E402
except ImportError:  # the report still has every table
    plt = None


# (key, title, record experiment, launch filter, what the value is)
SECTIONS = [
    ("throughput_alloc_warm", "Throughput: alloc, warm (median of the launches after the first), allocs/s",
     "throughput_alloc", "warm", "rate"),
    ("throughput_alloc_cold", "Throughput: alloc, cold (first launch on a fresh heap), allocs/s",
     "throughput_alloc", "cold", "rate"),
    ("throughput_free_warm", "Throughput: free, warm, frees/s", "throughput_free", "warm", "rate"),
    ("throughput_free_cold", "Throughput: free, cold, frees/s", "throughput_free", "cold", "rate"),
    ("churn", "Churn: alloc/write/free pairs per second in one kernel (16 B - 1 KiB), first and last repetition",
     "churn", None, "rate"),
    ("large_alloc", "Large: allocs/s (warm; cold where no warm launch ran); one thread: seconds", "large_alloc",
     None, "rate"),
    ("large_free", "Large: frees/s (warm; cold where no warm launch ran)", "large_free", None, "rate"),
    ("usable", "Usable share: bytes handed out / pool bytes until the first failure (2 GiB pool)", "usable", None,
     "share"),
]


# How the timed launches were timed (the meta record's launch_timing; records
# made before the option existed were timed idle).
TIMING = {
    "gated": "gated (each timed launch queued behind a gate kernel: no part of the host's submission lies "
             "between the events)",
    "idle": "idle (the first event recorded on an idle GPU: the host's submission of the launch, a few "
            "microseconds, is inside every time)",
}


def launch_timing(meta):
    """The one launch timing of the meta records (records made before the
    option existed were timed idle); exits when they mix both."""
    timings = {m.get("launch_timing", "idle") for m in meta}
    if len(timings) > 1:
        sys.exit("records of both launch timings (%s): tabulate them apart" % ", ".join(sorted(timings)))
    return timings.pop() if timings else "idle"


def load(paths):
    rows, meta = [], []
    for path in paths:
        with (gzip.open(path, "rt") if str(path).endswith(".gz") else open(path)) as f:
            for line in f:
                line = line.strip()
                if not line.startswith("{"):
                    continue
                r = json.loads(line)
                if r.get("suite") != "heap":
                    continue
                (meta if r.get("experiment") == "meta" else rows).append(r)
    return rows, meta


def fmt_rate(v):
    for div, suf in ((1e9, " G"), (1e6, " M"), (1e3, " K")):
        if v >= div:
            return f"{v / div:.3g}{suf}"
    return f"{v:.3g}"


def fmt_seconds(s):
    if s >= 1:
        return f"{s:.3g} s"
    if s >= 1e-3:
        return f"{s * 1e3:.3g} ms"
    return f"{s * 1e6:.3g} us"


def size_key(r):
    s = r.get("size", "")
    return (1 << 40) if not s.isdigit() else int(s)


def row_label(r, kind):
    if kind == "share":
        return r.get("size", "?")
    return f"{r['threads']} x {r.get('size', r['bytes'])}"


def allocator_order(rows):
    """Ours first (in the order they appear), then the peers."""
    seen = OrderedDict()
    for r in rows:
        if r.get("allocator"):
            seen.setdefault(r["allocator"], bool(r.get("peer")))
    ours = [a for a, p in seen.items() if not p]
    peers = [a for a, p in seen.items() if p]
    return ours, peers


def value(r, kind):
    if kind == "share":
        return r.get("usable_share", 0.0)
    return r.get("ops_per_s", 0.0)


def usable_cell(r):
    return bool(r) and not r.get("skipped") and not r.get("crash") and r.get("verified")


def times_by_row(rows):
    """The launch times of several rounds in one file (peers-rounds): (experiment,
    launch, threads, size) -> allocator -> seconds of each record that counts
    (usable_cell, no failed request), in file order; and each row's sort key."""
    times, order = {}, {}
    for r in rows:
        if not usable_cell(r) or not r.get("seconds") or r.get("fails", 0):
            continue
        key = (r["experiment"], r.get("launch", ""), int(r.get("threads", 0)), str(r.get("size", r.get("bytes", ""))))
        times.setdefault(key, defaultdict(list))[r["allocator"]].append(r["seconds"])
        order[key] = (key[0], key[1], key[2], size_key(r))
    return times, order


def threads_text(threads):
    """2^k for a power of two, else the number."""
    return f"2^{threads.bit_length() - 1}" if threads and threads & (threads - 1) == 0 else str(threads)


def section_rows(rows, key, exp, launch, kind):
    """OrderedDict label -> {allocator: record} for one section."""
    table = OrderedDict()
    sel = [r for r in rows if r.get("experiment") == exp]
    if key == "churn":
        for r in sel:
            if r.get("crash"):
                continue
            lab = "first" if r.get("rep", -1) == 0 else "last"
            table.setdefault(lab, {})[r["allocator"]] = r  # the last repetition written wins
        return table
    if exp.startswith("large"):
        sel.sort(key=lambda r: r.get("bytes", 0))  # 1024 x 1 MiB, 64 x 16 MiB, 1 x 1 GiB
    else:
        sel.sort(key=lambda r: (r.get("threads", 0), size_key(r)))
    for r in sel:
        if r.get("crash"):
            continue  # listed under crashes; its cells show "crash"
        lab = row_label(r, kind)
        cells = table.setdefault(lab, {})
        a = r["allocator"]
        if launch is None:
            # warm wins over cold; skipped only when nothing else
            if a not in cells or r.get("launch") == "warm" or cells[a].get("skipped"):
                cells[a] = r
        elif r.get("launch") == launch or r.get("skipped"):
            cells[a] = r
        elif launch == "warm" and r.get("launch") == "cold" and a not in cells:
            cells[a] = dict(r, _cold_only=True)  # cold above --slow-s, no warm launch ran
    return table


def cell_text(r, kind, crashed=None):
    if r is None:
        return crashed or "-"
    if r.get("skipped"):
        return "skipped"
    if r.get("crash"):
        return "crash"
    if kind == "share":
        t = f"{100 * r.get('usable_share', 0):.1f}%"
    elif r.get("threads") == 1:
        t = fmt_seconds(r.get("seconds", 0))
    else:
        t = fmt_rate(r.get("ops_per_s", 0))
    if r.get("_cold_only"):
        t += " (cold)"
    if r.get("fails", 0) > 0:
        t += f" ({r['fails']} failed)"
    if not r.get("verified"):
        t += " NOT VERIFIED"
    return t


def crashes(rows):
    return [r for r in rows if r.get("crash")]


def comparable(r, kind):
    """Cells that enter ratios: verified, measured warm where asked, and (rates) no failed request."""
    return (usable_cell(r) and not r.get("_cold_only") and value(r, kind) > 0
            and (kind == "share" or r.get("fails", 0) == 0))


def best(cells, names, kind):
    vals = [(value(cells[a], kind), a) for a in names if comparable(cells.get(a), kind)]
    return max(vals) if vals else (0.0, None)


def crashed_in(rows, exp):
    """allocator -> 'crash' / 'timeout' for the children of this experiment that failed."""
    base = exp.split("_")[0]
    out = {}
    for r in rows:
        if r.get("crash") and r.get("experiment") == base:
            out[r["allocator"]] = "timeout" if r.get("note", "").startswith("timeout") else "crash"
    return out


def markdown_section(key, title, table, ours, peers, kind, losses, crashed):
    cols = ours + peers
    L = [f"\n## {title}\n\n"]
    if not table:
        L.append("No records." + (f" Failed: {', '.join(f'{a} ({w})' for a, w in crashed.items())}." if crashed
                                   else "") + "\n")
        return L
    head = ["row"] + [f"{a} (peer)" if a in peers else a for a in cols] + [f"{a} / best peer" for a in ours]
    L.append("| " + " | ".join(head) + " |\n")
    L.append("|" + "---|" * len(head) + "\n")
    for lab, cells in table.items():
        bp, bp_name = best(cells, peers, kind)
        bo, bo_name = best(cells, ours, kind)
        line = [lab] + [cell_text(cells.get(a), kind, crashed.get(a)) for a in cols]
        for a in ours:
            r = cells.get(a)
            line.append(f"{value(r, kind) / bp:.2f}x" if bp > 0 and comparable(r, kind) else "-")
        L.append("| " + " | ".join(line) + " |\n")
        if bp > 0 and bo < bp:
            what = (f"{100 * bp:.1f}% vs {100 * bo:.1f}%" if kind == "share" else
                    f"{fmt_rate(bp)}/s vs {fmt_rate(bo)}/s" if bo > 0 else f"{fmt_rate(bp)}/s vs nothing verified")
            ratio = f" ({bo / bp:.2f}x)" if bo > 0 else ""
            losses.append(f"{key.replace('_', ' ')}, {lab}: best peer {bp_name} beats our best "
                          f"{bo_name or '(none)'}: {what}{ratio}")
    return L


def plot_section(out, fname, title, table, cols, kind, log=True):
    if plt is None or not table:
        return None
    labels = list(table.keys())
    n = len(cols)
    width = 0.8 / max(n, 1)
    fig, ax = plt.subplots(figsize=(max(8, 0.9 * len(labels) + 3), 4.5))
    for i, a in enumerate(cols):
        ys = []
        for lab in labels:
            r = table[lab].get(a)
            ys.append(value(r, kind) if usable_cell(r) else 0.0)
        xs = [j + (i - (n - 1) / 2) * width for j in range(len(labels))]
        ax.bar(xs, [y if y > 0 else math.nan for y in ys], width, label=a)
    ax.set_xticks(range(len(labels)))
    ax.set_xticklabels(labels, rotation=30, ha="right", fontsize=8)
    if kind == "share":
        ax.set_ylabel("usable share of the pool")
        ax.set_ylim(0, 1.05)
    else:
        ax.set_ylabel("operations / s")
        if log:
            ax.set_yscale("log")
    ax.set_title(title, fontsize=9)
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    ax.grid(axis="y", alpha=0.3)
    fig.tight_layout()
    fig.savefig(os.path.join(out, fname), dpi=120)
    plt.close(fig)
    return fname


def scatter_vs_upstream(rows, ours_name="Scatter", upstream="mallocMC"):
    """Issue 15, item 2: our Scatter against upstream mallocMC's Scatter in every
    row of every section where both cells are comparable (upstream finished,
    verified, no failed request). Returns the markdown lines."""
    L = [f"\n## {ours_name} against upstream {upstream}'s Scatter (every row upstream finishes)\n\n"]
    lines, losses = [], []
    for key, title, exp, launch, kind in SECTIONS:
        for lab, cells in section_rows(rows, key, exp, launch, kind).items():
            s, u = cells.get(ours_name), cells.get(upstream)
            if not (comparable(s, kind) and comparable(u, kind)):
                continue
            ratio = value(s, kind) / value(u, kind)
            where = f"{key.replace('_', ' ')}, {lab}"
            lines.append(f"| {key.replace('_', ' ')} | {lab} | {cell_text(s, kind)} | {cell_text(u, kind)} | "
                         f"{ratio:.2f}x |\n")
            if ratio < 1.0:
                losses.append(f"- {where}: {ratio:.2f}x\n")
    if not lines:
        L.append(f"No row where both {ours_name} and {upstream} have a comparable cell.\n")
        return L
    L.append(f"| section | row | {ours_name} | {upstream} | {ours_name} / {upstream} |\n|---|---|---|---|---|\n")
    L += lines
    L.append(f"\n{ours_name} is slower in {len(losses)} of {len(lines)} rows" + (":\n\n" if losses else ".\n"))
    L += losses
    return L


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("jsonl", nargs="+")
    ap.add_argument("--out", default=None)
    ap.add_argument("--env", default=None, help="environment.txt of scripts/gpu_run.sh")
    ap.add_argument("--commit", default=None)
    ap.add_argument("--command", default=None)
    args = ap.parse_args()
    rows, meta = load(args.jsonl)
    timing = launch_timing(meta)
    if not rows:
        sys.exit("no heap records in " + ", ".join(args.jsonl))
    out = args.out or os.path.splitext(args.jsonl[0])[0] + "_report"
    os.makedirs(out, exist_ok=True)
    ours, peers = allocator_order(rows)
    cols = ours + peers

    devices = sorted({r.get("device") for r in rows if r.get("device") not in (None, "", "unknown")})
    commit = args.commit or next((r["commit"] for r in rows + meta if r.get("commit")), None)
    m = meta[-1] if meta else {}
    command = args.command or m.get("command", "?")
    date = m.get("date", "?")
    env = ""
    if args.env and os.path.exists(args.env):
        with open(args.env) as f:
            env = f.read().strip()
        if not commit:
            commit = next((l.split(":", 1)[1].strip() for l in env.splitlines() if l.startswith("commit:")), None)

    L = ["# Our heaps side by side with the peer GPU allocators\n\n",
         f"- device: {', '.join(devices) or 'unknown'}\n",
         f"- commit: {commit or 'unknown'}\n",
         f"- date: {date}\n",
         f"- command: `{command}`\n",
         f"- {m.get('peers_status', 'peers: unknown')}\n",
         f"- launch timing: {TIMING.get(timing, timing)}\n",
         f"- ours: {', '.join(ours)}; peers: {', '.join(peers) or 'none'}\n"]
    if env:
        L.append("\nEnvironment:\n\n```\n" + env + "\n```\n")
    L.append("\nEvery chunk was verified (a pattern in its first and last word read back, no two chunks "
             "overlapping); 'NOT VERIFIED' marks a cell where that failed, '(n failed)' requests that returned "
             "null. Ratios compare verified cells without failed requests only; '(cold)' marks a warm cell where "
             "only the cold launch ran (slower than --slow-s). Same pool and launch configuration (blocks of 256 "
             "threads) for everyone.\n")

    losses = []
    plots = []
    for key, title, exp, launch, kind in SECTIONS:
        table = section_rows(rows, key, exp, launch, kind)
        L += markdown_section(key, title, table, ours, peers, kind, losses, crashed_in(rows, exp))
        p = plot_section(out, f"{key}.png", title, table, cols, kind)
        if p:
            L.append(f"\n![{title}]({p})\n")
            plots.append(p)

    # Every Scatter configuration of ours that ran: the default (ordered
    # frees) and RelaxedFrees, whose frees order what upstream's do (none).
    for name in ("Scatter", "Scatter+RelaxedFrees"):
        if name in ours:
            L += scatter_vs_upstream(rows, ours_name=name)

    L.append("\n## Where our best allocator loses to the best peer\n\n")
    L += [f"- {x}\n" for x in losses] or ["Nowhere.\n"]

    bad = crashes(rows)
    L.append("\n## Crashes, timeouts and errors\n\n")
    L += [f"- {r['experiment']} / {r['allocator']}: {r.get('note', '')}\n" for r in bad] or ["None.\n"]
    notes = OrderedDict()
    for r in rows:
        note = r.get("note", "")
        if note and not r.get("crash") and note != "ended: first failure":
            notes.setdefault((r["allocator"], note), None)
    for r in rows:
        if r.get("gate_timeouts"):
            notes.setdefault((r["allocator"], f"{r['experiment']} {r.get('launch', '')} {r.get('threads')} x "
                              f"{r.get('size')}: {int(r['gate_timeouts'])} launch(es) whose gate gave up, "
                              "timed as idle"), None)
    if notes:
        L.append("\n## Notes from the records\n\n")
        L += [f"- {a}: {n}\n" for (a, n) in notes]
    if plt is None:
        L.append("\n(matplotlib not installed: no plots; `apt-get install python3-matplotlib`)\n")

    with open(os.path.join(out, "REPORT.md"), "w") as f:
        f.write("".join(L))
    print(f"wrote {os.path.join(out, 'REPORT.md')} and {len(plots)} plots; our best loses in {len(losses)} rows")


if __name__ == "__main__":
    main()
