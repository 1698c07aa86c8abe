#!/usr/bin/env python3
"""Plots and a markdown report from manyalloc_coalescing_bench JSON Lines.

Usage: report.py RESULTS.jsonl [--out docs/results/coalescing] [--commit SHA]
                 [--command "exact command"]
Writes unit_linear.png, unit_quadratic.png, malloc_free.png, alltoall.png and
README.md (device, commit, date, tables, checks against the issue's targets,
the blowup) into --out.
"""
import argparse
import datetime
import gzip
import json
import os
import subprocess
import sys
from collections import defaultdict

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def load(path):
    rows = []
    with (gzip.open(path, "rt") if str(path).endswith(".gz") else open(path)) as f:
        for line in f:
            line = line.strip()
            if line.startswith("{"):
                rows.append(json.loads(line))
    return [r for r in rows if r.get("suite") == "coalescing"]


def device_malloc_by_threads(rows):
    """The DeviceMalloc record of each thread count: every ratio of this report is against it."""
    return {r["threads"]: r for r in rows if r["allocator"] == "DeviceMalloc"}


def ratio_table(rows, title, note, kernel=True):
    """Linear workload at 400 floats: each allocator against DeviceMalloc of the same run and thread count.
    kernel=False leaves out the kernel-time columns (meaningless when the kernel includes malloc)."""
    head = "| threads | allocator | kernel GFLOP/s | ratio | per-thread GFLOP/s | ratio |\n|---|---|---|---|---|---|\n"
    if not kernel:
        head = "| threads | allocator | per-thread GFLOP/s | ratio |\n|---|---|---|---|\n"
    L = [f"\n### {title}\n\n{note}\n\n{head}"]
    base = device_malloc_by_threads(rows)
    for t in sorted(base):
        b = base[t]
        sel = [r for r in rows if r["threads"] == t]
        for r in sorted(sel, key=lambda r: -r.get("gflops_thread_clock", 0)):
            tr = r["gflops_thread_clock"] / b["gflops_thread_clock"] if b["gflops_thread_clock"] > 0 else 0
            kcols = ""
            if kernel:
                kr = r["gflops"] / b["gflops"] if b["gflops"] > 0 else 0
                kcols = f"{r['gflops']:.1f} | {kr:.2f} | "
            L.append(f"| {t} | {r['allocator']} | {kcols}{r['gflops_thread_clock']:.1f} | {tr:.2f} |\n")
    return L


def linear_studies(out):
    """Tables from the extra Linear-workload runs kept next to the report, if present."""
    L = []
    occ = os.path.join(out, "coalescing_occupancy.jsonl")
    if os.path.exists(occ):
        rows = [r for r in load(occ) if r["floats"] == 400]
        split = [r for r in rows if r["experiment"] == "unit_linear"]
        fused = [r for r in rows if r["experiment"] == "unit_linear_fused"]
        L.append("\n## Linear workload at 400 floats: occupancy and the paper's one-kernel run (coalescing_occupancy.jsonl)\n")
        if split:
            L.extend(ratio_table(split, "Full occupancy, separate kernels",
                                 "`--only bounded --floats 400 --small-threads 0` (SMs x 2048 threads, the paper's setting)."))
        if fused:
            L.extend(ratio_table(fused, "One kernel per run (`--fused`, the paper's Listing 3)",
                                 "Per-thread figures only (the kernel time includes malloc). A slow "
                                 "allocator staggers the warps, so each thread's workload reads data it has just "
                                 "written with less contention: DeviceMalloc gains most.", kernel=False))
    pads = os.path.join(out, "linear_pads.jsonl")
    if os.path.exists(pads):
        rows = [r for r in load(pads) if r["floats"] == 400 and r["experiment"] == "unit_linear"]
        L.append("\n## Linear workload at 400 floats: how far layout alone goes (linear_pads.jsonl)\n")
        L.extend(ratio_table(rows, "IdealSlices with gaps between the slices (`--ideal-pads`)",
                             "IdealSlices is no allocator: thread w reads slice w of one array (a warp's parts side "
                             "by side, what coalescing builds), with `pad` bytes between slices. Its best ratio over "
                             "all paddings bounds what any allocator's layout can give against DeviceMalloc here."))
        base = device_malloc_by_threads(rows)
        for t in sorted(base):
            ideal = [r for r in rows if r["threads"] == t and r["allocator"].startswith("IdealSlices")]
            if ideal:
                best = max(ideal, key=lambda r: r["gflops"])
                L.append(f"\n- {t} threads: best layout {best['allocator']} = **{best['gflops'] / base[t]['gflops']:.2f}x** "
                         f"DeviceMalloc (kernel time)\n")
    return L


def git_commit():
    try:
        return subprocess.check_output(["git", "rev-parse", "--short", "HEAD"], text=True).strip()
    except Exception:
        return "unknown"


