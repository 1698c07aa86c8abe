#!/usr/bin/env bash
# On the GPU machine, from the repository root: Nsight Compute's full set
# with per-instruction sampling on the 7th 1 KiB free launch at 2^17
# threads (loop.cuh, mode verify_fresh) of Scatter+RelaxedFrees (header tree
# .carry/ncu/NAME) and of roofline.cu, then the SASS of each with its
# stall samples as CSV under OUTDIR.
# With PROBE=default: Scatter's default configuration (ordered frees) and
# the limit of an ordered free (roofline.cu -DPROBE_FREE_RELEASE) instead.
#   [PROBE=default] docs/results/heap/peers/scatter_upstream_probe/ncu_source.sh NAME OUTDIR
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
t=${1:?tree} out=${2:?outdir}
P=.carry/ncu
mkdir -p "$out"
cfg=(-DPROBE_CONFIG=manyalloc::heap::CreationPolicies::ScatterRelaxedFreesConfig) roof=()
[[ ${PROBE:-relaxed} == default ]] && cfg=() roof=(-DPROBE_FREE_RELEASE)
nvcc -std=c++20 -O3 -arch=sm_90 --expt-relaxed-constexpr -lineinfo -I$P/$t/heap/include -I$P/$t/common/include -I$P/gen \
  "${cfg[@]}" -o /tmp/ns_ours $here/ours.cu &
nvcc -std=c++17 -O3 -arch=sm_90 -lineinfo "${roof[@]}" -o /tmp/ns_roof $here/roofline.cu &
wait
for b in ours roof; do
  ncu --clock-control none --set full --import-source no -k regex:free_k --launch-skip 42 --launch-count 1 \
    -f -o "$out/$b" /tmp/ns_$b x 2_17 verify_fresh > "$out/$b.ncu.log" 2>&1
  ncu -i "$out/$b.ncu-rep" --page source --csv --print-source sass > "$out/${b}_sass.csv" 2>&1
  ncu -i "$out/$b.ncu-rep" --page details --section WarpStateStats --section SchedulerStats --section MemoryWorkloadAnalysis \
    > "$out/${b}_details.txt" 2>&1
done
ls -la "$out"
