#!/usr/bin/env bash
# On the GPU machine, from the repository root: builds mixed_probe.cu against
# the heap headers of several commits and runs each (first mixed launch of
# SizeClassSlabs and SizeClassSlabs<FineSizeClassesConfig> on a fresh heap).
#   docs/results/heap/peers/cold_launch_probe/run_mixed.sh BUILD_CONFIG_DIR SHA...
# Prepare here first: for each SHA, `git archive SHA heap/include common/include`
# unpacked into .probe/trees/SHA (carried as an ignored path), and
# BUILD_CONFIG_DIR holding manyalloc/common/build_config.hpp from a build dir.
set -uo pipefail
here=$(dirname "$0")
gen=$1; shift
for t in "$@"; do
  nvcc -std=c++20 -O3 -arch=sm_90 --expt-relaxed-constexpr -I.probe/trees/$t/heap/include \
    -I.probe/trees/$t/common/include -I"$gen" -o /tmp/mixed_$t "$here/mixed_probe.cu" > /tmp/build_$t.log 2>&1 &
done
wait
for t in "$@"; do
  echo "== $t"
  if [[ -x /tmp/mixed_$t ]]; then timeout 60 /tmp/mixed_$t; else tail -5 /tmp/build_$t.log; fi
done
