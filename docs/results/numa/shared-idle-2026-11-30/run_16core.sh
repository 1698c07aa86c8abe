#!/bin/bash
# 16-core: MANYALLOC_NUMA_SHARED_IDLE 0 vs 8M (uma) beside glibc and mimalloc; bench.sh arguments at 16 threads
N=.carry/numa; B=$PWD/$N/mimalloc-bench/out/bench; T=$PWD/$N/time
export LD_LIBRARY_PATH=$PWD/$N
run() { local label=$1 lib=$2 name=$3; shift 3
  out=$(cd $B && env $ENVX LD_PRELOAD=$lib timeout 60 $T -f "TIME %e s %M KiB %R faults" "$@" 2>&1)
  echo "$label $name $(echo "$out" | grep '^TIME' | tail -1 | cut -c6-) | $(echo "$out" | grep -iE 'free/sec|throughput|ops/CPU' | tail -1)"; }
nproc
for v in glibc mimalloc shared0 shared8M shared0 shared8M; do
 for _ in 1; do
  case $v in glibc) L=""; ENVX="";; mimalloc) L=$PWD/$N/libmimalloc.so.2; ENVX="";;
    shared0) L=$PWD/$N/shared/libmanyalloc-numa.so; ENVX="MANYALLOC_NUMA_PROFILE=uma MANYALLOC_NUMA_SHARED_IDLE=0";;
    shared8M) L=$PWD/$N/shared/libmanyalloc-numa.so; ENVX="MANYALLOC_NUMA_PROFILE=uma MANYALLOC_NUMA_SHARED_IDLE=8M";; esac
  run $v "$L" xmalloc-testN ./xmalloc-test -w 16 -t 5 -s 64
  run $v "$L" rptestN ./rptest 16 0 1 2 500 1000 100 8 16000
  run $v "$L" mstressN ./mstress 16 50 25
  run $v "$L" larsonN ./larson 5 8 1000 5000 100 4141 16
 done
done
