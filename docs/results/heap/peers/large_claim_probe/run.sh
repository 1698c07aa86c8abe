#!/usr/bin/env bash
# On the GPU machine, from the repository root: large_probe.cu built against
# each header tree .carry/ncu/NAME (heap/include, common/include;
# .carry/ncu/gen holds build_config.hpp) and roofline.cu, run alternately
# ROUNDS times (default 2).
#   docs/results/heap/peers/large_claim_probe/run.sh NAME...
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
P=.carry/ncu
flags=(-O3 -arch=sm_90 --expt-relaxed-constexpr)
for t in "$@"; do
  nvcc -std=c++20 "${flags[@]}" -I$P/$t/heap/include -I$P/$t/common/include -I$P/gen -o /tmp/lc_$t \
    "$here/large_probe.cu" > /tmp/lcb_$t.log 2>&1 &
done
nvcc -std=c++17 "${flags[@]}" -o /tmp/lc_roof "$here/roofline.cu" > /tmp/lcb_roof.log 2>&1 &
wait
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
for ((round = 1; round <= ${ROUNDS:-2}; ++round)); do
  for t in "$@" roof; do
    if [[ -x /tmp/lc_$t ]]; then timeout 100 /tmp/lc_$t "$t"; else echo "$t: build failed"; tail -20 /tmp/lcb_$t.log; fi
  done
done
