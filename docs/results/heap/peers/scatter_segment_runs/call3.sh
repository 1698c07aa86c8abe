#!/usr/bin/env bash
# Call 3, for a later session: the spread of run starts by each warp's demand
# (f79f4fd) against cfad7c3 on the GPU machine, from the repository root.
# Prepare here first:
#   scripts/prepare_gpu_carry.sh --base cfad7c3
#   for r in cfad7c3 f79f4fd; do mkdir -p .carry/ncu/$r && git archive $r heap/include common/include | tar -x -C .carry/ncu/$r; done
#   (and .carry/ncu/gen from a CMake build: manyalloc/common/build_config.hpp)
# then run it with carry .carry/peers .carry/boost .carry/base .carry/ncu.
# Everything comes back in $OUT/call3.tgz (a call returns a few files only).
set -uo pipefail
d=docs/results/heap/peers/scatter_segment_runs
MANYALLOC_COMMIT=${MANYALLOC_COMMIT:-f79f4fd} PEERS_AB_ALLOCATORS=Scatter,Scatter+XMallocSIMD \
  PEERS_AB_EXPERIMENTS=throughput,large PEERS_AB_ROUNDS=2 \
  PEERS_AB_ARGS="--sizes 16,4096,8192,mixed" timeout 330 scripts/gpu_run.sh peers-ab
mkdir -p "$OUT/c3" && find "$OUT" -maxdepth 1 -type f -exec mv {} "$OUT/c3/" \;
for v in base new; do
  (cd build-gpu && timeout 60 ./peers_bench_$v --experiments usable --sizes 16,4096,8192,mixed \
    --allocators Scatter,Scatter+XMallocSIMD --out "$OUT/c3/usable_$v.jsonl" > "$OUT/c3/usable_$v.log" 2>&1)
done
# The 6 GiB pool: at cfad7c3 the starts of 2^20 workers x 2 pages wrap round it into the split pages.
for pool in 16 6; do
  POOL_GIB=$pool LAUNCHES=4 timeout 100 bash $d/run.sh cfad7c3 f79f4fd > "$OUT/c3/probe_${pool}gib.txt" 2>&1
done
tail -n 16 "$OUT/c3/probe_6gib.txt"
tar -czf "$OUT/call3.tgz" -C "$OUT" c3 && rm -rf "$OUT/c3"
