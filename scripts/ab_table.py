#!/usr/bin/env python3
"""Side-by-side table of two runs of the same benchmark (an A/B of two
trees): for every (experiment, launch, allocator, threads, size) the median
launch time over all records of each file, and new/base. Records that failed
verification or had failed requests are marked; a run that crashed (no time)
is counted in its row as crashed.
Usage: ab_table.py BASE.jsonl NEW.jsonl"""
import json
import statistics
import sys


def load(path):
    groups = {}
    for line in open(path):
        if not line.strip():
            continue
        r = json.loads(line)
        if r.get("experiment") == "meta" or r.get("skipped"):
            continue
        size = r.get("size") or r.get("bytes", "")
        key = (r["experiment"], r.get("launch", ""), r["allocator"], r.get("threads", ""), str(size))
        g = groups.setdefault(key, {"seconds": [], "bad": False, "crashed": 0})
        if r.get("crash") or not r.get("seconds"):
            g["crashed"] += 1
            continue
        g["seconds"].append(r["seconds"])
        g["bad"] |= bool(r.get("fails")) or not r.get("verified", True)
    return groups


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    base, new = load(sys.argv[1]), load(sys.argv[2])
    print("| experiment | launch | allocator | threads | size | base us | new us | new/base |")
    print("|---|---|---|---|---|---:|---:|---:|")
    for key in sorted(set(base) | set(new), key=lambda k: (k[0], k[1], k[2], k[3], k[4].zfill(6))):
        cells, text = [], []
        for g in (base.get(key), new.get(key)):
            ok = g is not None and g["seconds"]
            cells.append((statistics.median(g["seconds"]) * 1e6, g["bad"]) if ok else None)
            t = "-" if not ok else f"{cells[-1][0]:.1f}{' (fails)' if g['bad'] else ''}"
            if g is not None and g["crashed"]:
                t += f" ({g['crashed']} crashed)"
            text.append(t)
        ratio = f"{cells[1][0] / cells[0][0]:.3f}" if all(cells) else "-"
        print(f"| {' | '.join(map(str, key))} | {text[0]} | {text[1]} | {ratio} |")


if __name__ == "__main__":
    main()
