#!/usr/bin/env bash
# Issue 19: rptestN and larsonN at 16 threads, 5 repetitions, the library before the tiny free caches
# (.carry/numa/libmanyalloc-numa.so, d788517) against the one with caches of 2,048 chunks up to 64 B
# (.carry/numa/libmanyalloc-numa-tiny.so, c602c22), each in the uma and the lowmem profile.
# Run from the repository root with .carry/numa carried.
C=$PWD/.carry/numa
export LD_LIBRARY_PATH=$C
O=${OUT:-/tmp/out}/mib; mkdir -p $O
timeout 560 python3 numa/bench/run_mibench.py $O --mibench $C/mimalloc-bench --lib $C/libmanyalloc-numa.so \
  --libdir $C --time $C/time --threads 16 --reps 5 --commit "${MANYALLOC_COMMIT:-unknown}" \
  --allocators manyalloc-uma manyalloc-lowmem \
  --extra uma-tiny-cache=$C/libmanyalloc-numa-tiny.so:uma lowmem-tiny-cache=$C/libmanyalloc-numa-tiny.so:lowmem \
  --tests rptestN larsonN > $O/runner.log 2>&1
echo "runner exit $?"; tail -3 $O/runner.log
rm -rf $O/output
cd ${OUT:-/tmp/out} && tar czf mib.tgz mib && rm -rf mib
