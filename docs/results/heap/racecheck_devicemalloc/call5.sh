#!/usr/bin/env bash
# Call 5: repro.cu's scatter and slabs variants (DynamicWarp over our heaps, two call sites) and
# dyn as the control, under racecheck (rounds 8, launches 3), rotating until UNTIL s into the call.
set -uo pipefail
start=$SECONDS
d=docs/results/heap/racecheck_devicemalloc
nvcc -std=c++20 -O3 -arch=sm_90 --expt-relaxed-constexpr -Iheap/include -Icommon/include -I.carry/ncu/gen \
  -o /tmp/repro $d/repro.cu > $OUT/repro_build.log 2>&1 || { tail $OUT/repro_build.log; exit 1; }
for v in scatter slabs; do /tmp/repro $v 8 3; echo "plain $v rc=$?"; done
mkdir -p $OUT/f; declare -A runs fails
for round in $(seq 1 100); do
  for v in scatter slabs dyn; do
    (( SECONDS - start > ${UNTIL:-200} )) && break 2
    timeout 60 compute-sanitizer --tool racecheck --error-exitcode 9 /tmp/repro $v 8 3 > $OUT/one.log 2>&1; rc=$?
    runs[$v]=$(( ${runs[$v]:-0} + 1 ))
    (( rc != 0 )) && { fails[$v]=$(( ${fails[$v]:-0} + 1 )); cp $OUT/one.log $OUT/f/${v}_$round.log; }
    echo "$round $v rc=$rc $(grep -E 'CUDA error|failed alloc' $OUT/one.log | head -1)" >> $OUT/runs.log
  done
done
for v in scatter slabs dyn; do echo "racecheck $v (rounds 8, launches 3): ${fails[$v]:-0} of ${runs[$v]:-0} failed"; done
rm -f $OUT/one.log; tar czf $OUT/fails.tgz -C $OUT f; rm -rf $OUT/f
