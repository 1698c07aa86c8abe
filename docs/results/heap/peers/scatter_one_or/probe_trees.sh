#!/usr/bin/env bash
# Probe calls 7 and 8 (README.md): cold launches (2^17, 2^20, 3 rounds of 5
# fresh heaps) and warm flush loops (2 rounds) of the header trees
# .carry/ncu/NAME given as arguments, beside upstream mallocMC; then Nsight
# Compute's cold mixed-size launch at 2^17 threads of the trees in NCU_TREES.
#   call 7: NCU_TREES="h u" probe_trees.sh h a u
#   call 8: NCU_TREES=v probe_trees.sh h u v
set -uo pipefail
out=$OUT/p; mkdir -p $out
d=docs/results/heap/peers/scatter_upstream_probe
start=$(date +%s)
THREADS=2_17,2_20 SIZES=16,64,256,1024,4096,mixed ROUNDS=3 REPS=5 NCU=0 bash $d/run_cold.sh $out "$@" > $out/cold.log 2>&1
echo "cold done in $(( $(date +%s) - start )) s"
ROUNDS=2 NCU=0 MODES=flush NO_ROOF=1 NO_RELAXED=1 bash $d/run.sh "$@" > $out/warm.log 2>&1
echo "warm done in $(( $(date +%s) - start )) s"
for t in ${NCU_TREES:-}; do
  timeout 100 ncu --clock-control none --set full --import-source no -k regex:alloc_k --launch-count 1 -f -o "$out/$t" \
    /tmp/su_$t x 2_17 cold mixed 1 > "$out/$t.ncu.log" 2>&1
  ncu -i "$out/$t.ncu-rep" --page source --csv --print-source sass > "$out/${t}_sass.csv" 2>&1
  ncu -i "$out/$t.ncu-rep" --page details > "$out/${t}_details.txt" 2>&1
  rm -f "$out/$t.ncu-rep"
done
echo "all done in $(( $(date +%s) - start )) s"
