#!/usr/bin/env bash
# On the GPU machine, from the repository root: the slab free/alloc probe
# (../free_variants_probe/free_variants.cu, default and RelaxedFreesConfig)
# and scatter_variants.cu, each built against header trees .carry/ncu/NAME
# (heap/include and common/include), Gallatin's probe beside them, run
# alternately twice; then Nsight Compute's instruction counts of the free
# launches at 2^20 threads, and uncorrected.cu.
#   [ROUNDS=2] [NCU=1] docs/results/heap/peers/quotient_probe/run_quotient.sh NAME...
# (NCU=0: without the Nsight Compute part.)
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
fv=$here/../free_variants_probe
P=.carry/ncu
runs=()
for t in "$@"; do
  inc=(-I$P/$t/heap/include -I$P/$t/common/include -I$P/gen)
  nvcc -std=c++20 -O3 -arch=sm_90 --expt-relaxed-constexpr "${inc[@]}" -o /tmp/q_$t $fv/free_variants.cu > /tmp/qb_$t.log 2>&1 &
  nvcc -std=c++20 -O3 -arch=sm_90 --expt-relaxed-constexpr "${inc[@]}" -DPROBE_CONFIG=manyalloc::heap::CreationPolicies::RelaxedFreesConfig \
    -o /tmp/q_${t}r $fv/free_variants.cu > /tmp/qb_${t}r.log 2>&1 &
  nvcc -std=c++20 -O3 -arch=sm_90 --expt-relaxed-constexpr "${inc[@]}" -o /tmp/q_${t}s $here/scatter_variants.cu > /tmp/qb_${t}s.log 2>&1 &
  runs+=("$t" "${t}r" "${t}s")
done
nvcc -std=c++17 -O3 -arch=sm_90 --expt-relaxed-constexpr -I$P/gallatin/include -o /tmp/q_gallatin $fv/gallatin_probe.cu > /tmp/qb_gallatin.log 2>&1 &
nvcc -O3 -arch=sm_90 -o /tmp/q_uncorrected $here/uncorrected.cu > /tmp/qb_unc.log 2>&1 &
runs+=(gallatin)
wait
source "$here/../probe_runs.sh"
run_alternately q_ qb_ "${ROUNDS:-2}" "${runs[@]}"
/tmp/q_uncorrected
[[ ${NCU:-1} == 1 ]] || exit 0
# free_k launches (0-based) at 2^20 threads, 7th repetition: slabs 1 KiB 78, 4 KiB 90, mixed 114
for t in "$@"; do
  for s in 78 90 114; do
    printf '%s launch %s: ' "${t}r" $s
    ncu --clock-control none -k regex:free_k --launch-skip $s --launch-count 1 --metrics smsp__inst_executed.sum,gpu__time_duration.sum \
      /tmp/q_${t}r x 2>/dev/null | grep -E "inst_executed|duration" | awk '{printf "%s %s %s  ", $1, $2, $3} END {print ""}'
  done
done
