#!/usr/bin/env bash
# Call 3: repro.cu's variants under racecheck with more work per process (ROUNDS rounds per
# thread, LAUNCHES launches), rotating dyn raw chain gbox dyn1 until 540 s into the call;
# first 5 runs of dyn without a tool.
set -uo pipefail
start=$SECONDS; R=${ROUNDS:-8}; L=${LAUNCHES:-3}
d=docs/results/heap/racecheck_devicemalloc
nvcc -std=c++20 -O3 -arch=sm_90 --expt-relaxed-constexpr -Iheap/include -Icommon/include -I.carry/ncu/gen \
  -o /tmp/repro $d/repro.cu > $OUT/repro_build.log 2>&1 || { tail $OUT/repro_build.log; exit 1; }
for i in 1 2 3 4 5; do /tmp/repro dyn $R $L >> $OUT/plain.log 2>&1; echo "plain dyn rc=$?" >> $OUT/plain.log; done
grep -c "rc=0" $OUT/plain.log
mkdir -p $OUT/f; declare -A runs fails secs
for round in $(seq 1 100); do
  for v in dyn raw chain gbox dyn1; do
    (( SECONDS - start > 540 )) && break 2
    t0=$SECONDS
    timeout 60 compute-sanitizer --tool racecheck --error-exitcode 9 /tmp/repro $v $R $L > $OUT/one.log 2>&1; rc=$?
    runs[$v]=$(( ${runs[$v]:-0} + 1 )); secs[$v]=$(( ${secs[$v]:-0} + SECONDS - t0 ))
    if (( rc != 0 )); then fails[$v]=$(( ${fails[$v]:-0} + 1 )); cp $OUT/one.log $OUT/f/${v}_$round.log; fi
    echo "$round $v rc=$rc $((SECONDS - t0)) s $(grep -E 'CUDA error|failed alloc' $OUT/one.log | head -1)" >> $OUT/runs.log
  done
done
for v in dyn raw chain gbox dyn1; do echo "racecheck $v (rounds $R, launches $L): ${fails[$v]:-0} of ${runs[$v]:-0} failed, ${secs[$v]:-0} s"; done | tee $OUT/summary.txt
rm -f $OUT/one.log; tar czf $OUT/fails.tgz -C $OUT f; rm -rf $OUT/f
