#!/usr/bin/env python3
"""Prints a markdown table of run_churn.sh results.

    churn_report.py RESULTS_DIR [--label TEXT]

Per size and allocator: the median wall time (min-max over repetitions),
its ratio to glibc's median, median user and system time, page faults and
peak RSS, the madvise/munmap/mmap/mremap calls counted under strace, and
the decommits/unmaps counted by manyalloc's statistics.
"""
import argparse
import json
import os
import statistics
from collections import defaultdict

from records import open_records


def median(xs):
    return statistics.median(xs) if xs else float("nan")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("results")
    ap.add_argument("--label", default="")
    args = ap.parse_args()
    recs = []
    with open_records(args.results) as f:
        for line in f:
            if line.startswith("{"):
                recs.append(json.loads(line))
    meta = {}
    mp = os.path.join(args.results, "meta.json")
    if os.path.exists(mp):
        with open(mp) as f:
            meta = json.load(f)
    bad = [r for r in recs if not r.get("verified")]
    by = defaultdict(list)
    for r in recs:
        if r.get("verified"):
            by[(r["bytes"], r["allocator"])].append(r)
    sizes = sorted({k[0] for k in by})
    order = meta.get("allocators", "").split() or sorted({k[1] for k in by})
    if args.label:
        print(f"### {args.label}\n")
    if meta:
        print(f"- commit {meta.get('commit')}, date {meta.get('date')}, {meta.get('cpus')} CPUs "
              f"({meta.get('cpu')}), kernel {meta.get('kernel')}, {meta.get('glibc')}")
        print(f"- {meta.get('iters')} iterations per run, {meta.get('reps')} repetitions, "
              f"command `{meta.get('command')}`")
    print(f"- unverified or failed runs: {len(bad)}\n")
    print("| bytes | allocator | wall s (median, min-max) | x glibc | user s | sys s | "
          "page faults | peak RSS MiB | madvise | munmap | mmap | mremap | stats decommits | stats unmaps |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for n in sizes:
        base = median([r["seconds"] for r in by.get((n, "glibc"), [])])
        for a in order:
            rs = by.get((n, a))
            if not rs:
                continue
            secs = [r["seconds"] for r in rs]
            m = median(secs)

            def med(key, fmt="{:.0f}"):
                xs = [r[key] for r in rs if r.get(key) is not None]
                return fmt.format(median(xs)) if xs else "-"

            def first(key):
                xs = [r[key] for r in rs if r.get(key) is not None]
                return str(xs[0]) if xs else "-"

            ratio = f"{m / base:.2f}" if base == base and base > 0 else "-"
            print(f"| {n} | {a} | {m:.3f} ({min(secs):.3f}-{max(secs):.3f}) | {ratio} | "
                  f"{med('user_s', '{:.3f}')} | {med('sys_s', '{:.3f}')} | {med('page_faults')} | "
                  f"{median([r['rss_bytes'] for r in rs]) / 2**20:.1f} | {first('madvise_calls')} | "
                  f"{first('munmap_calls')} | {first('mmap_calls')} | {first('mremap_calls')} | "
                  f"{med('stats_decommits')} | {med('stats_unmaps')} |")


if __name__ == "__main__":
    main()
