#!/usr/bin/env bash
# Builds and runs every GPU test and benchmark in one go (the device machine
# starts bare, so one call does everything). Logs and JSON Lines go to $OUT
# (default ./gpu-out); a short summary table is printed last.
#
#   scripts/gpu_run.sh [quick]      quick: tests only, no benchmark
#
# Needs: nvcc, cmake, a GPU; GoogleTest installed or its source tree in
# .carry/googletest (scripts/prepare_gpu_carry.sh copies Debian's).
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-$PWD/gpu-out}
mkdir -p "$OUT"
LOG=$OUT/gpu_run.log
: > "$LOG"
say() { echo "$@" | tee -a "$LOG"; }
mode=${1:-full}
status=0

{
  echo "date: $(date -u +%FT%TZ)"
  # The device machine gets no .git: the caller passes MANYALLOC_COMMIT.
  echo "commit: ${MANYALLOC_COMMIT:-$(git rev-parse --short HEAD 2>/dev/null || echo unknown)}"
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
  nvcc --version | tail -1
  echo "cpus: $(nproc)"
} | tee "$OUT/environment.txt" | tee -a "$LOG"

gtest_opt=()
[[ -d .carry/googletest ]] && gtest_opt=(-DMANYALLOC_GTEST_SOURCE_DIR=$PWD/.carry/googletest)
gen=(); command -v ninja >/dev/null && gen=(-G Ninja)
say "== configure + build (sm_90)"
cmake -S . -B build-gpu "${gen[@]}" -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 \
  -DMANYALLOC_CUDA=ON -DMANYALLOC_BUILD_NUMA=OFF -DMANYALLOC_BUILD_REGION=OFF "${gtest_opt[@]}" >>"$LOG" 2>&1 \
  && cmake --build build-gpu -j"$(nproc)" --target manyalloc_heap_gpu_tests manyalloc_heap_bench_cuda >>"$LOG" 2>&1
if [[ $? -ne 0 ]]; then say "BUILD FAILED"; tail -40 "$LOG"; exit 1; fi

tests=build-gpu/heap/tests/manyalloc_heap_gpu_tests
say "== GPU tests at full occupancy"
timeout 420 $tests --gtest_output=json:"$OUT/gpu_tests.json" 2>&1 | tee "$OUT/gpu_tests.log" | grep -E "^\[  (PASSED|FAILED|SKIPPED) |OK \]|FAILED|tests ran" | tee -a "$LOG"
[[ ${PIPESTATUS[0]} -eq 0 ]] || status=1

say "== compute-sanitizer memcheck and racecheck (small configuration)"
small=(env MANYALLOC_TEST_WORKERS=4096 MANYALLOC_TEST_HEAP_MB=16)
filter='--gtest_filter=Cuda/HeapTest/0.OverlapUntilFull:Cuda/HeapTest/0.ChurnRandomSizesUpToFourPages:Cuda/HeapTest/0.BadInputIsReportedAndChangesNothing:Cuda/HeapTest/0.WorkersCountSlotsLikeTheHost:CudaDeviceMalloc.*'
for tool in memcheck racecheck; do
  timeout 300 "${small[@]}" compute-sanitizer --tool $tool --error-exitcode 9 $tests "$filter" \
    > "$OUT/sanitizer_$tool.log" 2>&1
  rc=$?
  say "$tool: exit $rc, $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$OUT/sanitizer_$tool.log" | tail -1)"
  [[ $rc -eq 0 ]] || status=1
done

if [[ $mode != quick ]]; then
  say "== benchmark: throughput at 2^20 threads"
  rm -f "$OUT/heap_throughput.jsonl"
  timeout 400 build-gpu/heap/bench/suite/manyalloc_heap_bench_cuda throughput --sizes 16,64,256 --repeat 5 \
    --out "$OUT/heap_throughput.jsonl" > "$OUT/bench_throughput.log" 2>&1 || status=1
  cat "$OUT/bench_throughput.log" | tail -8 >> "$LOG"
fi

echo
echo "================ summary ================"
grep -E "^(date|commit):" "$OUT/environment.txt"
sed -n 3p "$OUT/environment.txt"
grep -E "tests ran|PASSED|FAILED" "$OUT/gpu_tests.log" | tail -3
grep -h -E "ERROR SUMMARY|RACECHECK SUMMARY" "$OUT"/sanitizer_*.log
[[ -f "$OUT/bench_throughput.log" ]] && grep -A12 "^experiment" "$OUT/bench_throughput.log"
echo "status: $status"
exit $status
