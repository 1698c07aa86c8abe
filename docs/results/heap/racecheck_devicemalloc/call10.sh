#!/usr/bin/env bash
# Call 10: does CUDA's free(nullptr) carry the racecheck failure? rawnull (rawbig plus a
# ::free(nullptr) per lane and round) and dynskip (dyn over a creation policy that skips
# ::free(nullptr)) beside dyn under racecheck, 8 rounds x 3 launches, rotating until UNTIL s
# into the call; in the first MEMCHECK_ROUNDS rounds also dyn under memcheck (device heap
# checked: invalid frees, accesses outside a malloc'd block) and synccheck. One run of each
# new variant without a tool first. Needs .carry/ncu/gen (call3.sh). Counts: $OUT/summary.txt.
set -uo pipefail
start=$SECONDS
d=docs/results/heap/racecheck_devicemalloc
nvcc -std=c++20 -O3 -arch=sm_90 --expt-relaxed-constexpr -Iheap/include -Icommon/include -I.carry/ncu/gen \
  -o /tmp/repro $d/repro.cu > $OUT/repro_build.log 2>&1 || { tail $OUT/repro_build.log; exit 1; }
for v in rawnull dynskip dyn; do /tmp/repro $v 8 3; echo "plain $v rc=$?"; done | tee $OUT/plain.log
mkdir -p $OUT/f
# One run of variant $2 under tool $1 (round $3): a line in runs.log, its log kept when it fails.
one_run() {
  timeout 60 compute-sanitizer --tool "$1" --error-exitcode 9 /tmp/repro "$2" 8 3 > $OUT/one.log 2>&1
  local rc=$?
  echo "$3 $1:$2 rc=$rc $(grep -E 'CUDA error|failed alloc|ERROR SUMMARY|RACECHECK SUMMARY|Invalid|Malloc|free' $OUT/one.log | head -2 | tr '\n' ' ')" >> $OUT/runs.log
  [[ $rc -eq 0 ]] || cp $OUT/one.log $OUT/f/$1_$2_$3.log
}
round=0
while (( SECONDS - start <= ${UNTIL:-240} )); do
  round=$((round + 1))
  for tv in racecheck:rawnull racecheck:dynskip racecheck:dyn; do
    (( SECONDS - start <= ${UNTIL:-240} )) && one_run "${tv%%:*}" "${tv#*:}" $round
  done
  if (( round <= ${MEMCHECK_ROUNDS:-6} )); then
    for tv in memcheck:dyn synccheck:dyn; do
      (( SECONDS - start <= ${UNTIL:-240} )) && one_run "${tv%%:*}" "${tv#*:}" $round
    done
  fi
done
for tv in racecheck:rawnull racecheck:dynskip racecheck:dyn memcheck:dyn synccheck:dyn; do
  echo "$tv (8 x 3): $(grep -c " $tv rc=[1-9]" $OUT/runs.log) of $(grep -c " $tv rc=" $OUT/runs.log) failed"
done | tee $OUT/summary.txt
rm -f $OUT/one.log; tar czf $OUT/fails.tgz -C $OUT f; rm -rf $OUT/f
