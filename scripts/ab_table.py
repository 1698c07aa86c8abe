#!/usr/bin/env python3
"""Side-by-side table of two runs of the same benchmark (an A/B of two
trees): for every (experiment, launch, allocator, threads, size) the median
over all records of each file, and new/base: of the launch time in us, or
with --rate of ops_per_s in G/s. Records that failed verification or had
failed requests are marked; a run that crashed (no time) is counted in its
row as crashed.
Usage: ab_table.py [--rate] BASE.jsonl NEW.jsonl"""
import gzip
import json
import statistics
import sys


def load(path, field):
    groups = {}
    try:
        lines = (gzip.open(path, "rt") if str(path).endswith(".gz") else open(path)).readlines()
    except FileNotFoundError:
        print(f"ab_table.py: no {path}: its column stays empty", file=sys.stderr)
        return groups
    for line in lines:
        if not line.strip():
            continue
        r = json.loads(line)
        if r.get("experiment") == "meta" or r.get("skipped"):
            continue
        size = r.get("size") or r.get("bytes", "")
        key = (r["experiment"], r.get("launch", ""), r["allocator"], str(r.get("threads", "")), str(size))
        g = groups.setdefault(key, {"values": [], "bad": False, "crashed": 0})
        if r.get("crash") or not r.get("seconds"):
            g["crashed"] += 1
            continue
        g["values"].append(r[field])
        g["bad"] |= bool(r.get("fails")) or not r.get("verified", True)
    return groups


def main():
    args = sys.argv[1:]
    rate = "--rate" in args
    args = [a for a in args if a != "--rate"]
    if len(args) != 2:
        sys.exit(__doc__)
    field, scale, unit = ("ops_per_s", 1e-9, "G/s") if rate else ("seconds", 1e6, "us")
    base, new = load(args[0], field), load(args[1], field)
    print(f"| experiment | launch | allocator | threads | size | base {unit} | new {unit} | new/base |")
    print("|---|---|---|---|---|---:|---:|---:|")
    for key in sorted(set(base) | set(new), key=lambda k: (k[0], k[1], k[2], k[3].zfill(8), k[4].zfill(6))):
        cells, text = [], []
        for g in (base.get(key), new.get(key)):
            ok = g is not None and g["values"]
            cells.append(statistics.median(g["values"]) * scale if ok else None)
            t = "-" if not ok else f"{cells[-1]:.{2 if rate else 1}f}{' (fails)' if g['bad'] else ''}"
            if g is not None and g["crashed"]:
                t += f" ({g['crashed']} crashed)"
            text.append(t)
        ratio = f"{cells[1] / cells[0]:.3f}" if all(cells) else "-"
        print(f"| {' | '.join(key)} | {text[0]} | {text[1]} | {ratio} |")


if __name__ == "__main__":
    main()
