#!/usr/bin/env bash
# On the GPU machine, from the repository root, with .carry/ncu holding the
# header trees named in TREES (README.md): the probe harness' rounds of
# all of them (scatter_upstream_probe/run.sh), the SASS of each one's free
# kernel (default configuration, and head's Scatter+RelaxedFrees), then
# Nsight Compute's stall samples of the default free of the trees in
# NCU_TREES beside the limit of an ordered free, packed in one archive.
# With ROUNDS20=N, N rounds at 2^20 threads after the flush too.
#   [TREES="head pair noact pairact"] [NCU_TREES="head pair"] [ROUNDS20=0] docs/results/heap/peers/scatter_release_pair/run.sh OUTDIR
set -uo pipefail
out=${1:?outdir}
P=docs/results/heap/peers/scatter_upstream_probe
trees=(${TREES:-head pair noact pairact})
mkdir -p "$out"
date -u > "$out/date.txt"
NCU=0 MODES="flush verify_fresh" ROUNDS=${ROUNDS:-3} bash $P/run.sh "${trees[@]}" > "$out/rounds.txt" 2>&1
# ROUNDS20 rounds of the binaries run.sh built (upstream left out) at 2^17 and 2^20 threads, the L2
# flushed; the table below keeps the 2^20 rows.
for ((round = 1; round <= ${ROUNDS20:-0}; ++round)); do
  for t in "${trees[@]}" $(printf '%sr ' "${trees[@]}") roof roofrel; do
    [[ -x /tmp/su_$t ]] && timeout 100 /tmp/su_$t "$t r$round" 2_20 flush
  done
done > "$out/rounds20.txt" 2>&1
mkdir -p /tmp/rp_sass
for t in "${trees[@]}" headr; do
  cuobjdump -sass /tmp/su_$t | awk '/Function : .*free_k/{on=1} on{print} on&&/\.\.\.\.\.\.\.\.\.\./{exit}' > /tmp/rp_sass/sass_free_$t.txt
done
for t in ${NCU_TREES:-head pair}; do PROBE=default bash $P/ncu_source.sh $t /tmp/rp_ncu/$t > /tmp/rp_ncu_$t.log 2>&1; done
rm -f /tmp/rp_ncu/*/*.ncu-rep
tar -czf "$out/sass_ncu.tar.gz" -C /tmp rp_sass rp_ncu $(cd /tmp && ls rp_ncu_*.log)
date -u >> "$out/date.txt"
# One line per run, mode and size (64 B left out): the free launch of every round.
awk '/ n= / && $6 != 64 {k=sprintf("%-12s %-13s %-6s", $1, $3, $6); f[k]=f[k] sprintf(" %5s", $11)} END {for (k in f) print k, "free", f[k]}' "$out/rounds.txt" \
  | grep -v roofread | sort -k2,2 -k3,3 -k1,1
awk '/ n= / && $5 == 1048576 && ($6 == 1024 || $6 == "mixed") {k=sprintf("%-12s 2^20 %-6s", $1, $6); f[k]=f[k] sprintf(" %5s", $11)} END {for (k in f) print k, "free", f[k]}' \
  "$out/rounds20.txt" | sort -k3,3 -k1,1
