#!/usr/bin/env python3
"""Our Scatter configurations against upstream mallocMC's Scatter, row by row (issue 15:
"Scatter >= upstream mallocMC's Scatter wherever that works"), from the rounds of one
peers-rounds run (JSON Lines of scripts/gpu_run.sh peers-rounds): the median launch time over
the rounds and every round's time, and the ratio as a rate (upstream's median time over ours:
above 1 is faster than upstream). Which records count is rounds_table.py's rule (report.py's
usable_cell, no failed request); rows upstream did not run are left out. The last line counts,
per configuration, the rows below upstream's median. (Written for
docs/results/heap/peers/h200-4cff493-scatter-rounds as per_configuration.py.)

Usage: against_upstream.py PEERS_ROUNDS.jsonl > TABLE.md"""
import collections
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from report import load, usable_cell  # noqa: E402

OURS = ("Scatter", "Scatter+RelaxedFrees")
UPSTREAM = "mallocMC"


def main() -> None:
    if len(sys.argv) != 2:
        sys.exit("usage: against_upstream.py PEERS_ROUNDS.jsonl")
    times = collections.defaultdict(list)
    rows, _ = load([sys.argv[1]])
    for r in rows:
        if not usable_cell(r) or not r.get("seconds") or r.get("fails", 0):
            continue
        times[(r["experiment"], r["launch"], r["threads"], r["size"], r["allocator"])].append(r["seconds"] * 1e6)
    print("| experiment | launch | threads | size | upstream mallocMC, us (rounds) | "
          + " | ".join(f"{a}, us (rate / upstream's; rounds)" for a in OURS) + " |")
    print("|---|---|---|---|---|" + "---|" * len(OURS))
    below = collections.Counter()
    rows = sorted({k[:4] for k in times})
    count = 0
    for row in rows:
        up = times.get(row + (UPSTREAM,))
        if not up:
            continue
        count += 1
        m_up = statistics.median(up)
        cells = []
        for a in OURS:
            v = times.get(row + (a,))
            if not v:
                cells.append("-")
                continue
            m = statistics.median(v)
            below[a] += m_up / m < 1.0
            cells.append(f"{m:.1f} ({m_up / m:.2f}x; {' '.join(f'{x:.1f}' for x in v)})")
        exp, launch, threads, size = row
        print(f"| {exp} | {launch} | 2^{threads.bit_length() - 1} | {size} | {m_up:.1f} "
              f"({' '.join(f'{x:.1f}' for x in up)}) | " + " | ".join(cells) + " |")
    print()
    print(f"Rows where upstream ran: {count}. " + "; ".join(f"{a} below upstream's median in {below[a]}" for a in OURS) + ".")


if __name__ == "__main__":
    main()
