#!/bin/bash
out=/tmp/numa_ab.txt; : > $out
NB=/work/main/build/release/numa/bench/numa_bench
for r in 1 2 3; do
 for v in glibc old-lowmem new-lowmem old-uma new-uma; do
  case $v in glibc) P=;; old-*) P=$OLD_LIB;; new-*) P=$NEW_LIB;; esac
  prof=${v#*-}
  for w in malloc-large mstress hera; do
   case $w in malloc-large) cmd="/tmp/malloc-large";; mstress) cmd="/tmp/mstress 2 50 25";; hera) cmd="$NB --workload hera --threads 2";; esac
   /usr/bin/time -f "$r $v $w %e s %U u %S sys %R flt %M KB" env ${P:+LD_PRELOAD=$P} MANYALLOC_NUMA_PROFILE=$prof $cmd 2>&1 >/dev/null | tail -1 >> $out
  done
 done
done
echo done >> $out
