#!/usr/bin/env python3
"""numa.bench.runner_wall_time: the wall time that numa/bench/run_mibench.py
records for a run is the program's, and its timeout still ends a run.

mimalloc-bench scores many workloads by wall time, some of 0.1-0.3 s at 16
threads (mleak10, cache-scratchN, cache-thrashN), so a runner that adds tens
of milliseconds decides rows of the comparison. Until this test, run_one
waited through Popen.wait(timeout=...), which polls and sleeps up to 50 ms
between looks: every wall time was rounded up to its next look.

Usage: mibench_runner_test.py BENCH_DIR   (exit 77: no GNU time, skipped)
"""
import os
import shutil
import statistics
import sys
import tempfile
import time

bench_dir = sys.argv[1]
sys.path.insert(0, bench_dir)
import run_mibench  # noqa: E402

time_bin = shutil.which("time") or "/usr/bin/time"
if not os.access(time_bin, os.X_OK):
    print("skipped: no GNU time (scripts/setup.sh installs it)")
    sys.exit(77)

failures = []
with tempfile.TemporaryDirectory() as work:
    out = os.path.join(work, "out.txt")
    # A program of known length: sleep's own start is a millisecond or two.
    # 0.115 s is just past one of the old polls' looks (their worst case).
    length = 0.115
    excess = []
    for _ in range(5):
        rc, wall, ru = run_mibench.run_one(f"sleep {length}", work, dict(os.environ), None, out, 60, time_bin)
        if rc != 0:
            failures.append(f"sleep exited with {rc}")
        excess.append(wall - length)
    median = statistics.median(excess)
    print(f"wall time minus the program's length, 5 runs: {[round(e * 1000, 1) for e in excess]} ms, "
          f"median {median * 1000:.1f} ms")
    if median < 0:
        failures.append("a wall time shorter than the program")
    if median > 0.025:
        failures.append(f"the runner adds {median * 1000:.1f} ms to a {length} s run (allowed: 25 ms)")

    # The timeout still ends a run that outlives it, with status 124.
    t0 = time.monotonic()
    rc, wall, ru = run_mibench.run_one("sleep 30", work, dict(os.environ), None, out, 0.3, time_bin)
    took = time.monotonic() - t0
    print(f"timed-out run: status {rc}, wall {wall:.3f} s, returned after {took:.3f} s")
    if rc != 124:
        failures.append(f"a run past its timeout returned status {rc}, not 124")
    if took > 10:
        failures.append(f"a run with a 0.3 s timeout returned after {took:.1f} s")

for f in failures:
    print("FAILED:", f)
sys.exit(1 if failures else 0)
