#!/usr/bin/env bash
# Issue 19 on the 16-core machine, one call (run from the repository root, .carry/numa carried):
# 1. mstressN (bench.sh's `mstress 16 50 25`) under uma with its retention options swept, beside
#    glibc and mimalloc, five rounds in rotation: wall, user, system, peak RSS, minor faults.
# 2. The runner's sampled peak RSS against GNU time's on the small rows, sampler on and off.
C=$PWD/.carry/numa; B=$C/mimalloc-bench/out/bench; T=$C/time; R=$PWD
export LD_LIBRARY_PATH=$C
O=${OUT:-/tmp/out}/sweep; mkdir -p $O
(
cd $B
run() { local label=$1; shift; $T -f "$label %e s wall %U user %S sys %M KiB %R minor-faults" "$@" ./mstress 16 50 25 > /dev/null; }
U="LD_PRELOAD=$C/libmanyalloc-numa.so"
for i in 1 2 3 4 5; do
  run glibc env
  run mimalloc env LD_PRELOAD=$C/libmimalloc.so.2
  run uma env $U
  run uma-peak50 env $U MANYALLOC_NUMA_SHARED_IDLE_PEAK=50
  run uma-peak100 env $U MANYALLOC_NUMA_SHARED_IDLE_PEAK=100
  run uma-idle64M env $U MANYALLOC_NUMA_SHARED_IDLE=64M
  run uma-idle64M-peak100 env $U MANYALLOC_NUMA_SHARED_IDLE=64M MANYALLOC_NUMA_SHARED_IDLE_PEAK=100
  run uma-purge100 env $U MANYALLOC_NUMA_PURGE_MS=100
done 2>&1 | grep wall
for cfg in "" "MANYALLOC_NUMA_SHARED_IDLE_PEAK=100" "MANYALLOC_NUMA_SHARED_IDLE=64M MANYALLOC_NUMA_SHARED_IDLE_PEAK=100"; do
  echo "== uma statistics: ${cfg:-default}"
  env $U $cfg MANYALLOC_NUMA_STATS=1 ./mstress 16 50 25 2>&1 >/dev/null | tail -9
done
) > $O/mstress_sweep.txt 2>&1
cat $O/mstress_sweep.txt | tail -40
# 2. sampler on (default 5 ms) and off, glibc and uma, the small rows
for iv in 5 0; do
  timeout 200 python3 numa/bench/run_mibench.py $O/rss$iv --mibench $C/mimalloc-bench --lib $C/libmanyalloc-numa.so \
    --libdir $C --time $T --threads 16 --reps 3 --commit "${MANYALLOC_COMMIT:-unknown}" --rss-interval-ms $iv \
    --allocators glibc manyalloc-uma --tests glibc-thread mleak10 mleak100 espresso > $O/rss$iv.log 2>&1
  rm -rf $O/rss$iv/output
done
tail -5 $O/rss5.log $O/rss0.log
cd ${OUT:-/tmp/out} && tar czf sweep.tgz sweep && rm -rf sweep
