#!/usr/bin/env python3
"""Side-by-side table of two runs of the same benchmark (an A/B of two
trees): for every (experiment, launch, allocator, threads, size) the median
launch time over all records of each file, and new/base. Records that failed
verification or had failed requests are marked.
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
        if r.get("experiment") == "meta" or r.get("skipped") or not r.get("seconds"):
            continue
        key = (r["experiment"], r.get("launch", ""), r["allocator"], r["threads"], str(r.get("size", r["bytes"])))
        g = groups.setdefault(key, {"seconds": [], "bad": False})
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
        cells = []
        for g in (base.get(key), new.get(key)):
            cells.append(None if g is None else (statistics.median(g["seconds"]) * 1e6, g["bad"]))
        text = ["-" if c is None else f"{c[0]:.1f}{' (fails)' if c[1] else ''}" for c in cells]
        ratio = f"{cells[1][0] / cells[0][0]:.3f}" if all(cells) else "-"
        print(f"| {' | '.join(map(str, key))} | {text[0]} | {text[1]} | {ratio} |")


if __name__ == "__main__":
    main()
