// Verification of the chunks an experiment got (bench.hpp): patterns in the
// first and last word of every chunk, read back after all are written, and
// the overlap check: the chunks sorted by address on the GPU (CUB radix sort), each
// must end before the next begins. Allocator-independent, so it lives in one
// translation unit of its own.
#include <cub/device/device_radix_sort.cuh>

#include "bench.hpp"

namespace manyalloc::heap::peers {
namespace {

constexpr unsigned kThreads = 256;

unsigned blocks_for(std::uint64_t n) {
  const std::uint64_t b = (n + kThreads - 1) / kThreads;
  return static_cast<unsigned>(b < (1u << 30) ? b : (1u << 30));
}

__device__ std::uint32_t pattern(std::uint64_t i, std::uint32_t salt) {
  return hash2(static_cast<std::uint32_t>(i) ^ 0x2545f491u, salt ^ static_cast<std::uint32_t>(i >> 32)) | 1u;
}

__device__ std::uint32_t* last_word(void* p, std::uint32_t bytes) {
  return reinterpret_cast<std::uint32_t*>(static_cast<char*>(p) + ((bytes - 4u) & ~3u));
}

// Writes the patterns; counts nulls, misaligned chunks and the bytes handed out.
__global__ void write_patterns(void* const* ptrs, std::uint64_t n, SizeSpec sizes, std::uint32_t salt,
                               unsigned long long* counters) {
  for (std::uint64_t i = blockIdx.x * static_cast<std::uint64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::uint64_t>(gridDim.x) * blockDim.x) {
    void* p = ptrs[i];
    if (p == nullptr) {
      atomicAdd(&counters[0], 1ull);
      continue;
    }
    const std::uint32_t bytes = sizes(i);
    atomicAdd(&counters[3], static_cast<unsigned long long>(bytes));
    if ((reinterpret_cast<std::uintptr_t>(p) & 3u) != 0 || bytes < 4) {
      atomicAdd(&counters[1], 1ull);
      continue;
    }
    const std::uint32_t w = pattern(i, salt);
    *static_cast<std::uint32_t*>(p) = w;
    *last_word(p, bytes) = ~w;
  }
}

__global__ void read_patterns(void* const* ptrs, std::uint64_t n, SizeSpec sizes, std::uint32_t salt,
                              unsigned long long* counters) {
  for (std::uint64_t i = blockIdx.x * static_cast<std::uint64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::uint64_t>(gridDim.x) * blockDim.x) {
    void* p = ptrs[i];
    const std::uint32_t bytes = sizes(i);
    if (p == nullptr || (reinterpret_cast<std::uintptr_t>(p) & 3u) != 0 || bytes < 4) continue;
    const std::uint32_t w = pattern(i, salt);
    if (*static_cast<const std::uint32_t*>(p) != w || *last_word(p, bytes) != ~w) atomicAdd(&counters[1], 1ull);
  }
}

__global__ void gather_keys(void* const* ptrs, std::uint64_t n, std::uint64_t* keys, std::uint64_t* index) {
  for (std::uint64_t i = blockIdx.x * static_cast<std::uint64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::uint64_t>(gridDim.x) * blockDim.x) {
    keys[i] = reinterpret_cast<std::uint64_t>(ptrs[i]);
    index[i] = i;
  }
}

// Sorted by address: chunk j (non-null) must end at or before chunk j+1 begins.
__global__ void count_overlaps(const std::uint64_t* keys, const std::uint64_t* index, std::uint64_t n,
                               SizeSpec sizes, unsigned long long* counters) {
  for (std::uint64_t j = blockIdx.x * static_cast<std::uint64_t>(blockDim.x) + threadIdx.x; j + 1 < n;
       j += static_cast<std::uint64_t>(gridDim.x) * blockDim.x) {
    if (keys[j] == 0) continue;
    if (keys[j] + sizes(index[j]) > keys[j + 1]) atomicAdd(&counters[2], 1ull);
  }
}

__global__ void nulls_kernel(void* const* ptrs, std::uint64_t n, unsigned long long* count) {
  unsigned long long mine = 0;
  for (std::uint64_t i = blockIdx.x * static_cast<std::uint64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::uint64_t>(gridDim.x) * blockDim.x)
    mine += ptrs[i] == nullptr;
  if (mine != 0) atomicAdd(count, mine);
}

}  // namespace

CheckResult check_chunks(void* const* d_ptrs, std::uint64_t n, SizeSpec sizes, std::uint32_t salt) {
  CheckResult r;
  if (n == 0) return r;
  DeviceArray<unsigned long long> counters(4);  // nulls, bad, overlaps, bytes
  const unsigned grid = blocks_for(n) < 65536u ? blocks_for(n) : 65536u;
  write_patterns<<<grid, kThreads>>>(d_ptrs, n, sizes, salt, counters.get());
  check(cudaGetLastError(), "write_patterns");
  read_patterns<<<grid, kThreads>>>(d_ptrs, n, sizes, salt, counters.get());
  check(cudaGetLastError(), "read_patterns");
  {
    DeviceArray<std::uint64_t> keys(n), index(n), keys_out(n), index_out(n);
    gather_keys<<<grid, kThreads>>>(d_ptrs, n, keys.get(), index.get());
    check(cudaGetLastError(), "gather_keys");
    std::size_t temp_bytes = 0;
    check(cub::DeviceRadixSort::SortPairs(nullptr, temp_bytes, keys.get(), keys_out.get(), index.get(),
                                          index_out.get(), n),
          "DeviceRadixSort (size)");
    DeviceArray<unsigned char> temp(temp_bytes);
    check(cub::DeviceRadixSort::SortPairs(temp.get(), temp_bytes, keys.get(), keys_out.get(), index.get(),
                                          index_out.get(), n),
          "DeviceRadixSort");
    count_overlaps<<<grid, kThreads>>>(keys_out.get(), index_out.get(), n, sizes, counters.get());
    check(cudaGetLastError(), "count_overlaps");
    check(cudaDeviceSynchronize(), "verification kernels");
  }
  unsigned long long got[4] = {0, 0, 0, 0};
  check(cudaMemcpy(got, counters.get(), sizeof got, cudaMemcpyDeviceToHost), "cudaMemcpy (verification)");
  r.nulls = got[0];
  r.bad = got[1];
  r.overlaps = got[2];
  r.bytes = got[3];
  return r;
}

std::uint64_t count_nulls(void* const* d_ptrs, std::uint64_t n) {
  if (n == 0) return 0;
  DeviceArray<unsigned long long> count(1);
  nulls_kernel<<<blocks_for(n) < 4096u ? blocks_for(n) : 4096u, kThreads>>>(d_ptrs, n, count.get());
  check(cudaGetLastError(), "nulls_kernel");
  unsigned long long got = 0;
  check(cudaMemcpy(&got, count.get(), sizeof got, cudaMemcpyDeviceToHost), "cudaMemcpy (nulls)");
  return got;
}

}  // namespace manyalloc::heap::peers
