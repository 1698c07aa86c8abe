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
source "$here/../probe_runs.sh"
run_alternately lc_ lcb_ "${ROUNDS:-2}" "$@" roof
