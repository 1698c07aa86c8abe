#!/usr/bin/env bash
# Issue 19, second call: the rows of call 1 that moved either way, 5 repetitions, the library before
# (.carry/numa/libmanyalloc-numa.so, d788517) against free caches of 2,048 chunks up to 64 B
# (.carry/numa/libmanyalloc-numa-tiny.so, c602c22) beside mimalloc. Run from the repository root
# with .carry/numa carried.
C=$PWD/.carry/numa
export LD_LIBRARY_PATH=$C
O=${OUT:-/tmp/out}/mib; mkdir -p $O
timeout 540 python3 numa/bench/run_mibench.py $O --mibench $C/mimalloc-bench --lib $C/libmanyalloc-numa.so \
  --libdir $C --time $C/time --threads 16 --reps 5 --commit "${MANYALLOC_COMMIT:-unknown}" \
  --allocators mimalloc manyalloc-uma --extra uma-tiny-cache=$C/libmanyalloc-numa-tiny.so:uma \
  --tests cfrac espresso alloc-test1 glibc-simple glibc-thread mleak100 > $O/runner.log 2>&1
echo "runner exit $?"; tail -3 $O/runner.log
rm -rf $O/output
cd ${OUT:-/tmp/out} && tar czf mib.tgz mib && rm -rf mib
