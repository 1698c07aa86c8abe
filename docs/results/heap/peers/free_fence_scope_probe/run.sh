#!/usr/bin/env bash
# Issue 15, one call on the GPU machine, from the repository root with .carry/peers, .carry/boost and
# .carry/base (HEAD's heap/include and common/include) carried:
# 1. scope_probe.cu (no allocator) and the ordering instructions of its kernels;
# 2. the peers A/B of this tree's Scatter frees against .carry/base's, 3 rounds;
# 3. the ordering instructions of both builds' Scatter free kernels.
here=docs/results/heap/peers/free_fence_scope_probe
O=${OUT:-/tmp/out}; mkdir -p "$O"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader > "$O/environment.txt"
nvcc --version | tail -2 >> "$O/environment.txt"
nvcc -std=c++17 -O3 -arch=sm_90 -o /tmp/scope_probe $here/scope_probe.cu && timeout 120 /tmp/scope_probe > "$O/scope_probe_h200.txt" 2>&1
echo "scope probe exit $?"
cuobjdump -sass /tmp/scope_probe | grep -E "Function|LDG|MEMBAR|ATOM|RED|ERRBAR|CCTL" > "$O/scope_probe_sass.txt"
sass_free() {  # the Scatter free kernels' ordering instructions of one peers build
  cuobjdump -sass "$1" | awk '/Function :/ {keep = ($0 ~ /free_kernel/ && $0 ~ /Scatter/)} keep' \
    | grep -E "Function|LDG|MEMBAR|ATOM|RED|ERRBAR|CCTL|MATCH" > "$2"
}
PEERS_AB_EXPERIMENTS=throughput PEERS_AB_ALLOCATORS=Scatter,Scatter+FenceEveryLane,Scatter+RelaxedFrees,mallocMC \
  PEERS_AB_ARGS="--sizes 16,256,1024,mixed" PEERS_AB_ROUNDS=3 timeout 470 scripts/gpu_run.sh peers-ab
echo "gpu_run exit $?"
for v in base new; do [[ -x build-gpu/peers_bench_$v ]] && sass_free build-gpu/peers_bench_$v "$O/sass_free_$v.txt"; done
ls -la "$O"
