#!/usr/bin/env bash
# Call 6: probe of probe_limit 64 (main), 16, 8; then a peers-ab of 16 against HEAD; then the usable share.
set -u
P=docs/results/heap/peers/scatter_upstream_probe
S=heap/include/manyalloc/heap/detail/scatter/search.hpp
NO_UPSTREAM=1 NCU=0 THREADS=all SIZES=1024,mixed REPS=5 ROUNDS=3 timeout 150 bash $P/run_cold.sh $OUT/probe main pl16 pl8 > $OUT/probe.log 2>&1
grep -E "n=1048576 mixed" $OUT/probe.log
sed -i 's/probe_limit = 4u \* regionsize;/probe_limit = 1u * regionsize;/' $S
grep -n "probe_limit =" $S
MANYALLOC_COMMIT=${COMMIT}+pl16 PEERS_AB_ALLOCATORS=Scatter,Scatter+RelaxedFrees PEERS_AB_EXPERIMENTS=churn,throughput PEERS_AB_ROUNDS=2 PEERS_AB_ARGS="--sizes 16,1024,4096,mixed" timeout 280 scripts/gpu_run.sh peers-ab > $OUT/ab.log 2>&1
grep -E "^\| (churn|throughput_alloc \| (cold|warm) \| Scatter \| 1048576 \| mixed|throughput_free \| (cold|warm) \| Scatter \| 1048576 \| mixed)" $OUT/ab.log
cd build-gpu && for b in base new; do timeout 60 ./peers_bench_$b --experiments usable --allocators Scatter,Scatter+RelaxedFrees --out $OUT/usable_$b.jsonl > $OUT/usable_$b.log 2>&1; done
grep -h "usable mixed\|^== usable" $OUT/usable_*.log
