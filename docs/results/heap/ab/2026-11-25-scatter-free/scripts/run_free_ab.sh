#!/usr/bin/env bash
# Scatter's free path: base against variants, beside upstream mallocMC (2^17 frees), plus ncu kernel durations.
set -u
cd "$(dirname "$0")/.."
mkdir -p .carry/bin && tar xJf .carry/bins.tar.xz -C .carry && chmod +x .carry/bin/*
d=$OUT/fab; mkdir -p $d
{ date -u +%FT%TZ; nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader; echo "cpus: $(nproc)"; } > $d/environment.txt
cat $d/environment.txt
V=${VARIANTS:-base v1b v1bnoact v1noact}
t0=$SECONDS
for round in 1 2 3; do
  timeout 100 .carry/bin/pb_base --experiments throughput --allocators mallocMC --threads 131072 \
    --sizes 16,256,1024,mixed --repeat 10 --out $d/t_mallocMC.jsonl > $d/log_mmc_$round.txt 2>&1; echo "round $round mallocMC rc $? at $((SECONDS-t0)) s"
  for v in $V; do
    timeout 100 .carry/bin/pb_$v --experiments throughput --allocators Scatter --threads 131072 \
      --sizes 16,256,1024,mixed --repeat 10 --out $d/t_$v.jsonl > $d/log_${v}_$round.txt 2>&1; echo "round $round $v rc $? at $((SECONDS-t0)) s"
  done
done
for v in $V; do
  timeout 100 .carry/bin/pb_$v --experiments throughput --allocators Scatter --threads 1048576 \
    --sizes 16,1024 --repeat 10 --out $d/t20_$v.jsonl > $d/log20_${v}.txt 2>&1; echo "2^20 $v rc $? at $((SECONDS-t0)) s"
done
for v in mallocMC $V; do
  b=$v; a=Scatter; [ $v = mallocMC ] && { b=base; a=mallocMC; }
  for s in 1024 mixed; do
    timeout 100 ncu --target-processes all --metrics gpu__time_duration.sum -k regex:free_kernel --csv \
      .carry/bin/pb_$b --experiments throughput --allocators $a --threads 131072 --sizes $s --repeat 10 --cold-heaps 1 \
      > $d/ncu_${v}_$s.csv 2> $d/ncu_${v}_$s.err; echo "ncu $v $s rc $? at $((SECONDS-t0)) s"
  done
done
cd $OUT && tar czf fab.tgz fab && rm -rf fab && ls -la
