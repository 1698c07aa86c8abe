#!/usr/bin/env python3
"""Plots and a markdown report from manyalloc_heap_pic_{cuda,host} JSON Lines
([Eckert2014] 5.2, Figures 5.3-5.6).

Usage: report.py PIC.jsonl [MORE.jsonl ...] [--out DIR] [--env environment.txt]
                 [--commit SHA] [--command "exact command"]

Writes REPORT.md and, where matplotlib is installed, the plots named after the
thesis's figures:
  fig5_3_time_per_step.png      time per step, every allocator (log scale)
  fig5_4_time_per_step_ours.png the same without the back end's malloc
  fig5_5_relative_histogram.png each of our policies' step time / HeapBuffer's, histogram
  fig5_6_max_population.png     largest population of one species vs number of
                                species, with HeapBuffer's limit as 5.2.2 predicts
                                (its one-species population / n)
The report checks: every record verified (particles conserved, lists intact);
with 16 species our policies hold at least 90% of what one species holds alone;
HeapBuffer stays within 10% of the predicted 1/n. Exit 2 when a record is not
verified (with --strict: when any check fails).
"""
import argparse
import gzip
import json
import os
import statistics
import sys
from collections import OrderedDict, defaultdict

try:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # noqa: E402
except ImportError:  # the report still has every table
    plt = None

BASELINES = ("DeviceMalloc", "HostMalloc", "DeviceMalloc (peers bench)")
PEERS = ("Gallatin", "Ouroboros", "Ouroboros-C", "mallocMC")
ORDER = ["HeapBuffer", "Scatter", "SizeClassSlabs", "DeviceMalloc", "HostMalloc", "Gallatin", "Ouroboros",
         "Ouroboros-C", "mallocMC"]
# Our bar: a heap shared by all species lets one grow into nearly all of it
# whatever their number ([Eckert2014] 5.2.2), less the lists' own frames.
OURS_MIN_SHARE = 0.90       # 16 species hold >= 90% of one species alone
PREDICTION_TOLERANCE = 0.10  # HeapBuffer within 10% of (one species) / n


def load(paths):
    """pic records, meta records, and the peers benchmark's records of its
    pic_steps / pic_growth children that crashed or were not run."""
    rows, meta, peer_failures = [], [], []
    for path in paths:
        with (gzip.open(path, "rt") if str(path).endswith(".gz") else open(path)) as f:
            for line in f:
                line = line.strip()
                if not line.startswith("{"):
                    continue
                r = json.loads(line)
                if r.get("suite") != "pic":
                    if r.get("experiment", "").startswith("pic_") and (r.get("crash") or r.get("skipped")):
                        peer_failures.append(r)
                    continue
                if r.get("peer") is False:
                    # Our heaps as the peers benchmark configures them (not the PIC program's).
                    r["allocator"] += " (peers bench)"
                (meta if r.get("experiment") == "meta" else rows).append(r)
    return rows, meta, peer_failures


def ordered(names):
    return sorted(names, key=lambda n: (ORDER.index(n) if n in ORDER else len(ORDER), n))


def read_env(path):
    env = {}
    if path and os.path.exists(path):
        with open(path) as f:
            lines = [l.strip() for l in f if l.strip()]
        for l in lines:
            if ":" in l and l.split(":", 1)[0] in ("date", "commit", "cpus"):
                k, v = l.split(":", 1)
                env[k] = v.strip()
        gpu = [l for l in lines if "," in l and ":" not in l.split(",")[0]]
        if gpu:
            env["gpu"] = gpu[0]
    return env


def steps_by_allocator(rows):
    out = defaultdict(list)
    for r in rows:
        if r["experiment"] == "steps" and r.get("skipped") != "true":
            out[r["allocator"]].append(r)
    for a in out:
        out[a].sort(key=lambda r: r["step"])
    return out


def growth_table(rows):
    g = defaultdict(dict)  # allocator -> species -> record
    for r in rows:
        if r["experiment"] == "growth" and r.get("skipped") != "true":
            g[r["allocator"]][int(r["species"])] = r
    return g


