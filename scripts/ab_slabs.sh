#!/usr/bin/env bash
# A/B of SizeClassSlabs on the GPU machine: the tree in .base (a `git
# archive` of the commit to compare with, carried as an ignored path) and
# the working tree, heap bench `throughput` alternately (base, new, base,
# new), plus the working tree's heap GPU tests. Output under $OUT.
#   scripts/ab_slabs.sh [threads...]   (default 131072 1048576)
# Environment: AB_SIZES (default 16,64,256,1024,4096,8192,mixed), AB_ROUNDS
# (alternating rounds, default 2), AB_TESTS=0 (skip the GPU tests).
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-$PWD/gpu-out}
mkdir -p "$OUT"
threads=("$@"); ((${#threads[@]})) || threads=(131072 1048576)
sizes=${AB_SIZES:-16,64,256,1024,4096,8192,mixed}
gtest=(); [[ -d .carry/googletest ]] && gtest=(-DMANYALLOC_GTEST_SOURCE_DIR=$PWD/.carry/googletest)
cfg=(-G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 -DMANYALLOC_CUDA=ON
     -DMANYALLOC_BUILD_NUMA=OFF -DMANYALLOC_BUILD_REGION=OFF "${gtest[@]}")
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > "$OUT/environment.txt"
build() {  # dir src targets...
  local dir=$1 src=$2; shift 2
  cmake -S "$src" -B "$dir" "${cfg[@]}" > "$OUT/$(basename "$dir").cfg.log" 2>&1 &&
    cmake --build "$dir" -j8 --target "$@" > "$OUT/$(basename "$dir").build.log" 2>&1
}
t0=$(date +%s)
build build-ab-new . manyalloc_heap_bench_cuda manyalloc_heap_gpu_tests & p1=$!
if [[ -d .base ]]; then build build-ab-base .base manyalloc_heap_bench_cuda & p2=$!; fi
wait $p1 || { echo "NEW BUILD FAILED"; tail -30 "$OUT/build-ab-new.build.log"; exit 1; }
[[ -n ${p2:-} ]] && { wait $p2 || { echo "BASE BUILD FAILED"; tail -20 "$OUT/build-ab-base.build.log"; }; }
echo "built in $(( $(date +%s) - t0 )) s"
if [[ ${AB_TESTS:-1} == 1 ]]; then
  timeout 240 build-ab-new/heap/tests/manyalloc_heap_gpu_tests > "$OUT/gpu_tests.log" 2>&1
  echo "gpu tests: exit $? $(grep -E '^\[  (PASSED|FAILED)  \]' "$OUT/gpu_tests.log" | tr '\n' ' ')"
fi
for ((round = 1; round <= ${AB_ROUNDS:-2}; ++round)); do
  for v in base new; do
    b=build-ab-$v/heap/bench/manyalloc_heap_bench_cuda
    [[ -x $b ]] || b=$(find build-ab-$v -name manyalloc_heap_bench_cuda -type f | head -1)
    [[ -x $b ]] || continue
    for t in "${threads[@]}"; do
      timeout 120 "$b" throughput --allocators slabs --heap-mb 16384 --sizes "$sizes" --threads "$t" --repeat 5 \
        --out "$OUT/ab_$v.jsonl" >> "$OUT/ab_$v.log" 2>&1 || echo "$v $t: exit $?"
    done
  done
done
python3 scripts/ab_table.py --rate "$OUT/ab_base.jsonl" "$OUT/ab_new.jsonl"
