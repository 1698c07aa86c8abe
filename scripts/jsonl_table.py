#!/usr/bin/env python3
"""Turns benchmark JSON Lines into a markdown table (one row per record),
with the ratio of each allocator's ops/s to the baseline's for the same
experiment and size. Usage: jsonl_table.py FILE.jsonl [baseline-substring]"""
import datetime
import gzip
import json
import subprocess
import sys


def main():
    path = sys.argv[1]
    baseline = sys.argv[2] if len(sys.argv) > 2 else None
    rows = [json.loads(line) for line in (gzip.open(path, "rt") if str(path).endswith(".gz") else open(path)) if line.strip()]
    if not rows:
        sys.exit("no records in " + path)
    if baseline is None:
        names = [r["allocator"] for r in rows]
        baseline = next((b for b in ("DeviceMalloc", "HostMalloc") if any(b in n for n in names)), names[0])
    try:
        commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True,
                                text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        commit = "unknown"
    print(f"# Allocator comparison\n")
    print(f"- device: {rows[0]['device']}")
    print(f"- commit: {commit}")
    print(f"- date: {datetime.date.today().isoformat()}")
    print(f"- source: `{path}`\n")
    print("| experiment | bytes | threads | allocator | M ops/s | vs baseline | fails | verified |")
    print("|---|---:|---:|---|---:|---:|---:|---|")
    for r in rows:
        base = [b for b in rows if b["experiment"] == r["experiment"] and b["bytes"] == r["bytes"]
                and baseline in b["allocator"]]
        ratio = r["ops_per_s"] / base[0]["ops_per_s"] if base and base[0]["ops_per_s"] else float("nan")
        name = r["allocator"].split(" ")[0].replace("CreationPolicy=", "")
        print(f"| {r['experiment']} | {r['bytes']} | {r['threads']} | {name} | "
              f"{r['ops_per_s'] / 1e6:.2f} | {ratio:.1f}x | {r['fails']} | {'yes' if r['verified'] else 'NO'} |")


if __name__ == "__main__":
    main()