def fmt_ms(s):
    return "%.3f" % (s * 1e3)


STAMP = ""  # device, commit, date: printed under every plot


def finish(fig, path):
    fig.tight_layout(rect=(0, 0.04, 1, 1))
    fig.text(0.01, 0.01, STAMP, fontsize=7, color="0.3")
    fig.savefig(path, dpi=120)
    plt.close(fig)


def plot_steps(steps, path, with_baseline, title):
    fig, ax = plt.subplots(figsize=(8, 4.5))
    for a in ordered(steps):
        if a in BASELINES and not with_baseline:
            continue
        xs = [r["step"] for r in steps[a]]
        ys = [r["seconds"] * 1e3 for r in steps[a]]
        ax.plot(xs, ys, ".", markersize=3, label=a)
    ax.set_xlabel("time step")
    ax.set_ylabel("time per step [ms]")
    if with_baseline:
        ax.set_yscale("log")
    else:
        ax.set_ylim(bottom=0)
    ax.set_title(title)
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3)
    finish(fig, path)


def ratios_to_heapbuffer(steps):
    base = {r["step"]: r["seconds"] for r in steps.get("HeapBuffer", [])}
    out = OrderedDict()
    for a in ordered(steps):
        if a == "HeapBuffer" or a in BASELINES:
            continue
        rs = [r["seconds"] / base[r["step"]] for r in steps[a] if r["step"] in base and base[r["step"]] > 0]
        if rs:
            out[a] = rs
    return out


def plot_histogram(ratios, path):
    fig, ax = plt.subplots(figsize=(8, 4.5))
    for a, rs in ratios.items():
        ax.hist([100 * x for x in rs], bins=40, alpha=0.6, label=a)
    ax.axvline(100, color="k", linewidth=0.8)
    ax.set_xlabel("time per step relative to HeapBuffer [%]")
    ax.set_ylabel("steps")
    ax.set_title("Figure 5.5: step times normalised to HeapBuffer's")
    ax.legend(fontsize=8)
    finish(fig, path)


