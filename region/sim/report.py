#!/usr/bin/python3
"""Turns region_sim JSON Lines (and region_sim_mpi_check lines) into a
markdown report and PNG plots.

usage: report.py --out DIR --command "how the runs were made" RUNS.jsonl [MORE.jsonl...]

Writes DIR/README.md, DIR/messages_per_alloc.png, DIR/hot_spots.png and a
copy of the records (DIR/runs.jsonl). The commit is `git rev-parse --short
HEAD` of the checkout this script lives in; the date is today's (UTC).
"""
import argparse
import datetime
import gzip
import json
import os
import subprocess
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def load(paths):
    runs, checks = [], []
    for p in paths:
        with (gzip.open(p, "rt") if str(p).endswith(".gz") else open(p)) as f:
            for line in f:
                line = line.strip()
                if not line.startswith("{"):
                    continue
                r = json.loads(line)
                if r.get("suite") != "region-sim":
                    continue
                (checks if r.get("experiment") == "exact-match" else runs).append(r)
    return runs, checks


def commit():
    here = os.path.dirname(os.path.abspath(__file__))
    try:
        head = subprocess.check_output(["git", "rev-parse", "--short", "HEAD"], cwd=here, text=True).strip()
        dirty = subprocess.check_output(["git", "status", "--porcelain", "--", "region/src", "region/sim"],
                                        cwd=os.path.join(here, "..", ".."), text=True).strip()
        return head + (" (with uncommitted changes to region/src, region/sim)" if dirty else "")
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def layout(r):
    return f"{r['schedulers']} sched ({r['levels']} lvl, fanout {r['fanout']})"


def plot_by_layout(runs, field, ylabel, path, log_y=False):
    patterns = sorted({r["experiment"] for r in runs})
    fig, axes = plt.subplots(1, len(patterns), figsize=(5 * len(patterns), 4), squeeze=False)
    for ax, pat in zip(axes[0], patterns):
        by_layout = {}
        for r in runs:
            if r["experiment"] == pat:
                by_layout.setdefault(layout(r), []).append(r)
        for name, rs in sorted(by_layout.items(), key=lambda kv: kv[1][0]["schedulers"]):
            rs.sort(key=lambda r: r["threads"])
            ax.plot([r["threads"] for r in rs], [r[field] for r in rs], marker="o", label=name)
        ax.set_xscale("log", base=2)
        if log_y:
            ax.set_yscale("log")
        ax.set_xlabel("workers")
        ax.set_ylabel(ylabel)
        ax.set_title(pat)
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--command", required=True, help="the commands that produced the runs")
    ap.add_argument("files", nargs="+")
    a = ap.parse_args()
    runs, checks = load(a.files)
    if not runs:
        sys.exit("report.py: no region-sim records")
    os.makedirs(a.out, exist_ok=True)
    with open(os.path.join(a.out, "runs.jsonl"), "w") as f:
        for r in runs + checks:
            f.write(json.dumps(r) + "\n")
    plot_by_layout(runs, "messages_per_alloc", "messages per allocation request",
                   os.path.join(a.out, "messages_per_alloc.png"))
    plot_by_layout(runs, "hot_spot_ratio", "busiest scheduler / mean (messages taken)",
                   os.path.join(a.out, "hot_spots.png"), log_y=True)

    runs.sort(key=lambda r: (r["experiment"], r["schedulers"], r["threads"]))
    out = []
    out.append("# Region simulator: messages, scheduler load and hot spots\n")
    out.append(f"- device: {runs[0]['device']}")
    out.append(f"- commit: {commit()}")
    out.append(f"- date: {datetime.datetime.now(datetime.timezone.utc).strftime('%Y-%m-%d')}")
    out.append(f"- command: `{a.command}`")
    out.append("- what: region/sim (README.md, \"Simulator\"): the library's schedulers over the in-process "
               "transport, simulated workers running the list, Barnes-Hut and Delaunay patterns. `seconds` is "
               "the wall time of one simulation on one thread; `ops` counts allocation requests (mr_ralloc, "
               "mr_alloc/mr_balloc); messages are every control message, the workers' requests and replies "
               "included. Load = messages a scheduler took; hot spot = busiest scheduler / mean.\n")
    if checks:
        out.append("## Exact match with MPI\n")
        out.append("| pattern | workers | schedulers (levels) | MPI scheduler messages | simulator | mismatches | result |")
        out.append("|---|---|---|---|---|---|---|")
        for c in checks:
            ok = c["mismatches"] == 0 and c["mpi_fails"] == 0 and c["sim_verified"]
            out.append(f"| {c['pattern']} | {c['threads']} | {c['schedulers']} ({c['levels']}) | "
                       f"{c['mpi_scheduler_messages']} | {c['sim_scheduler_messages']} | {c['mismatches']} | "
                       f"{'exact' if ok else 'DIFFERENT'} |")
        out.append("")
    out.append("## Runs\n")
    out.append("| pattern | workers | schedulers | levels | seconds | alloc requests | messages | msgs/alloc "
               "| sched load max | mean | hot spot (rank, ratio) | top scheduler | verified |")
    out.append("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for r in runs:
        out.append(f"| {r['experiment']} | {r['threads']} | {r['schedulers']} | {r['levels']} | {r['seconds']:.2f} | "
                   f"{r['ops']} | {r['messages']} | {r['messages_per_alloc']:.2f} | {r['sched_load_max']} | "
                   f"{r['sched_load_mean']:.0f} | {r['hot_spot_rank']}, {r['hot_spot_ratio']:.2f} | "
                   f"{r['top_messages']} | {'yes' if r['verified'] else 'NO'} |")
    out.append("")
    out.append("![messages per allocation](messages_per_alloc.png)\n")
    out.append("![hot spots](hot_spots.png)\n")
    with open(os.path.join(a.out, "README.md"), "w") as f:
        f.write("\n".join(out))
    print(f"report.py: {len(runs)} runs, {len(checks)} checks -> {a.out}")


if __name__ == "__main__":
    main()
