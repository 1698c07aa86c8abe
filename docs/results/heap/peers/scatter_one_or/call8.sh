#!/usr/bin/env bash
# Probe call 8: trees h (0395f71), u (active block first, marks with the walk read, one first OR), v (u + one take for a split and a reservation).
set -uo pipefail
out=$OUT/p; mkdir -p $out
d=docs/results/heap/peers/scatter_upstream_probe
start=$(date +%s)
THREADS=2_17,2_20 SIZES=16,64,256,1024,4096,mixed ROUNDS=3 REPS=5 NCU=0 bash $d/run_cold.sh $out h u v > $out/cold.log 2>&1
echo "cold done in $(( $(date +%s) - start )) s"
ROUNDS=2 NCU=0 MODES=flush NO_ROOF=1 NO_RELAXED=1 bash $d/run.sh h u v > $out/warm.log 2>&1
echo "warm done in $(( $(date +%s) - start )) s"
for t in v; do
timeout 100 ncu --clock-control none --set full --import-source no -k regex:alloc_k --launch-count 1 -f -o "$out/$t" /tmp/su_$t x 2_17 cold mixed 1 > "$out/$t.ncu.log" 2>&1
ncu -i "$out/$t.ncu-rep" --page source --csv --print-source sass > "$out/${t}_sass.csv" 2>&1
ncu -i "$out/$t.ncu-rep" --page details > "$out/${t}_details.txt" 2>&1
rm -f $out/$t.ncu-rep
done
echo "all done in $(( $(date +%s) - start )) s"
grep -E "^(h|u|v|upstream)" $out/cold.log | head -5
