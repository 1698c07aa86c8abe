#!/usr/bin/env bash
# On the GPU machine, from the repository root: ours.cu built against each
# header tree .carry/ncu/NAME (heap/include, common/include; .carry/ncu/gen
# holds build_config.hpp), as Scatter (NAME) and Scatter+RelaxedFrees
# (NAMEr), and upstream.cu against mallocMC 2.6.0 (.carry/peers tarball,
# .carry/boost), and roofline.cu (no allocator: the limit), run alternately
# ROUNDS times at 2^17 threads, in each MODE
# (flush: the L2 flushed between alloc and free; verify: what the peers
# benchmark's check does there, loop.cuh; verify_fresh: that and a fresh
# heap for every size, as in the peers benchmark); then Nsight Compute's
# counts of the 256 B and 1 KiB free launches in the last mode.
#   [ROUNDS=3] [NCU=1] [MODES="flush verify"] docs/results/heap/peers/scatter_upstream_probe/run.sh NAME...
set -uo pipefail
source "$(dirname "$0")/build.sh" "$@"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
for ((round = 1; round <= ${ROUNDS:-3}; ++round)); do
  for mode in ${MODES:-flush verify}; do
    for t in "${runs[@]}"; do [[ -x /tmp/su_$t ]] && timeout 100 /tmp/su_$t "$t r$round" 2_17 $mode; done
  done
done
[[ ${NCU:-1} == 1 ]] || exit 0
# free_k launches (0-based) at 2^17 threads, 7th of 12: 256 B 30, 1 KiB 42
for t in "${runs[@]}"; do
  for s in 30 42; do
    printf '%s launch %s: ' "$t" $s
    ncu --clock-control none -k regex:free_k --launch-skip $s --launch-count 1 \
      --metrics smsp__inst_executed.sum,gpu__time_duration.sum,lts__t_requests_srcunit_tex_op_atom.sum,lts__t_requests_srcunit_tex_op_read.sum,lts__t_requests_srcunit_tex_op_red.sum \
      /tmp/su_$t x 2_17 $mode 2>/dev/null | grep -E "inst_executed|duration|lts__" | awk '{printf "%s %s %s  ", $1, $2, $3} END {print ""}'
  done
done
