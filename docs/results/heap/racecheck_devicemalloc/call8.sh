#!/usr/bin/env bash
# repro.cu's rawbig (CUDA's malloc/free at 1-6 KiB, no manyalloc code in the kernel) alone:
# 20 runs without a tool, then racecheck runs of 16 rounds x 3 launches until UNTIL s into the
# call. Needs .carry/ncu/gen (call3.sh). Counts: $OUT/summary.txt; failing logs in fails.tgz.
set -uo pipefail
start=$SECONDS
d=docs/results/heap/racecheck_devicemalloc
nvcc -std=c++20 -O3 -arch=sm_90 --expt-relaxed-constexpr -Iheap/include -Icommon/include -I.carry/ncu/gen \
  -o /tmp/repro $d/repro.cu > $OUT/repro_build.log 2>&1 || { tail $OUT/repro_build.log; exit 1; }
for i in $(seq 20); do /tmp/repro rawbig 16 3 > /dev/null; echo "plain $i rawbig rc=$?"; done > $OUT/plain.log
mkdir -p $OUT/f
i=0
while (( SECONDS - start <= ${UNTIL:-240} )); do
  i=$((i + 1))
  timeout 90 compute-sanitizer --tool racecheck --error-exitcode 9 /tmp/repro rawbig 16 3 > $OUT/one.log 2>&1
  rc=$?
  echo "$i rawbig rc=$rc $(grep -E 'CUDA error|failed alloc' $OUT/one.log | head -1)" >> $OUT/runs.log
  [[ $rc -eq 0 ]] || cp $OUT/one.log $OUT/f/rawbig_$i.log
done
{
  echo "plain rawbig (rounds 16, launches 3): $(grep -c 'rc=[1-9]' $OUT/plain.log) of $(grep -c 'rc=' $OUT/plain.log) failed"
  echo "racecheck rawbig (rounds 16, launches 3): $(grep -c 'rc=[1-9]' $OUT/runs.log) of $(grep -c 'rc=' $OUT/runs.log) failed"
} | tee $OUT/summary.txt
rm -f $OUT/one.log; tar czf $OUT/fails.tgz -C $OUT f; rm -rf $OUT/f
