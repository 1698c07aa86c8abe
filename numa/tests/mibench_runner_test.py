#!/usr/bin/env python3
"""numa.bench.runner_wall_time: the wall time that numa/bench/run_mibench.py
records for a run is the program's, and its timeout still ends a run.

mimalloc-bench scores many workloads by wall time, some of them short, so
whatever the runner adds to a run decides rows of the comparison. The
runner must add no more than starting and reaping the program costs: its
wait must return when the program ends, not at its next look (run_one once
waited through Popen.wait(timeout=...), which polls with sleeps that grow to
50 ms).

The check compares the runner with a reference run of the same command,
started with posix_spawn and reaped by a blocking waitpid here, the two in
turns, so that a loaded machine slows both alike; the median of the
differences must stay below half of the old polling's step.

Usage: mibench_runner_test.py BENCH_DIR   (exit 77: no GNU time, skipped)
"""
import os
import statistics
import sys
import tempfile
import time

from mibench_runner_setup import runner_and_time

run_mibench, time_bin = runner_and_time()


def reference_wall(cmd, ru_path):
    """Wall seconds of `cmd` under GNU time, started and reaped directly."""
    args = run_mibench.timed_args(cmd, ru_path, time_bin)
    t0 = time.monotonic()
    pid = os.posix_spawn(args[0], args, dict(os.environ))
    os.waitpid(pid, 0)
    return time.monotonic() - t0


failures = []
with tempfile.TemporaryDirectory() as work:
    out = os.path.join(work, "out.txt")
    # Just past one of the old polls' looks: their worst case.
    cmd = "sleep 0.115"
    # Without and with the sampler of the peak RSS (rss_sampler.py, the
    # runner's default interval), whose stop must not delay the return.
    for interval_s in (0.0, 0.005):
        differences = []
        for _ in range(7):
            reference = reference_wall(cmd, os.path.join(work, "reference.rusage"))
            rc, wall, ru = run_mibench.run_one(cmd, work, dict(os.environ), None, out, 60, time_bin, interval_s)
            if rc != 0:
                failures.append(f"sleep exited with {rc}")
            differences.append(wall - reference)
        median = statistics.median(differences)
        print(f"sampling every {interval_s * 1000:g} ms: runner's wall time minus the reference run's, 7 pairs: "
              f"{[round(d * 1000, 1) for d in differences]} ms, median {median * 1000:.1f} ms")
        if median > 0.025:
            failures.append(f"the runner adds {median * 1000:.1f} ms to a run (allowed: 25 ms), "
                            f"sampling every {interval_s * 1000:g} ms")

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
