#!/usr/bin/env bash
# GPU tests at this commit, then repro.cu's variants under racecheck, each run a process of its own,
# rotating through the variants until RUNS rounds or 560 s into the call.
set -uo pipefail
GTEST_FILTER='-*ListBased*:*MultiList*:*Slabs*' TESTS_TIMEOUT_S=240 GPU_RUN_PACK=1 scripts/gpu_run.sh tests > $OUT/tests_stdout.log 2>&1
echo "tests: exit $?"; grep -E "exit|FAILED" $OUT/tests_stdout.log | tail -12
d=docs/results/heap/racecheck_devicemalloc
nvcc -std=c++20 -O3 -arch=sm_90 --expt-relaxed-constexpr -Iheap/include -Icommon/include -Ibuild-gpu/common/generated \
  -o /tmp/repro $d/repro.cu > $OUT/repro_build.log 2>&1 || { tail $OUT/repro_build.log; exit 1; }
mkdir -p $OUT/f; declare -A runs fails
for round in $(seq 1 ${RUNS:-12}); do
  for v in dyn chain dyn1 raw; do
    (( SECONDS > ${UNTIL:-560} )) && break 2
    timeout 40 compute-sanitizer --tool racecheck --error-exitcode 9 /tmp/repro $v > $OUT/one.log 2>&1; rc=$?
    runs[$v]=$(( ${runs[$v]:-0} + 1 ))
    if (( rc != 0 )); then fails[$v]=$(( ${fails[$v]:-0} + 1 )); cp $OUT/one.log $OUT/f/${v}_$round.log; fi
    echo "$round $v rc=$rc $(grep -E 'CUDA error|failed alloc' $OUT/one.log | head -1)" >> $OUT/repro_runs.log
  done
done
for v in dyn chain dyn1 raw; do echo "racecheck $v: ${fails[$v]:-0} of ${runs[$v]:-0} failed"; done | tee $OUT/repro_summary.txt
rm -f $OUT/one.log; tar czf $OUT/repro_fails.tgz -C $OUT f; rm -rf $OUT/f
