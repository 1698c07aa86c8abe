// small_quotient (common/math.hpp) on a CUDA GPU, where it is not a division
// but a fast reciprocal and a correction: quotients and remainders are
// compared with the division operators. Every y below the bound for the
// divisors up to 64, and for every divisor below the bound every multiple
// of it and its two neighbours (the truncated float quotient can fall one
// short only at a multiple; the neighbours are checked all the same). Without the correction the first kernel
// finds tens of thousands of misses (quotient_probe/uncorrected.cu). Skips
// itself when no GPU is present.
#include <gtest/gtest.h>

#include <cstdint>

#include "manyalloc/common/math.hpp"
#include "manyalloc_support/cuda_runner.hpp"

namespace manyalloc::heap::testing {
namespace {

constexpr std::uint32_t limit = small_quotient_limit;

struct Mismatches {
  unsigned long long count;
  std::uint32_t y, d;  // one of them (the last written)
};

__device__ void check(Mismatches* m, std::uint32_t y, std::uint32_t d) {
  if (small_quotient(y, d) != y / d || small_remainder(y, d) != y % d) {
    atomicAdd(&m->count, 1ull);
    m->y = y;
    m->d = d;
  }
}

// Thread y checks every divisor from 1 to 64.
__global__ void every_small_divisor(Mismatches* m) {
  const std::uint32_t y = blockIdx.x * blockDim.x + threadIdx.x;
  if (y >= limit) return;
  for (std::uint32_t d = 1; d <= 64; ++d) check(m, y, d);
}

// Thread d checks y = k * d - 1, k * d and k * d + 1 for every multiple
// k * d below the bound, 0 and the largest y.
__global__ void every_divisor_at_multiples(Mismatches* m) {
  const std::uint32_t d = blockIdx.x * blockDim.x + threadIdx.x + 1u;
  if (d >= limit) return;
  for (std::uint32_t y = d; y < limit; y += d) {
    check(m, y - 1u, d);
    check(m, y, d);
    if (y + 1u < limit) check(m, y + 1u, d);
  }
  check(m, limit - 1u, d);
  check(m, 0u, d);
}

TEST(CudaSmallQuotient, MatchesDivisionForEveryArgumentTheHeapsUse) {
  if (!CudaRunner::available()) GTEST_SKIP() << "no CUDA device present: test skipped";
  Mismatches* m = nullptr;
  ASSERT_EQ(cudaMallocManaged(&m, sizeof(Mismatches)), cudaSuccess);
  *m = Mismatches{0, 0, 0};
  every_small_divisor<<<limit / 256, 256>>>(m);
  ASSERT_EQ(cudaGetLastError(), cudaSuccess);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  EXPECT_EQ(m->count, 0u) << "divisors 1-64: e.g. y = " << m->y << ", d = " << m->d;
  *m = Mismatches{0, 0, 0};
  every_divisor_at_multiples<<<limit / 256, 256>>>(m);
  ASSERT_EQ(cudaGetLastError(), cudaSuccess);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  EXPECT_EQ(m->count, 0u) << "every divisor, at its multiples: e.g. y = " << m->y << ", d = " << m->d;
  cudaFree(m);
}

}  // namespace
}  // namespace manyalloc::heap::testing
