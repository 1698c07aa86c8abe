#!/bin/bash
B=/work/main/.carry/numa/mimalloc-bench/out/bench; T=/work/main/.carry/numa/time
LIB=/tmp/numab/numa/libmanyalloc-numa.so
run() { local label=$1 name=$2; shift 2; (cd $B && env $ENVX LD_PRELOAD=$L timeout 60 $T -f "$label $name %e s %M KiB %R faults" "$@" 2>&1 >/dev/null | tail -1); }
for v in glibc s0 s8M; do
  case $v in glibc) L=""; ENVX="";; s0) L=$LIB; ENVX="MANYALLOC_NUMA_PROFILE=uma MANYALLOC_NUMA_SHARED_IDLE=0";; s8M) L=$LIB; ENVX="MANYALLOC_NUMA_PROFILE=uma";; esac
  run $v larsonN ./larson 5 8 1000 5000 100 4141 2
  run $v larson-sizedN ./larson-sized 5 8 1000 5000 100 4141 2
  run $v alloc-testN ./alloc-test 2
  run $v cache-scratchN ./cache-scratch 2 1000 1 2000000
  run $v mleak100 ./mleak 50
  run $v glibc-thread ./glibc-thread 2
  run $v malloc-large ./malloc-large
  run $v cfrac ./cfrac 17545186520507317056371138836327483792789528
done
