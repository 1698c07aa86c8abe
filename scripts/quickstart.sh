#!/usr/bin/env bash
# The main job: installs what is missing, builds, and compares allocators.
# On a machine with an NVIDIA GPU: Scatter against CUDA's device malloc, 2^20
# threads each allocating one chunk. Otherwise the same experiment on host
# threads: Scatter against the C library's malloc. Prints a table and writes
# a report to build/quickstart/REPORT.md.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
jobs=${MANYALLOC_JOBS:-$(nproc)}
cmake -S . -B build/release -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
out=build/quickstart
mkdir -p "$out"
rm -f "$out/results.jsonl"
if command -v nvidia-smi >/dev/null && nvidia-smi -L >/dev/null 2>&1 && \
   grep -q "MANYALLOC_HAVE_CUDA:INTERNAL=ON" build/release/CMakeCache.txt 2>/dev/null; then
  cmake --build build/release -j "$jobs" --target manyalloc_heap_bench_cuda
  build/release/heap/bench/suite/manyalloc_heap_bench_cuda throughput --sizes 16,64,256 --repeat 5 \
    --out "$out/results.jsonl"
else
  echo "quickstart: no GPU found, comparing allocators on host threads"
  cmake --build build/release -j "$jobs" --target manyalloc_heap_bench_host
  build/release/heap/bench/suite/manyalloc_heap_bench_host throughput --sizes 16,64,256 --repeat 5 \
    --out "$out/results.jsonl"
fi
python3 scripts/jsonl_table.py "$out/results.jsonl" > "$out/REPORT.md"
echo "report: $out/REPORT.md"
