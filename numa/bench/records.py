"""The records file of a results folder: FILE, or FILE.gz once
scripts/pack_results.py packed it (docs/results/README.md)."""
import gzip
import os


def open_records(folder, name="results.jsonl"):
    """Opens folder/name as text, or folder/name.gz where only that exists."""
    path = os.path.join(folder, name)
    if not os.path.exists(path) and os.path.exists(path + ".gz"):
        return gzip.open(path + ".gz", "rt")
    return open(path)
