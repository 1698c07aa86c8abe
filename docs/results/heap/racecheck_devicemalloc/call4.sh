#!/usr/bin/env bash
# Call 4: handover.cu (no allocator) under racecheck and without a tool, 10 runs per variant.
set -uo pipefail
d=docs/results/heap/racecheck_devicemalloc
nvcc -std=c++20 -O3 -arch=sm_90 -o /tmp/handover $d/handover.cu || exit 1
for v in shared global shared1; do /tmp/handover $v; echo "plain $v rc=$?"; done
declare -A runs fails
for round in $(seq 1 10); do
  for v in shared global shared1; do
    timeout 60 compute-sanitizer --tool racecheck --error-exitcode 9 /tmp/handover $v > $OUT/one.log 2>&1; rc=$?
    runs[$v]=$(( ${runs[$v]:-0} + 1 )); (( rc != 0 )) && fails[$v]=$(( ${fails[$v]:-0} + 1 ))
    echo "$round $v rc=$rc $(grep -E 'CUDA error|wrong values' $OUT/one.log | head -1)" >> $OUT/runs.log
  done
done
for v in shared global shared1; do echo "racecheck $v: ${fails[$v]:-0} of ${runs[$v]:-0} failed"; done
cp $OUT/one.log $OUT/last_racecheck.log; rm -f $OUT/one.log
