#!/usr/bin/env bash
# Scatter free path A/B beside mallocMC (bench timings + ncu kernel durations), then the GPU tests of the working tree.
# VARIANTS: "tag:binary:allocator ..." (binaries .carry/bin/pb_<binary>).
set -u
cd "$(dirname "$0")/.."
mkdir -p .carry/bin && tar xJf .carry/bins.tar.xz -C .carry && chmod +x .carry/bin/*
d=$OUT/fab; mkdir -p $d
{ date -u +%FT%TZ; nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader; echo "cpus: $(nproc)"; } > $d/environment.txt
cat $d/environment.txt
t0=$SECONDS
V=${VARIANTS:-"mallocMC:base:mallocMC base:base:Scatter v1:v1:Scatter v2:v2:Scatter v2relaxed:v2:Scatter+RelaxedFrees"}
for round in 1 2 3; do
  for x in $V; do IFS=: read tag bin alloc <<< "$x"
    timeout 100 .carry/bin/pb_$bin --experiments throughput --allocators $alloc --threads 131072 \
      --sizes 16,256,1024,mixed --repeat 10 --out $d/t_$tag.jsonl > $d/log_${tag}_$round.txt 2>&1; echo "round $round $tag rc $? at $((SECONDS-t0)) s"
  done
done
for x in $V; do IFS=: read tag bin alloc <<< "$x"
  timeout 100 .carry/bin/pb_$bin --experiments throughput --allocators $alloc --threads 1048576 \
    --sizes 16,1024 --repeat 10 --out $d/t20_$tag.jsonl > $d/log20_${tag}.txt 2>&1; echo "2^20 $tag rc $? at $((SECONDS-t0)) s"
done
for x in $V; do IFS=: read tag bin alloc <<< "$x"
  for s in 1024 mixed 256 16; do
    timeout 100 ncu --target-processes all --metrics gpu__time_duration.sum -k regex:free_kernel --csv \
      .carry/bin/pb_$bin --experiments throughput --allocators $alloc --threads 131072 --sizes $s --repeat 10 --cold-heaps 1 \
      > $d/ncu_${tag}_$s.csv 2> $d/ncu_${tag}_$s.err; echo "ncu $tag $s rc $? at $((SECONDS-t0)) s"
  done
done
cd $OUT && tar czf fab.tgz fab && rm -rf fab
cd - > /dev/null
[ "${TESTS:-1}" = 1 ] && MANYALLOC_COMMIT=${COMMIT:-worktree} OUT=$OUT/tests timeout 400 scripts/gpu_run.sh tests 2>&1 | tail -12
ls -la $OUT
