#!/usr/bin/env bash
# On the GPU machine, from the repository root: builds probe.cu against each
# header tree .carry/ncu/NAME (heap/include, common/include; .carry/ncu/gen
# holds build_config.hpp) and runs each, alternating, ROUNDS (1) times.
#   [LAUNCHES=4] [POOL_GIB=16] [ROUNDS=1] run.sh NAME...
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
source "$here/../probe_runs.sh"
build_against_trees "$here/probe.cu" sr_ srb_ "$@"
wait
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
for ((round = 1; round <= ${ROUNDS:-1}; ++round)); do
  for t in "$@"; do
    [[ -x /tmp/sr_$t ]] || { echo "$t: build failed"; tail -20 /tmp/srb_$t.log; continue; }
    echo "== $t round $round"
    timeout 250 /tmp/sr_$t "${LAUNCHES:-4}" "${POOL_GIB:-16}"
  done
done
