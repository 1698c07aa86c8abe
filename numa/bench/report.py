#!/usr/bin/env python3
"""Turns numa_bench JSON Lines into PNG plots and a markdown report.

    report.py RESULTS_DIR OUT_DIR [--title TITLE]

RESULTS_DIR holds results.jsonl and meta.json (written by run_bench.sh).
Writes OUT_DIR/report.md and OUT_DIR/<workload>.png (+ summary.png).
Medians over repetitions; the spread (min-max) is shown in the tables.
"""
import argparse
import json
import os
import statistics
from collections import defaultdict

from records import open_records

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

ORDER = ["glibc", "jemalloc", "tcmalloc", "mimalloc", "tbbmalloc",
         "manyalloc", "manyalloc-uma", "manyalloc-lowmem",
         "manyalloc-base", "manyalloc-base-uma", "manyalloc-base-lowmem"]
WHAT = {
    "ttest1": "t-test1-like: random malloc/realloc/free of random sizes (2 B - 4 KiB) per thread",
    "larson": "larson-like server: threads inherit and free blocks of exited threads (16-512 B)",
    "xmalloc": "xmalloc-like producer/consumer ring: every free is a remote free (8-256 B)",
    "cache-scratch": "cache-scratch: passive false sharing (objects handed out by the main thread)",
    "cache-thrash": "cache-thrash: active false sharing (8-byte objects written by each thread)",
    "hera": "Hera pattern: three arrays per thread, alloc/realloc around 16-24 MiB, pages touched",
    "firsttouch": "first touch: 32 MiB array allocated, every page written, freed; 16 rounds per thread in lockstep",
    "alias4k": "4K aliasing: a[i] = b[i-1] over the first 16 KiB of two 1 MiB malloc'd float arrays",
}


def median(xs):
    return statistics.median(xs) if xs else float("nan")


