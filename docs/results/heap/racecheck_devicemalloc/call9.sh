#!/usr/bin/env bash
# check.cu's chk and dynchk (checked chain walk, checked superblock alignment) under racecheck,
# 8 rounds x 3 launches, alternating until UNTIL s into the call; one run of each without a tool
# first. Needs .carry/ncu/gen (call3.sh). Per-variant counts by exit status: $OUT/summary.txt.
set -uo pipefail
start=$SECONDS
d=docs/results/heap/racecheck_devicemalloc
nvcc -std=c++20 -O3 -arch=sm_90 --expt-relaxed-constexpr -Iheap/include -Icommon/include -I.carry/ncu/gen \
  -o /tmp/check $d/check.cu > $OUT/check_build.log 2>&1 || { tail $OUT/check_build.log; exit 1; }
for v in chk dynchk; do /tmp/check $v 8 3; echo "plain $v rc=$?"; done > $OUT/plain.log 2>&1
mkdir -p $OUT/f
i=0
while (( SECONDS - start <= ${UNTIL:-240} )); do
  for v in chk dynchk; do
    (( SECONDS - start <= ${UNTIL:-240} )) || break
    i=$((i + 1))
    timeout 60 compute-sanitizer --tool racecheck --error-exitcode 9 /tmp/check $v 8 3 > $OUT/one.log 2>&1
    rc=$?
    echo "$i $v rc=$rc $(grep -E 'CUDA error|failed alloc' $OUT/one.log | head -1)" >> $OUT/runs.log
    [[ $rc -eq 0 ]] || cp $OUT/one.log $OUT/f/${v}_$i.log
  done
done
for v in chk dynchk; do
  echo "racecheck $v (8 x 3): $(grep -c " $v rc=" $OUT/runs.log) runs; by exit status: $(grep " $v rc=" $OUT/runs.log | grep -o 'rc=[0-9]*' | sort | uniq -c | tr '\n' ' ')"
done | tee $OUT/summary.txt
grep -h "first failed check" $OUT/f/*.log 2>/dev/null | head -5 | tee -a $OUT/summary.txt
rm -f $OUT/one.log; tar czf $OUT/fails.tgz -C $OUT f; rm -rf $OUT/f
