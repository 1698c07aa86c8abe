#!/usr/bin/env bash
# On the GPU machine, from the repository root: large_probe.cu built against
# each header tree .carry/ncu/NAME (heap/include, common/include;
# .carry/ncu/gen holds build_config.hpp) and roofline.cu, run alternately
# ROUNDS times (default 2).
#   docs/results/heap/peers/large_claim_probe/run.sh NAME...
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/../probe_runs.sh"
build_against_trees "$here/large_probe.cu" lc_ lcb_ "$@"
nvcc -std=c++17 -O3 -arch=sm_90 --expt-relaxed-constexpr -o /tmp/lc_roof "$here/roofline.cu" > /tmp/lcb_roof.log 2>&1 &
wait
run_alternately lc_ lcb_ "${ROUNDS:-2}" "$@" roof