def unit_plot(rows, experiment, threads, path, title):
    series = defaultdict(list)
    for r in rows:
        if r["experiment"] == experiment and r["threads"] == threads:
            series[r["allocator"]].append((r["floats"], r["gflops"]))
    if not series:
        return False
    plt.figure(figsize=(7, 4.5))
    for name, pts in sorted(series.items()):
        pts.sort()
        plt.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", ms=3, label=name)
    plt.xlabel("floats allocated per thread")
    plt.ylabel("GFLOP/s")
    plt.title(f"{title} ({threads} threads)")
    plt.grid(alpha=0.3)
    plt.legend(fontsize=7)
    plt.tight_layout()
    plt.savefig(path, dpi=120)
    plt.close()
    return True


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("results")
    ap.add_argument("--out", default="docs/results/coalescing")
    ap.add_argument("--commit", default=None)
    ap.add_argument("--command", default="manyalloc_coalescing_bench --out results.jsonl")
    a = ap.parse_args()
    rows = load(a.results)
    if not rows:
        sys.exit("no coalescing records in " + a.results)
    os.makedirs(a.out, exist_ok=True)
    device = rows[0]["device"]
    commit = a.commit or git_commit()
    date = datetime.date.today().isoformat()
    unit = [r for r in rows if r["experiment"].startswith("unit_")]
    thread_counts = sorted({r["threads"] for r in unit}, reverse=True)
    plots = []
    for t in thread_counts:
        for exp, title in (("unit_linear", "Linear workload"), ("unit_quadratic", "Quadratic workload")):
            name = f"{exp}_{t}.png"
            if unit_plot(rows, exp, t, os.path.join(a.out, name), title):
                plots.append(name)

    # Malloc / free per thread (Linear runs), largest thread count.
    if thread_counts:
        fig, ax = plt.subplots(1, 2, figsize=(11, 4.2))
        for t in thread_counts[-1:]:
            series = defaultdict(list)
            for r in unit:
                if r["experiment"] == "unit_linear" and r["threads"] == t:
                    series[r["allocator"]].append((r["floats"], r["malloc_s_per_thread"] * 1e6, r["free_s_per_thread"] * 1e6))
            for name, pts in sorted(series.items()):
                pts.sort()
                ax[0].plot([p[0] for p in pts], [p[1] for p in pts], marker="o", ms=3, label=name)
                ax[1].plot([p[0] for p in pts], [p[2] for p in pts], marker="o", ms=3, label=name)
            ax[0].set_title(f"malloc time per thread ({t} threads)")
            ax[1].set_title(f"free time per thread ({t} threads)")
        for x in ax:
            x.set_xlabel("floats per thread")
            x.set_ylabel("microseconds")
            x.set_yscale("log")
            x.grid(alpha=0.3)
        ax[1].legend(fontsize=7)
        fig.tight_layout()
        fig.savefig(os.path.join(a.out, "malloc_free.png"), dpi=120)
        plt.close(fig)
        plots.append("malloc_free.png")

    a2a = [r for r in rows if r["experiment"] == "alltoall"]
    if a2a:
        a2a.sort(key=lambda r: r["seconds"])
        plt.figure(figsize=(7, 4))
        plt.barh([r["allocator"] for r in a2a], [r["seconds"] * 1e3 for r in a2a])
        plt.xlabel("ms (allocate + exchange + free)")
        plt.title(f"all-to-all, {a2a[0]['threads']} ranks in groups of 32")
        plt.tight_layout()
        plt.savefig(os.path.join(a.out, "alltoall.png"), dpi=120)
        plt.close()
        plots.append("alltoall.png")

    L = []
    L.append("# Coalescing allocators: results\n")
    L.append(f"- device: **{device}**\n- commit: `{commit}`\n- date: {date}\n- command: `{a.command}`\n")
    L.append(f"- records: {len(rows)}; all verified: **{all(r['verified'] for r in rows)}**\n")
    bad = [f"{r['experiment']}/{r['allocator']}/{r['bytes']}" for r in rows if not r["verified"]]
    if bad:
        L.append(f"- NOT verified: {', '.join(bad[:20])}\n")

    # Checks against the targets.
    L.append("\n## Targets of issue 3\n")

    def best_ratio(exp, floats):
        sel = [r for r in unit if r["experiment"] == exp and r["floats"] == floats]
        base = device_malloc_by_threads(sel)
        best = None
        for r in sel:
            b = base.get(r["threads"])
            if b is None or r["allocator"] == "DeviceMalloc" or b["gflops"] <= 0 or r["allocator"].startswith("IdealSlices"):
                continue
            ratio = r["gflops"] / b["gflops"]
            if best is None or ratio > best[0]:
                best = (ratio, r["allocator"], r["threads"])
        return best

    for exp in ("unit_linear", "unit_quadratic"):
        b = best_ratio(exp, 400)
        if b:
            L.append(f"- {exp} at 400 floats: best {b[1]} = **{b[0]:.2f}x** DeviceMalloc ({b[2]} threads; target 3x for Linear)\n")
        # The layout coalescing aims at, without any allocator: the bound.
        sel = [r for r in unit if r["experiment"] == exp and r["floats"] == 400]
        base = device_malloc_by_threads(sel)
        for r in sel:
            dm = base.get(r["threads"])
            if r["allocator"].startswith("IdealSlices") and dm and dm["gflops"] > 0:
                layout = ("16-byte slices side by side" if r["allocator"] == "IdealSlices (no allocator)"
                          else r["allocator"].removeprefix("IdealSlices+") + " bytes between 16-byte slices")
                L.append(f"  - reference layout, no allocator (one array, {layout}) = {r['gflops'] / dm['gflops']:.2f}x DeviceMalloc ({r['threads']} threads)\n")
    if a2a:
        base = [r for r in a2a if r["allocator"] == "DeviceMalloc"]
        if base:
            best = min((r for r in a2a if r["allocator"] != "DeviceMalloc"), key=lambda r: r["seconds"])
            L.append(f"- all-to-all: best {best['allocator']} = **{base[0]['seconds'] / best['seconds']:.2f}x** faster than DeviceMalloc (target 4x)\n")
    s16 = {(r["experiment"], r["allocator"]): r for r in rows if r["experiment"].startswith("small16")}
    for phase in ("alloc", "free"):
        n = s16.get((f"small16_{phase}", "Scatter+NoOp"))
        x = s16.get((f"small16_{phase}", "Scatter+XMallocSIMD"))
        if n and x:
            L.append(f"- 16-byte {phase} from full warps: XMallocSIMD {x['ops_per_s'] / 1e6:.0f} M/s vs NoOp {n['ops_per_s'] / 1e6:.0f} M/s "
                     f"(**{x['ops_per_s'] / n['ops_per_s']:.2f}x**; target >= 1)\n")

    L.append("\n## Unit benchmark (paper 4.1)\n")
    for p in plots:
        L.append(f"![{p}]({p})\n")
    for exp in ("unit_linear", "unit_quadratic"):
        for t in thread_counts:
            sel = [r for r in unit if r["experiment"] == exp and r["threads"] == t]
            if not sel:
                continue
            floats = sorted({r["floats"] for r in sel})
            cols = [f for f in floats if f in (25, 100, 200, 300, 400)]
            L.append(f"\n### {exp}, {t} threads: GFLOP/s (malloc / free microseconds per thread)\n\n")
            L.append("| allocator | " + " | ".join(str(int(c)) for c in cols) + " |\n")
            L.append("|---|" + "---|" * len(cols) + "\n")
            by = defaultdict(dict)
            for r in sel:
                by[r["allocator"]][r["floats"]] = r
            for name in sorted(by):
                cells = []
                for c in cols:
                    r = by[name].get(c)
                    cells.append("-" if r is None else
                                 f"{r['gflops']:.1f} ({r['malloc_s_per_thread'] * 1e6:.1f} / {r['free_s_per_thread'] * 1e6:.1f})")
                L.append(f"| {name} | " + " | ".join(cells) + " |\n")
    if a2a:
        L.append("\n## All-to-all (paper 4.2 in spirit)\n\n| allocator | ms total | send | exchange | free | verified |\n|---|---|---|---|---|---|\n")
        for r in a2a:
            L.append(f"| {r['allocator']} | {r['seconds'] * 1e3:.2f} | {r['send_s'] * 1e3:.2f} | {r['exchange_s'] * 1e3:.2f} | "
                     f"{r['free_s'] * 1e3:.2f} | {r['verified']} |\n")
    s16rows = [r for r in rows if r["experiment"].startswith("small16")]
    if s16rows:
        L.append("\n## 16-byte requests from full warps (Scatter, 4 KiB pages)\n\n| allocator | phase | M ops/s | threads |\n|---|---|---|---|\n")
        for r in s16rows:
            L.append(f"| {r['allocator']} | {r['experiment'][8:]} | {r['ops_per_s'] / 1e6:.1f} | {r['threads']} |\n")
    blow = [r for r in rows if r["experiment"] == "blowup"]
    if blow:
        L.append("\n## Blowup\n\nEvery thread allocates 16 bytes; then all lanes but lane 0 of each warp free theirs. "
                 "A coalesced superblock goes back only when all of its parts are freed, so the one live part per warp "
                 "keeps its whole superblock (and Scatter its page).\n\n"
                 "Held = 16-byte slots Scatter can no longer hand out, x 16 bytes.\n\n"
                 "| allocator | held, all live | held, 1 in 32 live | held after all freed | held bytes per live byte (1 in 32) |\n|---|---|---|---|---|\n")
        for r in blow:
            if "held_bytes_all_live" not in r:
                continue
            L.append(f"| {r['allocator']} | {r['held_bytes_all_live'] / 1e6:.1f} MB | {r['held_bytes_one_in_32_live'] / 1e6:.1f} MB | "
                     f"{r['held_bytes_after_free'] / 1e6:.2f} MB | {r['held_bytes_per_live_byte']:.1f} |\n")
    L.extend(linear_studies(a.out))
    with open(os.path.join(a.out, "README.md"), "w") as f:
        f.write("".join(L))
    print("wrote", os.path.join(a.out, "README.md"))


if __name__ == "__main__":
    main()
