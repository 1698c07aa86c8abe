#!/usr/bin/env bash
# On the GPU machine, from the repository root: placement_probe.cu built
# against each header tree .carry/ncu/NAME (heap/include, common/include;
# .carry/ncu/gen holds build_config.hpp), run alternately ROUNDS times
# (default 2). Make a tree here with
#   mkdir -p .carry/ncu/NAME && git archive REV heap/include common/include | tar -x -C .carry/ncu/NAME
#   docs/results/heap/peers/placement_probe/run.sh NAME...
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/../probe_runs.sh"
build_against_trees "$here/placement_probe.cu" pp_ ppb_ "$@"
wait
run_alternately pp_ ppb_ "${ROUNDS:-2}" "$@"
