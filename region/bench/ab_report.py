#!/usr/bin/env python3
"""Side-by-side table of two region bundles run alternately on one machine.

Each run is a folder with the region.jsonl of run_device.sh (for example the
workers16 profile); the i-th folder of each side is round i.

  ab_report.py --new LABEL DIR... --old LABEL DIR... [--jsonl OUT.jsonl]

Prints a markdown table: per benchmark row the median over all rounds of
each side, their ratio (new / old < 1: the new code is faster) and the ratio
of each round's medians, so that a ratio carried by one round shows. With
--jsonl, writes every record with its side ("bundle") and "round" added.
"""
import argparse
import gzip
import json
import statistics
import sys
from pathlib import Path


def row_key(r):
    if r["experiment"] == "list_exchange":
        levels = r.get("scheduler_levels")
        name = r["allocator"]
        if name == "myrmics-region":
            name += f" {r.get('transfer', '')} ({levels}-level)"
        return ("list exchange", name, r["threads"], r.get("nodes"))
    if r["experiment"] == "barnes_hut":
        return ("Barnes-Hut", r["allocator"], r["threads"], r.get("bodies", r.get("bytes")))
    if r["experiment"] == "delaunay":
        name = r["allocator"]
        if name == "manyalloc-region":  # as report.py's dl_variant
            name += f" {r.get('transfer', '?')} ({int(r.get('scheduler_levels', 1))}-level)"
        return ("Delaunay", name, r["threads"], int(r["points_initial"]))
    return None


def load(dirs, label, out):
    """Seconds of the verified records by row and round; prints how many
    records were not verified, and skips lines that are not JSON (a run cut
    short by its timeout, or inf/nan written by a C++ stream)."""
    by = {}
    unverified = 0
    for rnd, d in enumerate(dirs, start=1):
        path = Path(d) / "region.jsonl"
        if not path.exists() and path.with_name("region.jsonl.gz").exists():
            path = path.with_name("region.jsonl.gz")  # packed by scripts/pack_results.py
        if not path.exists():
            sys.exit(f"ab_report: no {path}")
        with (gzip.open(path, "rt") if path.suffix == ".gz" else open(path)) as f:
            lines = f.read().splitlines()
        for line in lines:
            if not line.startswith("{"):
                continue
            try:
                r = json.loads(line)
            except json.JSONDecodeError:
                print(f"ab_report: {path}: a line that is not JSON, skipped", file=sys.stderr)
                continue
            if out is not None:
                out.append({**r, "bundle": label, "round": rnd})
            k = row_key(r)
            if k is None:
                continue
            if not r.get("verified", True):
                unverified += 1
                continue
            by.setdefault(k, {}).setdefault(rnd, []).append(r["seconds"])
    if unverified:
        print(f"ab_report: {label}: {unverified} records not verified, left out", file=sys.stderr)
    return by


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--new", nargs="+", required=True, metavar=("LABEL", "DIR"))
    ap.add_argument("--old", nargs="+", required=True, metavar=("LABEL", "DIR"))
    ap.add_argument("--jsonl")
    a = ap.parse_args()
    if len(a.new) < 2 or len(a.old) < 2:
        sys.exit("ab_report: --new and --old each take a label and at least one folder")
    records = [] if a.jsonl else None
    new = load(a.new[1:], a.new[0], records)
    old = load(a.old[1:], a.old[0], records)
    print(f"| benchmark | variant | workers | size | {a.old[0]} s | {a.new[0]} s | new / old | per round |")
    print("|---|---|---|---|---|---|---|---|")
    order = lambda k: (k[0], k[1], k[2] or 0, k[3] or 0)
    for k in sorted(set(new) ^ set(old), key=order):
        side = a.new[0] if k in new else a.old[0]
        print(f"ab_report: only {side} has {k}", file=sys.stderr)
    for k in sorted(set(new) & set(old), key=order):
        n_all = [x for v in new[k].values() for x in v]
        o_all = [x for v in old[k].values() for x in v]
        mn, mo = statistics.median(n_all), statistics.median(o_all)
        rounds = [statistics.median(new[k][i]) / statistics.median(old[k][i])
                  for i in sorted(new[k]) if i in old[k] and statistics.median(old[k][i]) > 0]
        per = ", ".join(f"{x:.2f}" for x in rounds)
        ratio = f"{mn / mo:.2f}" if mo > 0 else "-"
        print(f"| {k[0]} | {k[1]} | {k[2]} | {k[3]} | {mo:.4f} | {mn:.4f} | {ratio} | {per} |")
    if records is not None:
        with open(a.jsonl, "w") as f:
            for r in records:
                f.write(json.dumps(r) + "\n")


if __name__ == "__main__":
    main()
