#!/usr/bin/env bash
# Issue 15, one call on the GPU machine, from the repository root with .carry/peers, .carry/boost and
# .carry/base (e6be45d's heap/include and common/include) carried: the peers A/B of this tree (one barrier
# and one release fence per warp in Scatter's ordered frees; the heap's coherent accesses relaxed at GPU
# scope in the global state space) against .carry/base's, 3 rounds; then the ordering instructions of
# both builds' Scatter free kernels.
O=${OUT:-/tmp/out}; mkdir -p "$O"
PEERS_AB_EXPERIMENTS=throughput PEERS_AB_ALLOCATORS=Scatter,Scatter+RelaxedFrees,SizeClassSlabs,mallocMC \
  PEERS_AB_ARGS="--sizes 16,256,1024,mixed" PEERS_AB_ROUNDS=3 timeout 540 scripts/gpu_run.sh peers-ab
echo "gpu_run exit $?"
sass_free() {  # the Scatter free kernels' ordering instructions of one peers build
  cuobjdump -sass "$1" | awk '/Function :/ {keep = ($0 ~ /free_kernel/ && $0 ~ /Scatter/)} keep' \
    | grep -E "Function|LDG|LD\\.|MEMBAR|ATOM|RED|ERRBAR|CCTL|MATCH|WARPSYNC|BAR" > "$2"
}
for v in base new; do [[ -x build-gpu/peers_bench_$v ]] && sass_free build-gpu/peers_bench_$v "$O/sass_free_$v.txt"; done
ls -la "$O"
