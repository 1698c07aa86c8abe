#!/usr/bin/env bash
# Call 6: handover.cu's sharedbig (the root asks for 2,048-5,632 B) and shared under racecheck.
set -uo pipefail
d=docs/results/heap/racecheck_devicemalloc
nvcc -std=c++20 -O3 -arch=sm_90 -o /tmp/handover $d/handover.cu || exit 1
/tmp/handover sharedbig; echo "plain sharedbig rc=$?"
declare -A runs fails
for round in $(seq 1 8); do
  for v in sharedbig shared; do
    (( SECONDS > 100 )) && break 2
    timeout 40 compute-sanitizer --tool racecheck --error-exitcode 9 /tmp/handover $v > $OUT/one.log 2>&1; rc=$?
    runs[$v]=$(( ${runs[$v]:-0} + 1 )); (( rc != 0 )) && fails[$v]=$(( ${fails[$v]:-0} + 1 ))
    echo "$round $v rc=$rc $(grep -E 'CUDA error|wrong values' $OUT/one.log | head -1)" | tee -a $OUT/runs.log
  done
done
for v in sharedbig shared; do echo "racecheck $v: ${fails[$v]:-0} of ${runs[$v]:-0} failed"; done
