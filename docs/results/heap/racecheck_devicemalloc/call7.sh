#!/usr/bin/env bash
# Run in call 7 (2026-11-30): rawbig, dynlate beside dyn under racecheck (8 rounds, 3 launches),
# rotating until UNTIL s into the call; one run of each without
# a tool first. Needs .carry/ncu/gen (call3.sh). Per-variant counts: $OUT/summary.txt.
set -uo pipefail
start=$SECONDS
d=docs/results/heap/racecheck_devicemalloc
variants=(rawbig dynlate dyn)
nvcc -std=c++20 -O3 -arch=sm_90 --expt-relaxed-constexpr -Iheap/include -Icommon/include -I.carry/ncu/gen \
  -o /tmp/repro $d/repro.cu > $OUT/repro_build.log 2>&1 || { tail $OUT/repro_build.log; exit 1; }
for v in rawbig dynlate; do /tmp/repro $v 8 3; echo "plain $v rc=$?"; done | tee $OUT/plain.log
mkdir -p $OUT/f
# One racecheck run of variant $1 (round $2): a line in runs.log, its log kept when it fails.
one_run() {
  timeout 60 compute-sanitizer --tool racecheck --error-exitcode 9 /tmp/repro "$1" 8 3 > $OUT/one.log 2>&1
  local rc=$?
  echo "$2 $1 rc=$rc $(grep -E 'CUDA error|failed alloc' $OUT/one.log | head -1)" >> $OUT/runs.log
  [[ $rc -eq 0 ]] || cp $OUT/one.log $OUT/f/$1_$2.log
}
round=0
while (( SECONDS - start <= ${UNTIL:-240} )); do
  round=$((round + 1))
  for v in "${variants[@]}"; do (( SECONDS - start <= ${UNTIL:-240} )) && one_run $v $round; done
done
for v in "${variants[@]}"; do
  echo "racecheck $v (rounds 8, launches 3): $(grep -c " $v rc=[1-9]" $OUT/runs.log) of $(grep -c " $v rc=" $OUT/runs.log) failed"
done | tee $OUT/summary.txt
rm -f $OUT/one.log; tar czf $OUT/fails.tgz -C $OUT f; rm -rf $OUT/f
