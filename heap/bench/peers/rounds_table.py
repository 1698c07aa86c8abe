#!/usr/bin/env python3
"""Best of ours against the best peer over several rounds of the peers
benchmark written into one JSON Lines file (scripts/gpu_run.sh peers-rounds):
for every (experiment, launch, threads, size) the median launch time of each
allocator over the rounds, our best and the best peer's, their ratio as a
rate (best peer's time over ours) for the best of ours and for the default
configuration, and the default's ratio record by record (pairs of records in
file order: one per round, or per repetition where an experiment writes
several, as churn does). Which records count, and which allocators are ours
or peers, is report.py's rule (usable_cell, no failed request; the "peer"
field); CUDA's malloc (DeviceMalloc) is left out of ours. A row without a
peer or without ours is left out.

Usage: rounds_table.py PEERS.jsonl [--default NAME]"""
import argparse
import statistics

from report import allocator_order, launch_timing, load, threads_text, times_by_row


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("jsonl")
    ap.add_argument("--default", default="SizeClassSlabs", help="our configuration with columns of its own")
    a = ap.parse_args()

    rows, meta = load([a.jsonl])
    launch_timing(meta)  # one timing per table
    ours, peers = allocator_order(rows)
    ours = [n for n in ours if n != "DeviceMalloc"]
    times, order = times_by_row(rows)

    print("| experiment | launch | threads | size | best of ours, us | default, us | best peer, us |"
          " best ours / best peer | default / best peer | default / best peer, by round |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for key in sorted(times, key=order.get):
        t = times[key]
        mine = {n: statistics.median(t[n]) for n in ours if n in t}
        theirs = {n: statistics.median(t[n]) for n in peers if n in t}
        if not mine or not theirs:
            continue
        best = min(mine, key=mine.get)
        peer = min(theirs, key=theirs.get)
        d_time, d_ratio, d_rounds = "-", "-", "-"
        if a.default in mine:
            d = mine[a.default]
            d_time, d_ratio = f"{d * 1e6:.1f}", f"{theirs[peer] / d:.2f}x"
            d_rounds = " ".join(f"{p / s:.2f}" for s, p in zip(t[a.default], t[peer]))
        print(f"| {key[0]} | {key[1]} | {threads_text(key[2])} | {key[3]} | {mine[best] * 1e6:.1f} ({best}) | {d_time} |"
              f" {theirs[peer] * 1e6:.1f} ({peer}) | {theirs[peer] / mine[best]:.2f}x | {d_ratio} | {d_rounds} |")


if __name__ == "__main__":
    main()
