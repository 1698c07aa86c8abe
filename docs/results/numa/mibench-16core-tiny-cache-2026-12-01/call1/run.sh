#!/usr/bin/env bash
# Issue 19 on the 16-core machine: free caches of 2,048 chunks for the classes up to 64 B
# (.carry/numa/libmanyalloc-numa-tiny.so, this commit's numa code built in Release) against the library
# before (.carry/numa/libmanyalloc-numa.so, d788517), beside mimalloc and tcmalloc, 3 repetitions.
# Run from the repository root with .carry/numa carried.
C=$PWD/.carry/numa
export LD_LIBRARY_PATH=$C
O=${OUT:-/tmp/out}/mib; mkdir -p $O
timeout 540 python3 numa/bench/run_mibench.py $O --mibench $C/mimalloc-bench --lib $C/libmanyalloc-numa.so \
  --libdir $C --time $C/time --threads 16 --reps 3 --commit "${MANYALLOC_COMMIT:-unknown}" \
  --allocators tcmalloc mimalloc manyalloc-uma --extra uma-tiny-cache=$C/libmanyalloc-numa-tiny.so:uma \
  --tests glibc-simple glibc-thread xmalloc-testN larsonN mstressN cfrac espresso alloc-test1 mleak10 > $O/runner.log 2>&1
echo "runner exit $?"; tail -3 $O/runner.log
rm -rf $O/output
cd ${OUT:-/tmp/out} && tar czf mib.tgz mib && rm -rf mib
