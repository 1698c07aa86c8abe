#!/usr/bin/env bash
# Issue 19: the free hint (19eec24) against the library before it (c023bcf), both built on the 2-core VM in
# the same Release tree, on three single-threaded mimalloc-bench workloads, bench.sh's arguments, allocators
# rotating. Run from the repository root with .carry/numa carried.
C=$PWD/.carry/numa
export LD_LIBRARY_PATH=$C
O=${OUT:-/tmp/out}/mib; mkdir -p $O
timeout ${RUN_S:-170} python3 numa/bench/run_mibench.py $O --mibench $C/mimalloc-bench --lib $C/libmanyalloc-numa-hintbase.so \
  --libdir $C --time $C/time --threads 16 --reps ${REPS:-4} --commit "${MANYALLOC_COMMIT:-unknown}" \
  --allocators manyalloc-uma --extra uma-hint=$C/libmanyalloc-numa-hint.so:uma \
  --tests glibc-simple espresso alloc-test1 > $O/runner.log 2>&1
echo "runner exit $?"; tail -3 $O/runner.log
rm -rf $O/output
cd ${OUT:-/tmp/out} && tar czf mib.tgz mib && rm -rf mib
