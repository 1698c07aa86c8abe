#!/usr/bin/env bash
# Scatter vs upstream mallocMC: the 2^17 frees (1 KiB, 256 B, mixed): timings and ncu profiles of the free kernel.
set -u
cd "$(dirname "$0")/.."
chmod +x .carry/bin/*
d=$OUT/fp; mkdir -p $d
{ date -u +%FT%TZ; nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader; echo "cpus: $(nproc)"; } > $d/environment.txt
cat $d/environment.txt
cuobjdump -res-usage .carry/bin/pb_new 2>&1 | grep -A1 "free_kernel" | grep -o "Function [^ ]*\|REG:[0-9]*\|STACK:[0-9]*\|SHARED:[0-9]*" | paste -sd' ' | sed 's/Function /\nFunction /g' > $d/res_usage.txt
for v in ${VARIANTS:-new}; do
  for round in 1 2; do
    timeout 100 .carry/bin/pb_$v --experiments throughput --allocators Scatter,mallocMC --threads 131072 \
      --sizes 256,1024,mixed --repeat 10 --out $d/t_$v.jsonl > $d/log_t_${v}_$round.txt 2>&1; echo "timing $v $round rc $?"
  done
done
for a in Scatter mallocMC; do for s in 1024 256 mixed; do
  timeout 120 ncu --target-processes all --clock-control none -k regex:free_kernel --launch-skip 2 --launch-count 1 \
    --section SpeedOfLight --section LaunchStats --section Occupancy --section WarpStateStats --section SchedulerStats \
    --section MemoryWorkloadAnalysis --section MemoryWorkloadAnalysis_Chart --section InstructionStats --section SourceCounters \
    -o $d/free_${a}_$s .carry/bin/pb_new --experiments throughput --allocators $a --threads 131072 --sizes $s \
    --repeat 3 --cold-heaps 1 > $d/ncu_${a}_$s.txt 2>&1
  echo "ncu $a $s rc $?"
  ncu -i $d/free_${a}_$s.ncu-rep --page details > $d/details_${a}_$s.txt 2>&1
  ncu -i $d/free_${a}_$s.ncu-rep --page source --csv --print-source sass > $d/sass_${a}_$s.csv 2>&1
done; done
grep -h "Duration\|Registers Per\|Executed Instructions  \|Achieved Occupancy\|L2 Hit\|Mem Busy\|Max Bandwidth" $d/details_*_1024.txt
cd $OUT && tar czf fp.tgz fp && rm -rf fp && ls -la
