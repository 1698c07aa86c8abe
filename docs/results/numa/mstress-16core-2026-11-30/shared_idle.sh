#!/usr/bin/env bash
# The shared idle allowance (MANYALLOC_NUMA_SHARED_IDLE, default 8 MiB) against mstressN's faults, and
# what a larger one costs rptest's and glibc-thread's peak RSS (16-core machine; issue 19 diagnosis).
C=$PWD/.carry/numa; B=$C/mimalloc-bench/out/bench; T=$C/time
export LD_LIBRARY_PATH=$C
cd $B
fmt="%e s wall %U user %S sys %M KiB %R minor-faults"
for i in 1 2; do
  for si in 8M 64M 256M 1G; do
    $T -f "mstress uma shared_idle=$si $fmt" env MANYALLOC_NUMA_SHARED_IDLE=$si LD_PRELOAD=$C/libmanyalloc-numa.so ./mstress 16 50 25 >/dev/null
  done
  $T -f "mstress mimalloc $fmt" env LD_PRELOAD=$C/libmimalloc.so.2 ./mstress 16 50 25 >/dev/null
  $T -f "mstress glibc $fmt" ./mstress 16 50 25 >/dev/null
  for si in 8M 256M; do
    # rptest runs about 16 s whatever its loop count: once each
    ((i == 1)) && $T -f "rptest uma shared_idle=$si $fmt" env MANYALLOC_NUMA_SHARED_IDLE=$si LD_PRELOAD=$C/libmanyalloc-numa.so ./rptest 16 0 1 2 500 1000 100 8 16000 >/dev/null
    $T -f "glibc-thread uma shared_idle=$si $fmt" env MANYALLOC_NUMA_SHARED_IDLE=$si LD_PRELOAD=$C/libmanyalloc-numa.so ./glibc-thread 16 >/dev/null
  done
  ((i == 1)) && $T -f "rptest glibc $fmt" ./rptest 16 0 1 2 500 1000 100 8 16000 >/dev/null
  $T -f "glibc-thread glibc $fmt" ./glibc-thread 16 >/dev/null
done 2>&1 | grep wall
