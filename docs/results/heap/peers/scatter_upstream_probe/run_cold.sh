#!/usr/bin/env bash
# On the GPU machine, from the repository root: cold launches (loop.cuh,
# mode cold: the first alloc launch on each of REPS (7) fresh 16 GiB heaps,
# gated) of our Scatter built against each header tree .carry/ncu/NAME and
# of upstream mallocMC's, run alternately ROUNDS (3) times at THREADS
# (2_17) for SIZES (16,64,256,1024,mixed); then, with NCU=1, Nsight
# Compute's full set with per-instruction warp-stall samples on the cold
# NCU_SIZE (mixed) alloc launch at 2^17 threads of each (NCU_THREADS=all
# NCU_SKIP=1: the one at 2^20, after the 2^17 launch), the SASS with its
# samples as CSV and the details as text under OUTDIR.
#   [ROUNDS=3] [NCU=1] run_cold.sh OUTDIR NAME...
set -uo pipefail
out=${1:?outdir}; shift
mkdir -p "$out"
NO_RELAXED=1 NO_ROOF=1 LINEINFO=${NCU:-1} source "$(dirname "$0")/build.sh" "$@"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
for ((round = 1; round <= ${ROUNDS:-3}; ++round)); do
  # The order turns every round, so that no build always runs first.
  order=("${runs[@]}")
  ((round % 2 == 0)) && order=($(printf '%s\n' "${runs[@]}" | tac))
  for t in "${order[@]}"; do
    [[ -x /tmp/su_$t ]] && timeout 200 /tmp/su_$t "$t r$round" "${THREADS:-2_17}" cold "${SIZES:-16,64,256,1024,mixed}" "${REPS:-7}"
  done
done
[[ ${NCU:-1} == 1 ]] || exit 0
for t in "${runs[@]}"; do
  [[ -x /tmp/su_$t ]] || continue
  timeout 150 ncu --clock-control none --set full --import-source no -k regex:alloc_k --launch-skip "${NCU_SKIP:-0}" \
    --launch-count 1 -f -o "$out/$t" /tmp/su_$t x "${NCU_THREADS:-2_17}" cold "${NCU_SIZE:-mixed}" 1 > "$out/$t.ncu.log" 2>&1
  ncu -i "$out/$t.ncu-rep" --page source --csv --print-source sass > "$out/${t}_sass.csv" 2>&1
  ncu -i "$out/$t.ncu-rep" --page details > "$out/${t}_details.txt" 2>&1
  grep -E "Duration|Registers Per|Executed Instructions |Achieved Occupancy|Warp Cycles Per Issued" "$out/${t}_details.txt" | head -8 | sed "s/^/$t: /"
done
