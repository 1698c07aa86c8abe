"""What the runner tests (mibench_runner_test.py, mibench_runner_rss_test.py)
share: the runner module from BENCH_DIR (their first argument) and GNU time,
or exit 77 (ctest's skip) where GNU time is missing."""
import os
import shutil
import sys


def runner_and_time():
    """(the run_mibench module, the path of GNU time)."""
    sys.path.insert(0, sys.argv[1])
    import run_mibench
    time_bin = shutil.which("time") or "/usr/bin/time"
    if not os.access(time_bin, os.X_OK):
        print("skipped: no GNU time (scripts/setup.sh installs it)")
        sys.exit(77)
    return run_mibench, time_bin
