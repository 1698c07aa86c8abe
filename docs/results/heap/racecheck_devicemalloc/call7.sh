#!/usr/bin/env bash
# Prepared for the next session, not yet run: repro.cu's rawbig and dynlate beside dyn under
# racecheck (8 rounds, 3 launches), rotating until UNTIL s into the call; one run of each without
# a tool first. Needs .carry/ncu/gen (call3.sh).
set -uo pipefail
start=$SECONDS
d=docs/results/heap/racecheck_devicemalloc
nvcc -std=c++20 -O3 -arch=sm_90 --expt-relaxed-constexpr -Iheap/include -Icommon/include -I.carry/ncu/gen \
  -o /tmp/repro $d/repro.cu > $OUT/repro_build.log 2>&1 || { tail $OUT/repro_build.log; exit 1; }
for v in rawbig dynlate; do /tmp/repro $v 8 3; echo "plain $v rc=$?"; done | tee $OUT/plain.log
mkdir -p $OUT/f; declare -A runs fails
for round in $(seq 1 100); do
  for v in rawbig dynlate dyn; do
    (( SECONDS - start > ${UNTIL:-240} )) && break 2
    timeout 60 compute-sanitizer --tool racecheck --error-exitcode 9 /tmp/repro $v 8 3 > $OUT/one.log 2>&1; rc=$?
    runs[$v]=$(( ${runs[$v]:-0} + 1 ))
    (( rc != 0 )) && { fails[$v]=$(( ${fails[$v]:-0} + 1 )); cp $OUT/one.log $OUT/f/${v}_$round.log; }
    echo "$round $v rc=$rc $(grep -E 'CUDA error|failed alloc' $OUT/one.log | head -1)" >> $OUT/runs.log
  done
done
for v in rawbig dynlate dyn; do echo "racecheck $v (rounds 8, launches 3): ${fails[$v]:-0} of ${runs[$v]:-0} failed"; done
rm -f $OUT/one.log; tar czf $OUT/fails.tgz -C $OUT f; rm -rf $OUT/f
