#!/usr/bin/env python3
"""Best of ours against the best peer over several rounds of the peers
benchmark written into one JSON Lines file (scripts/gpu_run.sh peers-rounds):
for every (experiment, launch, threads, size) the median launch time of each
allocator over the rounds, our best and the best peer's, their ratio as a
rate (best peer's time over ours) for the best of ours and for the default
configuration, and the default's ratio record by record (pairs of records in
file order: one per round, or per repetition where an experiment writes
several, as churn does). Only verified records without failed requests count; a row
without a peer or without ours is left out.

Usage: rounds_table.py PEERS.jsonl [--default NAME] [--ours A,B,...]
  --default  our configuration named in its own column (SizeClassSlabs)
  --ours     our allocators (default: every record without "peer": true,
             but CUDA's malloc, DeviceMalloc)"""
import argparse
import json
import statistics
from collections import defaultdict


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("jsonl")
    ap.add_argument("--default", default="SizeClassSlabs")
    ap.add_argument("--ours", default="")
    a = ap.parse_args()

    times = defaultdict(list)  # (experiment, launch, threads, size, allocator) -> seconds, in file order
    peers, ours = set(), set()
    with open(a.jsonl) as f:
        for line in f:
            if not line.strip():
                continue
            r = json.loads(line)
            if r.get("experiment") == "meta" or r.get("skipped") or r.get("crash"):
                continue
            if not r.get("seconds") or not r.get("verified") or r.get("fails"):
                continue
            name = r["allocator"]
            (peers if r.get("peer") else ours).add(name)
            size = r.get("size") or r.get("bytes", "")
            times[(r["experiment"], r.get("launch", ""), r.get("threads", 0), str(size), name)].append(r["seconds"])
    if a.ours:
        ours = set(a.ours.split(","))
    ours.discard("DeviceMalloc")

    rows = sorted({k[:4] for k in times}, key=lambda k: (k[0], k[1], k[2], k[3].rjust(8)))
    print("| experiment | launch | threads | size | best of ours, us | default, us | best peer, us |"
          " best ours / best peer | default / best peer | default / best peer, by round |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for row in rows:
        mine = {n: statistics.median(times[row + (n,)]) for n in ours if row + (n,) in times}
        theirs = {n: statistics.median(times[row + (n,)]) for n in peers if row + (n,) in times}
        if not mine or not theirs:
            continue
        best = min(mine, key=mine.get)
        peer = min(theirs, key=theirs.get)
        threads = f"2^{int(row[2]).bit_length() - 1}" if row[2] and int(row[2]) & (int(row[2]) - 1) == 0 else str(row[2])
        d_time, d_ratio, d_rounds = "-", "-", "-"
        if a.default in mine:
            d = mine[a.default]
            d_time, d_ratio = f"{d * 1e6:.1f}", f"{theirs[peer] / d:.2f}x"
            d_rounds = " ".join(f"{p / t:.2f}" for t, p in zip(times[row + (a.default,)], times[row + (peer,)]))
        print(f"| {row[0]} | {row[1]} | {threads} | {row[3]} | {mine[best] * 1e6:.1f} ({best}) | {d_time} |"
              f" {theirs[peer] * 1e6:.1f} ({peer}) | {theirs[peer] / mine[best]:.2f}x | {d_ratio} | {d_rounds} |")


if __name__ == "__main__":
    main()
