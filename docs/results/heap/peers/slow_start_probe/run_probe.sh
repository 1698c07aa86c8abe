#!/usr/bin/env bash
# On the GPU machine, from the repository root: builds slow_start_probe.cu
# against each header tree .carry/probe/trees/NAME (heap/include and
# common/include of a commit or a working tree, with a generated
# manyalloc/common/build_config.hpp under .carry/probe/generated) and runs the
# builds alternately ROUNDS times (default 2).
#   docs/results/heap/peers/slow_start_probe/run_probe.sh NAME...
set -uo pipefail
here=$(dirname "$0")
rounds=${ROUNDS:-2}
for t in "$@"; do
  nvcc -std=c++20 -O3 -arch=sm_90 --expt-relaxed-constexpr -I.carry/probe/trees/$t/heap/include \
    -I.carry/probe/trees/$t/common/include -I.carry/probe/generated -o /tmp/slow_$t "$here/slow_start_probe.cu" \
    > /tmp/build_$t.log 2>&1 &
done
wait
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
for r in $(seq "$rounds"); do
  for t in "$@"; do
    echo "== round $r: $t"
    if [[ -x /tmp/slow_$t ]]; then timeout 120 /tmp/slow_$t; else tail -5 /tmp/build_$t.log; fi
  done
done
