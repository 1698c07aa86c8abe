#!/usr/bin/env bash
# Call 3, for a later session, on the GPU machine from the repository root:
# what cfad7c3 left unmeasured. The usable share of Scatter and
# Scatter+XMallocSIMD against 67bc85f (peers-ab, one round), then probe.cu on
# a 6 GiB pool, where a worker's run start (its place times its pages below
# the top) wraps into the pages split for small chunks, on 67bc85f's headers
# and this tree's. Prepare here first:
#   scripts/prepare_gpu_carry.sh --base 67bc85f
#   for r in 67bc85f HEAD; do mkdir -p .carry/ncu/$r && git archive $r heap/include common/include | tar -x -C .carry/ncu/$r; done
#   (and .carry/ncu/gen/manyalloc/common/build_config.hpp from a CMake build)
# then run it with MANYALLOC_COMMIT=<HEAD's hash> and carry .carry/peers
# .carry/boost .carry/base .carry/ncu. Everything comes back in
# $OUT/call3.tgz (a call returns a few files only); at most about 500 s.
set -uo pipefail
d=docs/results/heap/peers/scatter_segment_runs
MANYALLOC_COMMIT=${MANYALLOC_COMMIT:?the commit of this tree} PEERS_AB_ALLOCATORS=Scatter,Scatter+XMallocSIMD \
  PEERS_AB_EXPERIMENTS=usable PEERS_AB_ROUNDS=1 PEERS_AB_ARGS="--sizes 16,4096,8192,mixed" \
  timeout 330 scripts/gpu_run.sh peers-ab
mkdir -p "$OUT/c3" && find "$OUT" -maxdepth 1 -type f -exec mv {} "$OUT/c3/" \;
tar -czf "$OUT/call3.tgz" -C "$OUT" c3
POOL_GIB=6 LAUNCHES=4 timeout 150 bash $d/run.sh 67bc85f HEAD > "$OUT/c3/probe_6gib.txt" 2>&1
tail -n 14 "$OUT/c3/probe_6gib.txt"
tar -czf "$OUT/call3.tgz" -C "$OUT" c3 && rm -rf "$OUT/c3"