def load(results_dir):
    recs = []
    with open_records(results_dir) as f:
        for line in f:
            line = line.strip()
            if line.startswith("{"):
                recs.append(json.loads(line))
    meta = {}
    mp = os.path.join(results_dir, "meta.json")
    if os.path.exists(mp):
        with open(mp) as f:
            meta = json.load(f)
    return recs, meta


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("results")
    ap.add_argument("out")
    ap.add_argument("--title", default="Node allocator benchmarks")
    ap.add_argument("--note", default="", help="conditions of the run, printed under the header")
    args = ap.parse_args()
    recs, meta = load(args.results)
    os.makedirs(args.out, exist_ok=True)

    groups = defaultdict(list)  # (workload, threads, allocator) -> records
    for r in recs:
        groups[(r["experiment"], r["threads"], r["allocator"])].append(r)
    workloads = [w for w in WHAT if any(k[0] == w for k in groups)]
    threads = sorted({k[1] for k in groups})
    allocs = [a for a in ORDER if any(k[2] == a for k in groups)]
    allocs += sorted({k[2] for k in groups} - set(allocs))

    def stat(w, t, a, field):
        rs = [r for r in groups.get((w, t, a), []) if r.get("verified") and field in r]
        return [r[field] for r in rs]

    lines = [f"# {args.title}", ""]
    lines += [
        f"- machine: {meta.get('cpu', '?')}, {meta.get('cpus', '?')} CPUs, "
        f"{meta.get('numa_nodes', '?')} NUMA node(s), kernel {meta.get('kernel', '?')}, "
        f"{meta.get('glibc', '?')}, THP `{meta.get('thp', '?')}`",
        f"- commit {meta.get('commit', '?')}, date {meta.get('date', '?')}, "
        f"{meta.get('reps', '?')} repetition(s), scale {meta.get('scale', '?')}"
        + (f" (per-workload factors: {meta['weights']})" if meta.get('weights') else ""),
        f"- command: `{meta.get('command', '?')}` (numa/bench/run_bench.sh); "
        "allocators preloaded with LD_PRELOAD in one script run, alternating order",
        f"- allocators: {', '.join(allocs)}; `manyalloc` is the default profile "
        "(uma on one NUMA node, numa otherwise)",
        "- peak RSS: the largest VmRSS of /proc/self/status sampled every 0.5 ms during the "
        "workload (numa/bench/peak_rss.hpp says why not ru_maxrss, which the records keep as "
        "`maxrss_bytes` where measured)",
        "- every run verifies its blocks (stamps written at allocation are checked before free); "
        "a run with failures is excluded and counted below",
        "",
    ]
    if args.note:
        lines += [f"Note: {args.note}", ""]
    bad = [r for r in recs if not r.get("verified")]
    lines.append(f"Unverified or failed runs: {len(bad)}"
                 + ("" if not bad else " (" + ", ".join(
                     sorted({f"{r['experiment']}/{r['allocator']}/{r['threads']}" for r in bad})) + ")"))
    lines.append("")

    # Summary: time ratio manyalloc / others at the largest thread count.
    tmax = max(threads)
    lines += [f"## Summary at {tmax} thread(s): wall time relative to glibc (lower is better)", ""]
    lines.append("| workload | " + " | ".join(allocs) + " |")
    lines.append("|---" * (len(allocs) + 1) + "|")
    for w in workloads:
        g = median(stat(w, tmax, "glibc", "seconds"))
        row = []
        for a in allocs:
            m = median(stat(w, tmax, a, "seconds"))
            row.append(f"{m / g:.2f}" if g == g and m == m and g > 0 else "-")
        lines.append(f"| {w} | " + " | ".join(row) + " |")
    lines.append("")

    # Peak RSS relative to glibc, and where a difference lies: file-backed
    # pages (the preloaded allocator's code and data) or anonymous memory.
    rss_threads = sorted({1, tmax})
    others = [a for a in allocs if a != "glibc"]
    lines += [f"## Peak RSS relative to glibc at {' and '.join(map(str, rss_threads))} thread(s)", "",
              "Each cell: the ratio of medians, then the difference of the medians of the "
              "peak's file-backed and anonymous parts (`rss_file_bytes`, `rss_anon_bytes`) "
              "in KiB, file/anon.", ""]
    lines.append("| workload | threads | " + " | ".join(others) + " |")
    lines.append("|---" * (len(others) + 2) + "|")
    for w in workloads if "glibc" in allocs else []:
        for t in rss_threads:
            g = {f: median(stat(w, t, "glibc", f))
                 for f in ("rss_bytes", "rss_file_bytes", "rss_anon_bytes")}
            row = []
            for a in others:
                m = {f: median(stat(w, t, a, f)) for f in g}
                cell = f"{m['rss_bytes'] / g['rss_bytes']:.2f}" if g["rss_bytes"] > 0 else "-"
                if all(v == v for v in list(m.values()) + list(g.values())):
                    cell += (f" ({(m['rss_file_bytes'] - g['rss_file_bytes']) / 1024:+.0f}/"
                             f"{(m['rss_anon_bytes'] - g['rss_anon_bytes']) / 1024:+.0f})")
                row.append(cell if m["rss_bytes"] == m["rss_bytes"] else "-")
            lines.append(f"| {w} | {t} | " + " | ".join(row) + " |")
    lines.append("")

    for w in workloads:
        lines += [f"## {w}", "", WHAT[w], ""]
        lines.append("| threads | allocator | wall s (median, min-max) | user s | sys s | "
                     "peak RSS MiB | page faults | Mops/s |")
        lines.append("|---|---|---|---|---|---|---|---|")
        for t in threads:
            for a in allocs:
                secs = stat(w, t, a, "seconds")
                if not secs:
                    continue
                lines.append(
                    f"| {t} | {a} | {median(secs):.3f} ({min(secs):.3f}-{max(secs):.3f}) | "
                    f"{median(stat(w, t, a, 'user_s')):.3f} | {median(stat(w, t, a, 'sys_s')):.3f} | "
                    f"{median(stat(w, t, a, 'rss_bytes')) / 2**20:.0f} | "
                    f"{median(stat(w, t, a, 'page_faults')):.0f} | "
                    f"{median(stat(w, t, a, 'ops_per_s')) / 1e6:.2f} |")
        if w == "alias4k":
            # Per allocator: the offsets of thread 0's arrays in the 1-thread
            # runs, and how many threads had both arrays at the same offset
            # modulo 4 KiB at the highest thread count.
            top = max(threads)
            parts = []
            for a in allocs:
                ones = [r for r in recs if r["experiment"] == w and r["allocator"] == a
                        and r["threads"] == 1 and "a_mod4k" in r]
                tops = [r["threads_same_mod4k"] for r in recs if r["experiment"] == w
                        and r["allocator"] == a and r["threads"] == top and "threads_same_mod4k" in r]
                if not ones:
                    continue
                pairs = sorted({(r["a_mod4k"], r["b_mod4k"]) for r in ones})
                parts.append(f"{a}: " + ", ".join(f"({x}, {y})" for x, y in pairs) +
                             (f", {median(tops):.0f} of {top} threads equal" if tops else ""))
            lines += ["", "Array offsets modulo 4 KiB, (a, b) of one thread: " + "; ".join(parts)]
        lines += ["", f"![{w}]({w}.png)", ""]

        fig, axes = plt.subplots(1, 3, figsize=(14, 3.8))
        for a in allocs:
            xs = [t for t in threads if stat(w, t, a, "seconds")]
            if not xs:
                continue
            style = "-o" if a.startswith("manyalloc") else "--."
            axes[0].plot(xs, [median(stat(w, t, a, "seconds")) for t in xs], style, label=a)
            axes[1].plot(xs, [median(stat(w, t, a, "sys_s")) for t in xs], style, label=a)
            axes[2].plot(xs, [median(stat(w, t, a, "rss_bytes")) / 2**20 for t in xs], style, label=a)
        for ax, title in zip(axes, ["wall time (s)", "system time (s)", "peak RSS (MiB)"]):
            ax.set_title(f"{w}: {title}")
            ax.set_xlabel("threads")
            ax.set_xticks(threads)
            ax.grid(alpha=0.3)
        axes[0].legend(fontsize=7)
        fig.tight_layout()
        fig.savefig(os.path.join(args.out, f"{w}.png"), dpi=90)
        plt.close(fig)

    # Summary plot: relative wall time at tmax.
    fig, ax = plt.subplots(figsize=(12, 4))
    width = 0.8 / max(1, len(allocs))
    for i, a in enumerate(allocs):
        vals = []
        for w in workloads:
            g = median(stat(w, tmax, "glibc", "seconds"))
            m = median(stat(w, tmax, a, "seconds"))
            vals.append(m / g if g == g and m == m and g > 0 else 0)
        ax.bar([k + i * width for k in range(len(workloads))], vals, width, label=a)
    ax.set_xticks([k + 0.4 - width / 2 for k in range(len(workloads))])
    ax.set_xticklabels(workloads)
    ax.axhline(1.0, color="k", lw=0.8)
    ax.set_ylabel("wall time / glibc")
    ax.set_yscale("log")
    ax.set_title(f"wall time relative to glibc at {tmax} thread(s) (lower is better)")
    ax.legend(fontsize=7, ncol=4)
    fig.tight_layout()
    fig.savefig(os.path.join(args.out, "summary.png"), dpi=90)
    plt.close(fig)
    lines[lines.index("## Summary at %d thread(s): wall time relative to glibc (lower is better)" % tmax):
          lines.index("## Summary at %d thread(s): wall time relative to glibc (lower is better)" % tmax)] = [
        "![summary](summary.png)", ""]

    with open(os.path.join(args.out, "report.md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    print(f"wrote {args.out}/report.md and {len(workloads) + 1} plots")


if __name__ == "__main__":
    main()
