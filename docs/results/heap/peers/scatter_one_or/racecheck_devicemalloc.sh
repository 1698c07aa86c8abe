#!/usr/bin/env bash
# Which GpuDeviceMallocCoalescing test fails under racecheck, each in its own process; and DynamicWarp without a tool.
set -uo pipefail; mkdir -p $OUT/f
gen=(); command -v ninja >/dev/null && gen=(-G Ninja); cmake -S . -B build-gpu "${gen[@]}" -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 -DMANYALLOC_CUDA=ON -DMANYALLOC_BUILD_NUMA=OFF -DMANYALLOC_BUILD_REGION=OFF -DMANYALLOC_GTEST_SOURCE_DIR=$PWD/.carry/googletest > $OUT/cmake.log 2>&1
cmake --build build-gpu -j16 --target manyalloc_heap_distribution_gpu_tests > $OUT/build.log 2>&1 || { tail -20 $OUT/build.log; exit 1; }
t=build-gpu/heap/tests/distribution/manyalloc_heap_distribution_gpu_tests
for test in DynamicWarp XMallocSIMDStyleHeaderWarp BlockHeader BlockNoHeader; do
  fails=0
  for i in 1 2 3 4 5; do
    MANYALLOC_TEST_WORKERS=4096 MANYALLOC_TEST_HEAP_MB=16 timeout 40 compute-sanitizer --tool racecheck --error-exitcode 9 $t --gtest_filter="GpuDeviceMallocCoalescing.$test" > $OUT/one.log 2>&1 || { fails=$((fails+1)); cp $OUT/one.log $OUT/f/fail_${test}_$i.log; }
  done
  echo "racecheck $test: $fails of 5 failed"
done
fails=0
for i in $(seq 1 30); do timeout 30 $t --gtest_filter='GpuDeviceMallocCoalescing.DynamicWarp' > $OUT/one.log 2>&1 || { fails=$((fails+1)); cp $OUT/one.log $OUT/f/fail_plain_$i.log; }; done
echo "plain DynamicWarp: $fails of 30 failed"
fails=0
for i in 1 2 3 4 5; do MANYALLOC_TEST_WORKERS=4096 MANYALLOC_TEST_HEAP_MB=16 timeout 60 compute-sanitizer --tool memcheck --error-exitcode 9 $t --gtest_filter='GpuDeviceMallocCoalescing.DynamicWarp' > $OUT/one.log 2>&1 || { fails=$((fails+1)); cp $OUT/one.log $OUT/f/fail_memcheck_$i.log; }; done
echo "memcheck DynamicWarp: $fails of 5 failed"
rm -f $OUT/one.log; tar czf $OUT/fails.tgz -C $OUT f; rm -rf $OUT/f
