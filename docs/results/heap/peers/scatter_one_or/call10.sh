#!/usr/bin/env bash
# Probe call 10: trees n (2b7279a) and g (the early release fence of ordered frees), 2 rounds cold and warm; then the GPU tests of this tree.
set -uo pipefail
out=$OUT/p; mkdir -p $out
d=docs/results/heap/peers/scatter_upstream_probe
start=$(date +%s)
THREADS=2_17 SIZES=16,256,1024,mixed ROUNDS=2 REPS=5 NCU=0 bash $d/run_cold.sh $out n g > $out/cold.log 2>&1
ROUNDS=1 NCU=0 MODES=flush NO_ROOF=1 NO_RELAXED=1 bash $d/run.sh n g > $out/warm.log 2>&1
echo "probe done in $(( $(date +%s) - start )) s"
OUT=$OUT/t GTEST_FILTER='-*ListBased*:*MultiList*:*Slabs*' MANYALLOC_COMMIT=$(cat .carry/ncu/COMMIT) TESTS_TIMEOUT_S=200 GPU_RUN_PACK=1 scripts/gpu_run.sh tests 2>&1 | tail -12
echo "all done in $(( $(date +%s) - start )) s"
