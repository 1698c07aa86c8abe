#!/usr/bin/env bash
# Call 2 on the GPU machine, from the repository root: the peers A/B of this
# tree against .carry/base (Scatter and Scatter+XMallocSIMD: throughput,
# large, churn; 2 rounds), their usable shares, then probe.cu on the header
# trees .carry/ncu/main and .carry/ncu/new.
set -uo pipefail
d=docs/results/heap/peers/scatter_segment_runs
MANYALLOC_COMMIT=${MANYALLOC_COMMIT:-} PEERS_AB_ALLOCATORS=Scatter,Scatter+XMallocSIMD \
  PEERS_AB_EXPERIMENTS=throughput,large,churn PEERS_AB_ROUNDS=2 \
  PEERS_AB_ARGS="--sizes 16,1024,4096,8192,mixed" timeout 330 scripts/gpu_run.sh peers-ab
for v in base new; do
  (cd build-gpu && timeout 60 ./peers_bench_$v --experiments usable --sizes 16,1024,4096,8192,mixed \
    --allocators Scatter,Scatter+XMallocSIMD --out "$OUT/usable_$v.jsonl" > "$OUT/usable_$v.log" 2>&1)
done
LAUNCHES=4 timeout 120 bash $d/run.sh main new > "$OUT/probe.txt" 2>&1
tail -n 30 "$OUT/probe.txt"
