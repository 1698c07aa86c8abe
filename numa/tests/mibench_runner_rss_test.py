#!/usr/bin/env python3
"""numa.bench.runner_sampled_rss: numa/bench/run_mibench.py records the
program's own peak resident set, sampled from /proc (rss_sampler.py), beside
GNU time's ru_maxrss.

GNU time's figure is the kernel's high-water mark, which on kernels from 6.2
follows approximate per-CPU counters (rss_sampler.py), so the runner samples
VmRSS of the program after its exec. The check runs a program that touches 64 MiB
and holds it for 0.3 s: its sampled peak must hold those pages (anonymous)
and stay below what two such buffers would take; with sampling off the
fields are absent.

Usage: mibench_runner_rss_test.py BENCH_DIR   (exit 77: no GNU time, skipped)
"""
import os
import shlex
import sys
import tempfile

from mibench_runner_setup import runner_and_time

run_mibench, time_bin = runner_and_time()

mib = 1 << 20
program = ("import time; b = bytearray(64 << 20); "
           "[b.__setitem__(i, 1) for i in range(0, len(b), 4096)]; time.sleep(0.3)")
cmd = f"{shlex.quote(sys.executable)} -c {shlex.quote(program)}"
failures = []
with tempfile.TemporaryDirectory() as work:
    out = os.path.join(work, "out.txt")
    rc, wall, ru = run_mibench.run_one(cmd, work, dict(os.environ), None, out, 60, time_bin, 0.001)
    print(f"sampled: status {rc}, wall {wall:.2f} s, {ru}")
    if rc != 0:
        failures.append(f"the program exited with {rc}: {open(out).read()[-300:]}")
    peak, anon = ru.get("rss_sampled_bytes", 0), ru.get("rss_anon_bytes", 0)
    if ru.get("rss_samples", 0) < 10:
        failures.append(f"{ru.get('rss_samples', 0)} samples in a run of {wall:.2f} s at 1 ms")
    if not 64 * mib <= anon <= peak < 128 * mib:
        failures.append(f"sampled peak {peak / mib:.1f} MiB, anonymous {anon / mib:.1f} MiB at it: "
                        "expected the 64 MiB buffer (anonymous) and less than 128 MiB in all")
    rc, wall, ru = run_mibench.run_one(cmd, work, dict(os.environ), None, out, 60, time_bin, 0)
    print(f"not sampled: status {rc}, {ru}")
    if any(k.startswith("rss_") for k in ru):
        failures.append(f"sampling off still recorded {sorted(k for k in ru if k.startswith('rss_'))}")

for f in failures:
    print("FAILED:", f)
sys.exit(1 if failures else 0)
