#!/usr/bin/env bash
# Runs the node allocator benchmark from .carry/numa/ (see prepare_carry.sh)
# on the machine at hand: 1, 2, 8 and all-cores threads, every allocator,
# three repetitions (the report shows medians), about 2.5 minutes on the
# 16-core machine. The scale makes the shortest runs (t-test1, larson at 16
# threads) last about 0.2-0.3 s instead of 0.05 s; run_bench.sh applies its
# per-workload factors (NUMA_WEIGHTS) on top. Writes OUTDIR/results.jsonl, run.log,
# meta.json; make the report with
#   python3 numa/bench/report.py OUTDIR docs/results/numa/<name>
#   numa/bench/run_device.sh OUTDIR        (from the repository root)
# Environment: NUMA_REPS (default 3), NUMA_SCALE (default 0.75), NUMA_THREADS,
# NUMA_WEIGHTS (see run_bench.sh).
set -euo pipefail
out=${1:?usage: run_device.sh OUTDIR}
repo=$(cd "$(dirname "$0")/../.." && pwd)
carry=${NUMA_CARRY:-$repo/.carry/numa}
[[ -x $carry/numa_bench ]] || { echo "no $carry/numa_bench: run numa/bench/prepare_carry.sh first"; exit 1; }
export LD_LIBRARY_PATH=$carry${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export NUMA_BENCH=$carry/numa_bench NUMA_LIB=$carry/libmanyalloc-numa.so NUMA_LIBDIR=$carry
export NUMA_REPS=${NUMA_REPS:-3} NUMA_SCALE=${NUMA_SCALE:-0.75}
export NUMA_COMMIT=$(cat "$carry/COMMIT" 2>/dev/null || echo unknown)
n=$(nproc)
read -r -a threads <<<"${NUMA_THREADS:-$(printf '%s\n' 1 2 8 "$n" | awk -v n="$n" '$1<=n' | sort -nu | tr '\n' ' ')}"
mkdir -p "$out"
{ echo "host $(hostname), $n CPUs, threads ${threads[*]}"; LD_LIBRARY_PATH=$carry ldd "$NUMA_LIB"; } >"$out/env.txt"
"$repo/numa/bench/run_bench.sh" "$out" "${threads[@]}"
