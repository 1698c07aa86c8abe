#!/usr/bin/env bash
# Probe call 9: trees n (2b7279a's heap code) and f (n + ordered frees' release fence issued with the entry's read), and upstream.
set -uo pipefail
out=$OUT/p; mkdir -p $out
d=docs/results/heap/peers/scatter_upstream_probe
start=$(date +%s)
THREADS=2_17,2_20 SIZES=16,64,256,1024,4096,mixed ROUNDS=3 REPS=5 NCU=0 bash $d/run_cold.sh $out n f > $out/cold.log 2>&1
echo "cold done in $(( $(date +%s) - start )) s"
ROUNDS=3 NCU=0 MODES=flush NO_ROOF=1 NO_RELAXED=1 bash $d/run.sh n f > $out/warm.log 2>&1
echo "warm done in $(( $(date +%s) - start )) s"
