// No allocator: does a value handed from the lowest lane of __activemask() to the other
// lanes by store / __syncwarp(mask) / load / __syncwarp(mask) arrive, when the lanes of a
// warp run that in two divergent branches at once and the root first calls device malloc
// (the steps of DynamicWarp over DeviceMalloc, repro.cu)? Counts wrong values.
//   handover VARIANT [ROUNDS] [LAUNCHES]; VARIANT: shared, global (the box's memory),
//   shared1 (one call site: no divergent branches), sharedbig (shared, the root asks for
//   2,048-5,632 B instead of 64-176 B).
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

__device__ std::uint64_t global_box[1u << 16][32];

template <bool Shared>
__device__ std::uint64_t hand_over(std::uint32_t mask, unsigned root, std::uint64_t value) {
  __shared__ std::uint64_t box[8][32];
  unsigned lane;
  asm("mov.u32 %0, %%laneid;" : "=r"(lane));
  volatile std::uint64_t* slot =
      Shared ? &box[threadIdx.x / 32u][root] : &global_box[(blockIdx.x * blockDim.x + threadIdx.x) / 32u][root];
  if (lane == root) *slot = value;
  __syncwarp(mask);
  const std::uint64_t v = *slot;
  __syncwarp(mask);
  return v;
}

template <bool Shared>
__device__ void step(std::uint32_t round, std::uint32_t base_bytes, std::uint32_t* wrong) {
  const std::uint32_t mask = __activemask();
  unsigned lane;
  asm("mov.u32 %0, %%laneid;" : "=r"(lane));
  const unsigned root = __ffs(static_cast<int>(mask)) - 1;
  const std::uint32_t warp = (blockIdx.x * blockDim.x + threadIdx.x) / 32u;
  const std::uint64_t expected = (std::uint64_t{warp} << 32) | (round << 8) | root;
  // collect's first collectives over the mask
  if (__ballot_sync(mask, true) != mask || __shfl_sync(mask, lane, root) != root) atomicAdd(wrong, 1u);
  std::uint64_t mine = 0;
  if (lane == root) {
    void* p = ::malloc(base_bytes + base_bytes / 4 * (round % 8));  // the slow, divergent step of the leader
    ::free(p);
    mine = expected;
  }
  const std::uint64_t got = hand_over<Shared>(mask, root, mine);
  if (got != expected) atomicAdd(wrong, 1u);
  __syncwarp(mask);
}

template <bool Shared>
__global__ void kernel(int branches, std::uint32_t rounds, std::uint32_t base_bytes, std::uint32_t* wrong) {
  unsigned lane;
  asm("mov.u32 %0, %%laneid;" : "=r"(lane));
  for (std::uint32_t round = 0; round < rounds; ++round) {
    if (branches == 2 && lane % 3u == 0u) {
      step<Shared>(round, base_bytes, wrong);
    } else {
      step<Shared>(round, base_bytes, wrong);
    }
  }
}

int main(int argc, char** argv) {
  const std::string v = argc > 1 ? argv[1] : "shared";
  const std::uint32_t rounds = argc > 2 ? static_cast<std::uint32_t>(std::atoi(argv[2])) : 8u;
  const int launches = argc > 3 ? std::atoi(argv[3]) : 3;
  cudaDeviceSetLimit(cudaLimitMallocHeapSize, std::size_t{256} << 20);
  std::uint32_t* wrong = nullptr;
  cudaMalloc(&wrong, sizeof *wrong);
  cudaMemset(wrong, 0, sizeof *wrong);
  cudaError_t e = cudaSuccess;
  for (int i = 0; i < launches && e == cudaSuccess; ++i) {
    const std::uint32_t bytes = v == "sharedbig" ? 2048u : 64u;
    if (v == "global") kernel<false><<<128, 256>>>(2, rounds, bytes, wrong);
    else kernel<true><<<128, 256>>>(v == "shared1" ? 1 : 2, rounds, bytes, wrong);
    e = cudaDeviceSynchronize();
  }
  if (e != cudaSuccess) {
    std::printf("CUDA error: %s\n", cudaGetErrorString(e));
    return 3;
  }
  std::uint32_t w = 0;
  cudaMemcpy(&w, wrong, sizeof w, cudaMemcpyDeviceToHost);
  std::printf("wrong values %u\n", w);
  return w == 0 ? 0 : 2;
}