def plot_growth(g, path):
    fig, ax = plt.subplots(figsize=(8, 4.5))
    for a in ordered(g):
        ns = sorted(g[a])
        ax.plot(ns, [g[a][n]["max_population"] for n in ns], "o-", label=a)
    hb = g.get("HeapBuffer", {})
    if 1 in hb:
        ns = list(range(1, 17))
        ax.plot(ns, [hb[1]["max_population"] / n for n in ns], "k--", linewidth=0.8,
                label="HeapBuffer predicted (one species / n, 5.2.2)")
    ax.set_xlabel("species sharing the heap")
    ax.set_ylabel("largest population of one species")
    ax.set_title("Figure 5.6: particles one species can hold")
    ax.set_ylim(bottom=0)
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3)
    finish(fig, path)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("jsonl", nargs="+")
    ap.add_argument("--out")
    ap.add_argument("--env")
    ap.add_argument("--commit")
    ap.add_argument("--command")
    ap.add_argument("--strict", action="store_true",
                    help="exit 2 when any check fails (default: only when a record is not verified)")
    args = ap.parse_args()
    rows, meta, peer_failures = load(args.jsonl)
    if not rows:
        sys.exit("report.py: no pic records in " + ", ".join(args.jsonl))
    out = args.out or os.path.splitext(args.jsonl[0])[0] + "_report"
    os.makedirs(out, exist_ok=True)
    env = read_env(args.env)

    devices = sorted({r["device"] for r in rows})
    commits = sorted({r["commit"] for r in rows + meta if r.get("commit")})
    commit = args.commit or ", ".join(commits) or env.get("commit", "unknown")
    dates = sorted({m.get("date", "") for m in meta if m.get("date")})
    commands = [m.get("command", "") for m in meta if m.get("command")]
    if args.command:
        commands = [args.command]

    global STAMP
    STAMP = "device: %s | commit: %s | date: %s" % (
        ", ".join(devices), commit, ", ".join(d[:10] for d in dates) or env.get("date", "unknown"))
    steps = steps_by_allocator(rows)
    g = growth_table(rows)
    ratios = ratios_to_heapbuffer(steps)
    measured = [r for r in rows if r.get("skipped") != "true"]
    unverified = [r for r in measured if not r.get("verified")]

    md = ["# Particle-in-cell benchmark ([Eckert2014] 5.2, Figures 5.3-5.6)", ""]
    md.append("- device: " + ", ".join(devices) + (" (" + env["gpu"] + ")" if "gpu" in env else ""))
    md.append("- commit: " + commit)
    md.append("- date: " + (", ".join(dates) or env.get("date", "unknown")))
    for c in commands:
        md.append("- command: `" + c + "`")
    md.append("- records: %d measured, %d skipped; **%s**" % (
        len(measured), len(rows) - len(measured),
        "every record verified" if not unverified else "%d records NOT verified" % len(unverified)))
    md.append("")
    md.append("Particles (32 B) live in frames (8 KiB: 255 particles) per cell and species; a step moves a share of "
              "them to the neighbouring cells and converts some into the growing species (emit and gather "
              "launches, `heap/bench/pic/step.hpp`). A record is verified when the census after the step finds "
              "every particle (none lost, none duplicated) and every list intact.")
    md.append("")

    if steps:
        md += ["## Time per step (Figures 5.3, 5.4, 5.5)", ""]
        md.append("| allocator | steps | median ms | mean ms | min ms | max ms | fails | allocs+frees per step | verified |")
        md.append("|---|---|---|---|---|---|---|---|---|")
        for a in ordered(steps):
            ts = [r["seconds"] for r in steps[a]]
            ops = statistics.mean(r["ops"] for r in steps[a])
            md.append("| %s | %d | %s | %s | %s | %s | %d | %.0f | %s |" % (
                a, len(ts), fmt_ms(statistics.median(ts)), fmt_ms(statistics.mean(ts)), fmt_ms(min(ts)),
                fmt_ms(max(ts)), sum(r["fails"] for r in steps[a]), ops,
                "yes" if all(r["verified"] for r in steps[a]) else "NO"))
        first = next(iter(steps.values()))[0]
        md.append("")
        md.append("%d cells x %d species, %d particles." % (first["cells"], first["species"], first["particles"]))
        if ratios:
            md += ["", "Step time relative to HeapBuffer (Figure 5.5; the thesis found mallocMC 4.6% slower on "
                   "average):", "", "| allocator | mean | median | stdev |", "|---|---|---|---|"]
            for a, rs in ratios.items():
                md.append("| %s | %.1f%% | %.1f%% | %.1f%% |" % (
                    a, 100 * statistics.mean(rs), 100 * statistics.median(rs),
                    100 * (statistics.stdev(rs) if len(rs) > 1 else 0)))
        md.append("")

    checks = []
    if g:
        md += ["## Largest population of one species (Figure 5.6)", ""]
        ns = sorted({n for a in g for n in g[a]})
        md.append("| allocator | " + " | ".join("%d species" % n for n in ns) + " |")
        md.append("|---|" + "---|" * len(ns))
        for a in ordered(g):
            cells = []
            for n in ns:
                r = g[a].get(n)
                if r is None:
                    cells.append("-")
                    continue
                share = r["max_population"] / r["ideal_particles"]
                note = "" if r["verified"] else " NOT verified"
                if not r.get("first_fail_step"):
                    note += " (no failure yet: " + r.get("note", "stopped") + ")"
                cells.append("%.4g (%.1f%%)%s" % (r["max_population"], 100 * share, note))
            md.append("| %s | %s |" % (a, " | ".join(cells)))
        md.append("")
        md.append("Percentages: of the particles the heap could hold if every byte were frames. Species 0 grows "
                  "(injected particles; the others convert into it) until the first allocation fails.")
        md.append("")
        md.append("Frames held (all species, lists and outboxes) when the first allocation failed, of the frames the "
                  "pool could hold: where this is low, the heap refused while memory was free.")
        md.append("")
        md.append("| allocator | " + " | ".join("%d species" % n for n in ns) + " |")
        md.append("|---|" + "---|" * len(ns))
        for a in ordered(g):
            cells = []
            for n in ns:
                r = g[a].get(n)
                if r is None or not r.get("pool_frames") or not r.get("first_fail_step"):
                    cells.append("-")
                else:
                    cells.append("%.1f%%" % (100 * r["frames_at_first_fail"] / r["pool_frames"]))
            md.append("| %s | %s |" % (a, " | ".join(cells)))
        md.append("")
        top = max(ns)
        for a in ordered(g):
            if a in BASELINES or a in PEERS or a == "HeapBuffer" or a.endswith("(peers bench)"):
                continue
            if 1 in g[a] and top in g[a] and top > 1:
                share = g[a][top]["max_population"] / g[a][1]["max_population"]
                checks.append(("%s: %d species hold %.1f%% of one species alone (>= %d%%)" % (
                    a, top, 100 * share, 100 * OURS_MIN_SHARE), share >= OURS_MIN_SHARE))
        hb = g.get("HeapBuffer", {})
        if 1 in hb:
            for n in sorted(hb):
                if n == 1:
                    continue
                predicted = hb[1]["max_population"] / n
                dev = hb[n]["max_population"] / predicted - 1
                checks.append(("HeapBuffer: %d species hold %.4g, predicted %.4g (one species / n): %+.1f%%" % (
                    n, hb[n]["max_population"], predicted, 100 * dev), abs(dev) <= PREDICTION_TOLERANCE))
    ring = [r for r in measured if "ring_live_refused" in r]
    if ring:
        live = sum(r["ring_live_refused"] + r.get("ring_misuse", 0) for r in ring)
        empty = sum(r.get("ring_empty", 0) for r in ring)
        checks.append(("HeapBuffer: no frame handed out while live and no bad free (%d); %d requests refused "
                       "at an empty ring, each reported (the full ring of 2.4.4 seen at once)" % (live, empty),
                       live == 0))
    checks.append(("every record verified", not unverified))
    md += ["## Checks", ""]
    for text, ok in checks:
        md.append("- %s %s" % ("PASS" if ok else "FAIL", text))
    md.append("")

    skipped = [r for r in rows if r.get("skipped") == "true"]
    if peer_failures:
        md += ["## Peers not measured", ""]
        for r in peer_failures:
            md.append("- %s %s: %s%s" % (r["experiment"], r["allocator"], "crashed: " if r.get("crash") else "",
                                         r.get("note", "")))
        md.append("")
    if skipped:
        md += ["## Skipped", ""]
        for r in skipped:
            md.append("- %s %s (%s species): %s" % (r["experiment"], r["allocator"], int(r.get("species", 0)),
                                                      r.get("note", "")))
        md.append("")

    if plt is not None:
        figs = []
        if steps:
            plot_steps(steps, os.path.join(out, "fig5_3_time_per_step.png"), True,
                       "Figure 5.3: time per step, every allocator")
            plot_steps(steps, os.path.join(out, "fig5_4_time_per_step_ours.png"), False,
                       "Figure 5.4: time per step, without the back end's malloc")
            figs += ["fig5_3_time_per_step.png", "fig5_4_time_per_step_ours.png"]
        if ratios:
            plot_histogram(ratios, os.path.join(out, "fig5_5_relative_histogram.png"))
            figs.append("fig5_5_relative_histogram.png")
        if g:
            plot_growth(g, os.path.join(out, "fig5_6_max_population.png"))
            figs.append("fig5_6_max_population.png")
        md += ["## Figures", ""] + ["![%s](%s)" % (f, f) for f in figs] + [""]
    else:
        md += ["(matplotlib not installed: no plots)", ""]

    with open(os.path.join(out, "REPORT.md"), "w") as f:
        f.write("\n".join(md))
    print("\n".join(md))
    if unverified or (args.strict and not all(ok for _, ok in checks)):
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
