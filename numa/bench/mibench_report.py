#!/usr/bin/env python3
"""Turns run_mibench.py's records into a markdown report and PNG plots.

    mibench_report.py RESULTS_DIR OUT_DIR [--title TITLE] [--note NOTE]

RESULTS_DIR holds results.jsonl, meta.json and run.log (run_mibench.py).
Writes OUT_DIR/report.md, OUT_DIR/mibench-<threads>t.png, and copies of the
raw records and meta. Per thread count: the bench.sh score (seconds, lower
is better) of every workload under every allocator, median over repetitions,
with its ratio to the best allocator on that workload; then peak RSS with its
ratio to glibc's; then minor page faults and system seconds (GNU time's,
medians over the repetitions that have them); then, per profile of ours,
where it is the fastest, within 10 % of the fastest, and its worst ratio.
"""
import argparse
import json
import os
import shutil
import statistics
from collections import defaultdict

from records import open_records

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

ORDER = ["glibc", "jemalloc", "tcmalloc", "mimalloc", "tbbmalloc",
         "manyalloc-uma", "manyalloc-numa", "manyalloc-lowmem"]


def med(xs):
    return statistics.median(xs) if xs else None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("results")
    ap.add_argument("out")
    ap.add_argument("--title", default="mimalloc-bench under every allocator")
    ap.add_argument("--note", default="")
    a = ap.parse_args()
    with open_records(a.results) as f:
        recs = [json.loads(l) for l in f if l.startswith("{")]
    meta = json.load(open(os.path.join(a.results, "meta.json")))
    log = open(os.path.join(a.results, "run.log")).read().splitlines() \
        if os.path.exists(os.path.join(a.results, "run.log")) else []
    os.makedirs(a.out, exist_ok=True)

    g = defaultdict(list)
    for r in recs:
        g[(r["experiment"], r["threads"], r["allocator"])].append(r)
    workloads = []
    for r in recs:
        if r["experiment"] not in workloads:
            workloads.append(r["experiment"])
    threads = sorted({r["threads"] for r in recs})
    allocs = [x for x in ORDER if any(r["allocator"] == x for r in recs)]
    allocs += sorted({r["allocator"] for r in recs} - set(allocs))
    ours = [x for x in allocs if x.startswith("manyalloc")]
    quick = {r["experiment"] for r in recs if r.get("quick")}

    def values(w, t, x, f):
        """Field f of the verified runs of workload w, t threads, allocator x."""
        return [r[f] for r in g.get((w, t, x), []) if r.get("verified") and r.get(f) is not None]

    def val(w, t, x, f):
        return med(values(w, t, x, f))

    def rss_pair(w, t, x):
        """Medians of glibc's and x's peak RSS: the sampled one where both
        have it (run_mibench.py, rss_sampler.py), else GNU time's."""
        sg, sx = val(w, t, "glibc", "rss_sampled_bytes"), val(w, t, x, "rss_sampled_bytes")
        if sg and sx:
            return sg, sx
        return val(w, t, "glibc", "peak_rss_bytes"), val(w, t, x, "peak_rss_bytes")

    L = [f"# {a.title}", ""]
    L += [f"- device: {meta.get('cpu')} ({meta.get('cpus')} CPUs, {meta.get('numa_nodes')} NUMA node(s)), "
          f"kernel {meta.get('kernel')}, {meta.get('glibc')}",
          f"- commit {meta.get('commit')}, date {meta.get('date')}, {meta.get('reps')} repetition(s) "
          f"(medians), threads {', '.join(map(str, threads))}, suite {meta.get('mibench')}",
          f"- command: `{meta.get('command')}` (numa/bench/run_mibench.py), then "
          f"`numa/bench/mibench_report.py`",
          "- arguments and scoring: bench.sh's own (its `run_test` evaluated with procs = threads); "
          "score = wall time, or for " + ", ".join(sorted(meta.get("scoring", {}))) +
          " the program's printed time or rate as bench.sh converts it; `score_s`, lower is better",
          "- peak RSS: ru_maxrss from GNU time (bench.sh's `%M`), including time's own ~2 MiB "
          "before exec, the same for every allocator; where the records hold it, also the program's "
          "own VmRSS sampled from /proc (`rss_sampled_bytes`, its own table)",
          f"- allocators: {', '.join(allocs)}; ours = `manyalloc-<profile>` "
          "(libmanyalloc-numa.so with MANYALLOC_NUMA_PROFILE=<profile>)"]
    if quick:
        L.append(f"- **--quick**: {', '.join(sorted(quick))} (marked †) ran with SHORTER arguments than "
                 "bench.sh's (commands below); their times are not comparable with bench.sh figures")
    if a.note:
        L += ["", f"Note: {a.note}"]
    bad = [r for r in recs if not r.get("verified")]
    L += ["", f"Failed runs: {len(bad)}" + ("" if not bad else " (" + ", ".join(sorted(
        {f"{r['experiment']}/{r['allocator']}/{r['threads']}: {r.get('error')}" for r in bad})) + ")"), ""]

    for t in threads:
        best = {}
        for w in workloads:
            vs = [(val(w, t, x, "score_s"), x) for x in allocs]
            vs = [v for v in vs if v[0] is not None]
            best[w] = min(vs) if vs else (None, None)
        def table(cell, best_column=False):
            """One row per workload, one column per allocator; cell(w, x) -> text."""
            rows = ["| workload | " + " | ".join(allocs) + (" | best |" if best_column else " |"),
                    "|---" * (len(allocs) + (2 if best_column else 1)) + "|"]
            for w in workloads:
                rows.append(f"| {w}{' †' if w in quick else ''} | " + " | ".join(cell(w, x) for x in allocs) +
                            (f" | {best[w][1]} |" if best_column else " |"))
            return rows

        def score_cell(w, x):
            v = val(w, t, x, "score_s")
            if v is None:
                return "-"
            cell = f"{v:.3f} ({v / best[w][0]:.2f})" if best[w][0] else f"{v:.3f}"
            return f"**{cell}**" if x == best[w][1] else cell

        def rss_cell(w, x, field="peak_rss_bytes"):
            v, gb = val(w, t, x, field), val(w, t, "glibc", field)
            return "-" if v is None else f"{v / 2**20:.2f}" + (f" ({v / gb:.2f})" if gb else "")

        def faults_cell(w, x):
            pf, sy = val(w, t, x, "page_faults"), val(w, t, x, "sys_s")
            if pf is None and sy is None:
                return "-"
            return " / ".join([f"{pf / 1e3:.1f} K" if pf is not None else "-", f"{sy:.2f} s" if sy is not None else "-"])

        L += [f"## {t} threads: bench.sh score in seconds (median), ratio to the best", "",
              "Each cell: score_s (ratio to the fastest allocator on that workload); **bold** = fastest.", ""]
        L += table(score_cell, best_column=True)
        def range_cell(w, x):
            vs = values(w, t, x, "score_s")
            return f"{min(vs):.3f}-{max(vs):.3f}" if len(vs) > 1 else "-"

        # With several repetitions, the range of each cell: where the ranges
        # of two allocators overlap, their medians' order is not a ranking.
        if any(len(g.get((w, t, x), [])) > 1 for w in workloads for x in allocs):
            L += ["", f"## {t} threads: bench.sh score over the repetitions, min-max in seconds", "",
                  "Where two allocators' ranges overlap, the order of their medians above does not rank them.", ""]
            L += table(range_cell)
        L += ["", f"## {t} threads: peak RSS in MiB (median), ratio to glibc", ""]
        L += table(rss_cell)
        # The program's own VmRSS sampled from /proc (run_mibench.py,
        # rss_sampler.py): GNU time's figure follows the kernel's approximate
        # per-CPU counters on kernels from 6.2.
        if any(values(w, t, x, "rss_sampled_bytes") for w in workloads for x in allocs):
            L += ["", f"## {t} threads: sampled peak RSS in MiB (median), ratio to glibc", "",
                  "The program's VmRSS sampled from /proc during the run (run_mibench.py --rss-interval-ms), "
                  "without GNU time's own pages; a peak shorter than the interval can be missed.", ""]
            L += table(lambda w, x: rss_cell(w, x, "rss_sampled_bytes"))
        # Where the time of the allocators that lose goes is often the kernel's
        # (page faults after a decommit or unmap): both from GNU time's record.
        L += ["", f"## {t} threads: minor page faults in thousands and system seconds (medians)", "",
              "Each cell: page faults / system time, from GNU time like the peak RSS.", ""]
        L += table(faults_cell)
        L += ["", f"## {t} threads: our profiles against the field", ""]
        L.append("| profile | fastest on | within 10 % of the fastest | worst ratio to the fastest "
                 "| time vs glibc (geomean) | RSS above 1.1x glibc on (sampled peak where recorded) |")
        L.append("|---|---|---|---|---|---|")
        for x in ours:
            wins, near, worst, gl, fat = [], [], (0, ""), [], []
            for w in workloads:
                v = val(w, t, x, "score_s")
                if v is None or not best[w][0]:
                    continue
                ratio = v / best[w][0]
                if best[w][1] == x:
                    wins.append(w)
                elif ratio <= 1.1:
                    near.append(w)
                worst = max(worst, (ratio, w))
                gv = val(w, t, "glibc", "score_s")
                if gv:
                    gl.append(v / gv)
                gr, xr = rss_pair(w, t, x)
                if gr and xr and xr > 1.1 * gr:
                    fat.append(f"{w} {xr / gr:.2f}")
            geo = statistics.geometric_mean(gl) if gl else float("nan")
            L.append(f"| {x} | {len(wins)}: {', '.join(wins) or '-'} | {len(near)}: {', '.join(near) or '-'} "
                     f"| {worst[0]:.2f} ({worst[1]}) | {geo:.2f} | {', '.join(fat) or '-'} |")
        L += ["", f"![{t} threads](mibench-{t}t.png)", ""]

        fig, axes = plt.subplots(2, 1, figsize=(14, 8))
        width = 0.8 / max(1, len(allocs))
        for i, x in enumerate(allocs):
            sv, rv = [], []
            for w in workloads:
                v = val(w, t, x, "score_s")
                sv.append(v / best[w][0] if v and best[w][0] else 0)
                gb, r = rss_pair(w, t, x)
                rv.append(r / gb if r and gb else 0)
            xs = [k + i * width for k in range(len(workloads))]
            hatch = "//" if x.startswith("manyalloc") else None
            axes[0].bar(xs, sv, width, label=x, hatch=hatch)
            axes[1].bar(xs, rv, width, label=x, hatch=hatch)
        for ax, title in zip(axes, [f"score / fastest, {t} threads (lower is better)",
                                    f"peak RSS / glibc, {t} threads (sampled where recorded)"]):
            ax.set_xticks([k + 0.4 - width / 2 for k in range(len(workloads))])
            ax.set_xticklabels([w + (" †" if w in quick else "") for w in workloads], rotation=30,
                               ha="right", fontsize=8)
            ax.axhline(1.0, color="k", lw=0.8)
            ax.set_yscale("log")
            ax.set_title(title)
            ax.grid(alpha=0.3, axis="y")
        axes[0].legend(fontsize=7, ncol=8)
        fig.tight_layout()
        fig.savefig(os.path.join(a.out, f"mibench-{t}t.png"), dpi=80)
        plt.close(fig)

    L += ["## Commands (from bench.sh; † = --quick)", ""]
    for t, tests in sorted(meta.get("tests", {}).items(), key=lambda kv: int(kv[0])):
        L.append(f"{t} threads:")
        L.append("")
        L += [f"- {n}{' †' if q else ''}: `{c}`" for n, c, q in tests]
        L.append("")
    skipped = [l for l in log if l.startswith("skipped") or l.startswith("skipping")]
    if skipped:
        L += ["Not run (bench.sh tests whose programs mimalloc-bench's bench/CMakeLists.txt does not build):", ""]
        L += [f"- {l.split(':', 1)[0].replace('skipped ', '')}" for l in skipped]
        L.append("")
    with open(os.path.join(a.out, "report.md"), "w") as f:
        f.write("\n".join(L) + "\n")
    for name in ("results.jsonl", "meta.json", "run.log"):
        src = os.path.join(a.results, name)
        if os.path.exists(src) and os.path.abspath(src) != os.path.abspath(os.path.join(a.out, name)):
            shutil.copy(src, os.path.join(a.out, name))
    print(f"wrote {a.out}/report.md and {len(threads)} plot(s)")


if __name__ == "__main__":
    main()
