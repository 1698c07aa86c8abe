#!/usr/bin/env bash
# Issue 19 on the 16-core machine: the three rows that were more than 10% behind the fastest in
# mibench-16core-full-2026-12-01 (glibc-simple, cache-scratch1, cache-thrash1: single-threaded loops whose
# runs spread by up to 2.2x) and the three sub-second rows, with 9 repetitions instead of 5, all six
# allocators rotating. Run from the repository root with .carry/numa carried.
C=$PWD/.carry/numa
export LD_LIBRARY_PATH=$C
O=${OUT:-/tmp/out}/mib; mkdir -p $O
timeout 530 python3 numa/bench/run_mibench.py $O --mibench $C/mimalloc-bench --lib $C/libmanyalloc-numa.so \
  --libdir $C --time $C/time --threads 16 --reps 9 --commit "${MANYALLOC_COMMIT:-unknown}" \
  --allocators glibc jemalloc tcmalloc mimalloc tbbmalloc manyalloc-uma \
  --tests glibc-simple cache-scratch1 cache-thrash1 mleak10 cache-scratchN cache-thrashN > $O/runner.log 2>&1
echo "runner exit $?"; tail -3 $O/runner.log
rm -rf $O/output
cd ${OUT:-/tmp/out} && tar czf mib.tgz mib && rm -rf mib
