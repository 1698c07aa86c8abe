#!/usr/bin/env python3
"""Our Scatter configurations against upstream mallocMC's Scatter, row by row (issue 15:
"Scatter >= upstream mallocMC's Scatter wherever that works"), from the rounds of one
peers-rounds run (JSON Lines of scripts/gpu_run.sh peers-rounds): the median launch time over
the rounds and every round's time, and the ratio as a rate (upstream's median time over ours:
above 1 is faster than upstream). Which records count is report.py's times_by_row
(usable_cell, no failed request); rows upstream did not run are left out. The last line counts,
per configuration, the rows below upstream's median. (Written for
docs/results/heap/peers/h200-4cff493-scatter-rounds as per_configuration.py.)

Usage: against_upstream.py PEERS_ROUNDS.jsonl > TABLE.md"""
import collections
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from report import load, threads_text, times_by_row  # noqa: E402

OURS = ("Scatter", "Scatter+RelaxedFrees")
UPSTREAM = "mallocMC"


def main() -> None:
    if len(sys.argv) != 2:
        sys.exit("usage: against_upstream.py PEERS_ROUNDS.jsonl")
    rows, _ = load([sys.argv[1]])
    times, order = times_by_row(rows)
    print("| experiment | launch | threads | size | upstream mallocMC, us (rounds) | "
          + " | ".join(f"{a}, us (rate / upstream's; rounds)" for a in OURS) + " |")
    print("|---|---|---|---|---|" + "---|" * len(OURS))
    below = collections.Counter()
    count = 0
    for key in sorted(times, key=order.get):
        up = [x * 1e6 for x in times[key].get(UPSTREAM, [])]
        if not up:
            continue
        count += 1
        m_up = statistics.median(up)
        cells = []
        for a in OURS:
            v = [x * 1e6 for x in times[key].get(a, [])]
            if not v:
                cells.append("-")
                continue
            m = statistics.median(v)
            below[a] += m_up / m < 1.0
            cells.append(f"{m:.1f} ({m_up / m:.2f}x; {' '.join(f'{x:.1f}' for x in v)})")
        exp, launch, threads, size = key
        print(f"| {exp} | {launch} | {threads_text(threads)} | {size} | {m_up:.1f} "
              f"({' '.join(f'{x:.1f}' for x in up)}) | " + " | ".join(cells) + " |")
    print()
    print(f"Rows where upstream ran: {count}. " + "; ".join(f"{a} below upstream's median in {below[a]}" for a in OURS) + ".")


if __name__ == "__main__":
    main()
