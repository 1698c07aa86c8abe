#!/usr/bin/env bash
# Scatter free path A/B beside mallocMC (timings + ncu kernel durations), then the GPU tests of the working tree.
set -u
cd "$(dirname "$0")/.."
mkdir -p .carry/bin && tar xJf .carry/bins.tar.xz -C .carry && chmod +x .carry/bin/*
d=$OUT/fab; mkdir -p $d
{ date -u +%FT%TZ; nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader; echo "cpus: $(nproc)"; } > $d/environment.txt
cat $d/environment.txt
t0=$SECONDS
run() { # tag binary allocator
  timeout 100 .carry/bin/pb_$2 --experiments throughput --allocators $3 --threads 131072 \
    --sizes 16,256,1024,mixed --repeat 10 --out $d/t_$1.jsonl > $d/log_$1_$round.txt 2>&1; echo "round $round $1 rc $? at $((SECONDS-t0)) s"
}
for round in 1 2 3; do
  run mallocMC base mallocMC; run base base Scatter; run v1 v1 Scatter; run v1relaxed v1 Scatter+RelaxedFrees; run v1noact v1noact Scatter
done
prof() { # tag binary allocator
  for s in 1024 mixed 256; do
    timeout 100 ncu --target-processes all --metrics gpu__time_duration.sum -k regex:free_kernel --csv \
      .carry/bin/pb_$2 --experiments throughput --allocators $3 --threads 131072 --sizes $s --repeat 10 --cold-heaps 1 \
      > $d/ncu_$1_$s.csv 2> $d/ncu_$1_$s.err; echo "ncu $1 $s rc $? at $((SECONDS-t0)) s"
  done
}
prof mallocMC base mallocMC; prof base base Scatter; prof v1 v1 Scatter; prof v1relaxed v1 Scatter+RelaxedFrees; prof v1noact v1noact Scatter
cd $OUT && tar czf fab.tgz fab && rm -rf fab
cd - > /dev/null
[ "${TESTS:-1}" = 1 ] && MANYALLOC_COMMIT=${COMMIT:-worktree} OUT=$OUT/tests timeout 400 scripts/gpu_run.sh tests 2>&1 | tail -12
ls -la $OUT
