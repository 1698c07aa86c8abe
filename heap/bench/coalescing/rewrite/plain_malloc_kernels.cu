// The unit and all-to-all benchmark kernels of [Blach2022] section 4 written
// with CUDA's plain malloc/free, as a user would: the build runs
// manyalloc-coalesce on this file (every malloc here is uniform, which the
// build checks with --fail-unless-uniform) and compiles the result into
// manyalloc_coalescing_rewrite_bench, next to hand-written kernels that call
// the same policy through a heap handle.
#include <cstdint>

#include "plain_malloc_kernels.hpp"
#include "workloads.hpp"

namespace manyalloc::heap::bench::rewrite {

namespace {

__global__ void unit_alloc_init(std::uint32_t n, float** ptrs, Counters* counters) {
  const std::uint32_t w = blockIdx.x * blockDim.x + threadIdx.x;
  float* p = static_cast<float*>(malloc(n * sizeof(float)));
  ptrs[w] = p;
  if (p == nullptr) {
    atomicAdd(&counters->fails, 1ull);
  } else {
    unit_init(p, n);
  }
}

// Runs the workload, checks it, frees.
__global__ void unit_verify_free(std::uint32_t n, bool quadratic, float** ptrs, Counters* counters) {
  const std::uint32_t w = blockIdx.x * blockDim.x + threadIdx.x;
  float* p = ptrs[w];
  if (p != nullptr) {
    unit_workload(p, n, quadratic);
    if (!unit_verified(p, n, quadratic)) atomicAdd(&counters->bad, 1ull);
  }
  free(p);
}

__global__ void alltoall_send(double** send, Counters* counters) {
  const std::uint32_t w = blockIdx.x * blockDim.x + threadIdx.x;
  const std::uint32_t base = w / alltoall_group * alltoall_group;
  for (std::uint32_t j = 0; j < alltoall_group; ++j) {
    double* b = static_cast<double*>(malloc(alltoall_elems * sizeof(double)));
    send[w * alltoall_group + j] = b;
    if (b == nullptr) {
      atomicAdd(&counters->fails, 1ull);
      continue;
    }
    for (std::uint32_t e = 0; e < alltoall_elems; ++e) b[e] = alltoall_message(w, base + j, e);
  }
}

__global__ void alltoall_exchange(double** send, double** recv, Counters* counters) {
  const std::uint32_t w = blockIdx.x * blockDim.x + threadIdx.x;
  const std::uint32_t base = w / alltoall_group * alltoall_group;
  const std::uint32_t me = w - base;
  for (std::uint32_t j = 0; j < alltoall_group; ++j) {
    double* r = static_cast<double*>(malloc(alltoall_elems * sizeof(double)));
    recv[w * alltoall_group + j] = r;
    const double* s = send[(base + j) * alltoall_group + me];
    if (r == nullptr || s == nullptr) {
      atomicAdd(&counters->fails, 1ull);
      continue;
    }
    bool ok = true;
    for (std::uint32_t e = 0; e < alltoall_elems; ++e) {
      r[e] = s[e];
      ok = ok && r[e] == alltoall_message(base + j, w, e);
    }
    if (!ok) atomicAdd(&counters->bad, 1ull);
  }
}

__global__ void alltoall_free(double** send, double** recv) {
  const std::uint32_t w = blockIdx.x * blockDim.x + threadIdx.x;
  for (std::uint32_t j = 0; j < alltoall_group; ++j) {
    free(send[w * alltoall_group + j]);
    free(recv[w * alltoall_group + j]);
  }
}

unsigned blocks_for(std::uint32_t threads) { return threads / block_threads; }

}  // namespace

int plain_unit_alloc_init(std::uint32_t threads, std::uint32_t n, float** ptrs, Counters* counters) {
  unit_alloc_init<<<blocks_for(threads), block_threads>>>(n, ptrs, counters);
  return static_cast<int>(cudaGetLastError());
}

int plain_unit_verify_free(std::uint32_t threads, std::uint32_t n, bool quadratic, float** ptrs, Counters* counters) {
  unit_verify_free<<<blocks_for(threads), block_threads>>>(n, quadratic, ptrs, counters);
  return static_cast<int>(cudaGetLastError());
}

int plain_alltoall_send(std::uint32_t threads, double** send, Counters* counters) {
  alltoall_send<<<blocks_for(threads), block_threads>>>(send, counters);
  return static_cast<int>(cudaGetLastError());
}

int plain_alltoall_exchange(std::uint32_t threads, double** send, double** recv, Counters* counters) {
  alltoall_exchange<<<blocks_for(threads), block_threads>>>(send, recv, counters);
  return static_cast<int>(cudaGetLastError());
}

int plain_alltoall_free(std::uint32_t threads, double** send, double** recv) {
  alltoall_free<<<blocks_for(threads), block_threads>>>(send, recv);
  return static_cast<int>(cudaGetLastError());
}

}  // namespace manyalloc::heap::bench::rewrite
