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
#
#   numa/bench/run_device.sh --mibench OUTDIR
# runs mimalloc-bench instead (issue 19 item 1; needs .carry/numa/mimalloc-bench,
# which prepare_carry.sh builds from the peers folder): every program with
# bench.sh's full arguments, at 2 and 16 threads (NUMA_THREADS), under glibc,
# jemalloc, tcmalloc, mimalloc, tbbmalloc and our library in the uma, numa and
# lowmem profiles, NUMA_REPS repetitions (default 1). One repetition of one
# thread count takes about 9 minutes there (19 programs x 8 allocators; larson,
# xmalloc-test and rptest run for fixed times): give each thread count its own
# command, e.g. NUMA_THREADS=16 ... --mibench OUT (results.jsonl is appended
# to, so the runs add up in one OUT). Report:
#   python3 numa/bench/mibench_report.py OUTDIR docs/results/numa/mibench-<name>
# MIBENCH_TESTS: a space-separated subset of mimalloc-bench names.
set -euo pipefail
mibench=0
if [[ ${1:-} == --mibench ]]; then mibench=1; shift; fi
out=${1:?usage: run_device.sh [--mibench] OUTDIR}
repo=$(cd "$(dirname "$0")/../.." && pwd)
carry=${NUMA_CARRY:-$repo/.carry/numa}
[[ -x $carry/numa_bench ]] || { echo "no $carry/numa_bench: run numa/bench/prepare_carry.sh first"; exit 1; }
export LD_LIBRARY_PATH=$carry${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
if ((mibench)); then
  [[ -d $carry/mimalloc-bench/out/bench ]] || { echo "mimalloc-bench skipped: no $carry/mimalloc-bench (prepare_carry.sh builds it from the peers folder)"; exit 1; }
  read -r -a mt <<<"${NUMA_THREADS:-2 16}"
  mkdir -p "$out"
  { echo "host $(hostname), $(nproc) CPUs, threads ${mt[*]}"; LD_LIBRARY_PATH=$carry ldd "$carry/libmanyalloc-numa.so"; } >"$out/env.txt"
  # Our library and the peers' preload from the carry folder; the programs
  # themselves need nothing beyond libc, libm and libstdc++.
  exec python3 "$repo/numa/bench/run_mibench.py" "$out" --mibench "$carry/mimalloc-bench" \
    --lib "$carry/libmanyalloc-numa.so" --libdir "$carry" --time "$carry/time" \
    --threads "${mt[@]}" --reps "${NUMA_REPS:-1}" --commit "$(cat "$carry/COMMIT" 2>/dev/null || echo unknown)" \
    ${MIBENCH_TESTS:+--tests $MIBENCH_TESTS}
fi
export NUMA_BENCH=$carry/numa_bench NUMA_LIB=$carry/libmanyalloc-numa.so NUMA_LIBDIR=$carry
export NUMA_REPS=${NUMA_REPS:-3} NUMA_SCALE=${NUMA_SCALE:-0.75}
export NUMA_COMMIT=$(cat "$carry/COMMIT" 2>/dev/null || echo unknown)
n=$(nproc)
read -r -a threads <<<"${NUMA_THREADS:-$(printf '%s\n' 1 2 8 "$n" | awk -v n="$n" '$1<=n' | sort -nu | tr '\n' ' ')}"
mkdir -p "$out"
{ echo "host $(hostname), $n CPUs, threads ${threads[*]}"; LD_LIBRARY_PATH=$carry ldd "$NUMA_LIB"; } >"$out/env.txt"
"$repo/numa/bench/run_bench.sh" "$out" "${threads[@]}"
