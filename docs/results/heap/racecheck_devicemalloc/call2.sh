#!/usr/bin/env bash
# Call 2: the probe's cold and warm launches of header trees cur (HEAD) and trims
# (scatter_one_or/probe_trees.sh, no Nsight Compute), then the test binary's
# GpuDeviceMallocCoalescing.DynamicWarp and repro.cu's dyn alternately under
# racecheck, each run a process of its own, until 570 s into the call.
set -uo pipefail
start=$SECONDS
bash docs/results/heap/peers/scatter_one_or/probe_trees.sh cur trims
tar czf $OUT/probe.tgz -C $OUT p && rm -rf $OUT/p
gen=(); command -v ninja >/dev/null && gen=(-G Ninja)
cmake -S . -B build-gpu "${gen[@]}" -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 -DMANYALLOC_CUDA=ON \
  -DMANYALLOC_BUILD_NUMA=OFF -DMANYALLOC_BUILD_REGION=OFF -DMANYALLOC_GTEST_SOURCE_DIR=$PWD/.carry/googletest > $OUT/cmake.log 2>&1
cmake --build build-gpu -j16 --target manyalloc_heap_distribution_gpu_tests > $OUT/build.log 2>&1 || { tail -20 $OUT/build.log; exit 1; }
t=build-gpu/heap/tests/distribution/manyalloc_heap_distribution_gpu_tests
d=docs/results/heap/racecheck_devicemalloc
nvcc -std=c++20 -O3 -arch=sm_90 --expt-relaxed-constexpr -Iheap/include -Icommon/include -Ibuild-gpu/common/generated \
  -o /tmp/repro $d/repro.cu > $OUT/repro_build.log 2>&1 || { tail $OUT/repro_build.log; exit 1; }
echo "racecheck loop from $((SECONDS - start)) s"
mkdir -p $OUT/f; gt=0; gf=0; rt=0; rf=0
for i in $(seq 1 40); do
  (( SECONDS - start > 570 )) && break
  MANYALLOC_TEST_WORKERS=4096 MANYALLOC_TEST_HEAP_MB=16 timeout 40 compute-sanitizer --tool racecheck --error-exitcode 9 $t \
    --gtest_filter=GpuDeviceMallocCoalescing.DynamicWarp > $OUT/one.log 2>&1; rc=$?
  gt=$((gt+1)); (( rc != 0 )) && { gf=$((gf+1)); cp $OUT/one.log $OUT/f/gtest_$i.log; }
  echo "$i gtest rc=$rc" >> $OUT/loop.log
  (( SECONDS - start > 570 )) && break
  timeout 40 compute-sanitizer --tool racecheck --error-exitcode 9 /tmp/repro dyn > $OUT/one.log 2>&1; rc=$?
  rt=$((rt+1)); (( rc != 0 )) && { rf=$((rf+1)); cp $OUT/one.log $OUT/f/repro_$i.log; }
  echo "$i repro rc=$rc" >> $OUT/loop.log
done
echo "racecheck gtest DynamicWarp: $gf of $gt failed; repro dyn: $rf of $rt failed" | tee $OUT/loop_summary.txt
rm -f $OUT/one.log; tar czf $OUT/loop_fails.tgz -C $OUT f; rm -rf $OUT/f
