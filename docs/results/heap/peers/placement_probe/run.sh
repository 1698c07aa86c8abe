#!/usr/bin/env bash
# On the GPU machine, from the repository root: placement_probe.cu built
# against each header tree .carry/ncu/NAME (heap/include, common/include;
# .carry/ncu/gen holds build_config.hpp), run alternately ROUNDS times
# (default 2). Make a tree here with
#   mkdir -p .carry/ncu/NAME && git archive REV heap/include common/include | tar -x -C .carry/ncu/NAME
#   docs/results/heap/peers/placement_probe/run.sh NAME...
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
P=.carry/ncu
for t in "$@"; do
  nvcc -std=c++20 -O3 -arch=sm_90 --expt-relaxed-constexpr -I$P/$t/heap/include -I$P/$t/common/include -I$P/gen \
    -o /tmp/pp_$t "$here/placement_probe.cu" > /tmp/ppb_$t.log 2>&1 &
done
wait
source "$here/../probe_runs.sh"
run_alternately pp_ ppb_ "${ROUNDS:-2}" "$@"
