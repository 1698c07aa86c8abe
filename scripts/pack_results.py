#!/usr/bin/env python3
"""Stores the large text records under docs/results gzipped.

Why: the GPU machine receives a copy of the whole working tree (tracked
files plus what a call carries) and refuses one above 64 MiB; raw JSON Lines
records of the benchmark runs made up most of it. Each tracked text file
(.jsonl, .log, .txt, .csv) under docs/results of more than --min-bytes
bytes is replaced by FILE.gz (gzip -9, no name or time stored, so packing
twice gives the same bytes), and every inline Markdown link to it in a
tracked .md file is pointed at FILE.gz; all of it is staged. Only tracked
files are looked at: `git add` new results first. The report scripts read
FILE.gz as they read FILE; `zcat FILE.gz` shows it.

Usage: scripts/pack_results.py [--min-bytes N] [--dry-run]
"""
import argparse
import gzip
import os
import re
import subprocess
import sys

TEXT_SUFFIXES = (".jsonl", ".log", ".txt", ".csv")
LINK = re.compile(r"\]\(([^)\s#]+)(#[^)\s]*)?\)")


def tracked(root, *paths):
    out = subprocess.run(["git", "-C", root, "ls-files", "-z", "--", *paths], check=True, capture_output=True).stdout
    return [p for p in out.decode().split("\0") if p]


def pack(root, rel):
    src = os.path.join(root, rel)
    with open(src, "rb") as f:
        data = f.read()
    with open(src + ".gz", "wb") as raw, gzip.GzipFile(filename="", mode="wb", compresslevel=9, fileobj=raw, mtime=0) as z:
        z.write(data)
    subprocess.run(["git", "-C", root, "rm", "-q", "--", rel], check=True)
    subprocess.run(["git", "-C", root, "add", "--", rel + ".gz"], check=True)


def relink(root, md_rel, packed):
    """Points the links of one Markdown file at the packed files; returns how many it changed."""
    path = os.path.join(root, md_rel)
    with open(path, encoding="utf-8") as f:
        text = f.read()
    base = os.path.dirname(md_rel)
    changed = 0

    def swap(m):
        nonlocal changed
        target = m.group(1)
        if "://" in target:
            return m.group(0)
        if os.path.normpath(os.path.join(base, target)) not in packed:
            return m.group(0)
        changed += 1
        return "](" + target + ".gz" + (m.group(2) or "") + ")"

    text = LINK.sub(swap, text)
    if changed:
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
        subprocess.run(["git", "-C", root, "add", "--", md_rel], check=True)
    return changed


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--min-bytes", type=int, default=150_000, help="pack text files larger than this (default 150000)")
    ap.add_argument("--dry-run", action="store_true", help="list what would be packed, change nothing")
    a = ap.parse_args()
    if a.min_bytes < 1:
        sys.exit("pack_results: --min-bytes must be at least 1")
    root = subprocess.run(["git", "rev-parse", "--show-toplevel"], check=True, capture_output=True).stdout.decode().strip()
    big = [p for p in tracked(root, "docs/results")
           if p.endswith(TEXT_SUFFIXES) and os.path.getsize(os.path.join(root, p)) > a.min_bytes]
    before = sum(os.path.getsize(os.path.join(root, p)) for p in big)
    for p in big:
        print(f"{os.path.getsize(os.path.join(root, p)):>10} {p}")
    if a.dry_run or not big:
        print(f"{len(big)} files, {before} bytes" + (" (dry run)" if a.dry_run else ""))
        return
    for p in big:
        pack(root, p)
    after = sum(os.path.getsize(os.path.join(root, p + ".gz")) for p in big)
    packed = set(big)
    links = sum(relink(root, md, packed) for md in tracked(root, "*.md"))
    print(f"{len(big)} files packed: {before} -> {after} bytes; {links} links updated (all staged: commit them)")


if __name__ == "__main__":
    main()
