#!/usr/bin/env bash
# On the GPU machine, from the repository root: builds alloc_roofline.cu
# against each header tree .carry/probe/trees/NAME (heap/include and
# common/include of a commit or a working tree; a generated
# manyalloc/common/build_config.hpp under .carry/probe/generated) and runs the
# builds alternately ROUNDS times (default 2).
#   docs/results/heap/peers/alloc_roofline/run_probe.sh NAME...
set -uo pipefail
here=$(dirname "$0")
C=.carry/probe
for t in "$@"; do
  nvcc -std=c++20 -O3 -arch=sm_90 --expt-relaxed-constexpr -I$C/trees/$t/heap/include -I$C/trees/$t/common/include \
    -I$C/generated -o /tmp/ar_$t "$here/alloc_roofline.cu" > /tmp/b_$t.log 2>&1 &
done
wait
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
for ((r = 1; r <= ${ROUNDS:-2}; ++r)); do
  for t in "$@"; do
    echo "== round $r: $t"
    timeout 100 /tmp/ar_$t || tail -5 /tmp/b_$t.log
  done
done
