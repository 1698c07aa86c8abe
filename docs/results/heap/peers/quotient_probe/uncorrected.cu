// Probe: how often the truncated fast-reciprocal quotient alone (without
// small_quotient's correction step) misses y / d, for y < 2^21 and d <= 64:
// shows that the correction is needed, so the GPU test can fail.
#include <cstdio>
#include <cstdint>
__global__ void k(unsigned long long* miss) {
  const std::uint32_t y = blockIdx.x * blockDim.x + threadIdx.x;
  if (y >= (1u << 21)) return;
  for (std::uint32_t d = 1; d <= 64; ++d) {
    const auto q = static_cast<std::uint32_t>(__fdividef(static_cast<float>(y), static_cast<float>(d)));
    if (q != y / d) atomicAdd(miss, 1ull);
  }
}
int main() {
  unsigned long long* m; cudaMallocManaged(&m, 8); *m = 0;
  k<<<(1u << 21) / 256, 256>>>(m); cudaDeviceSynchronize();
  std::printf("uncorrected fast quotient: %llu of %llu (y < 2^21, d <= 64) differ from y / d\n", *m, 64ull << 21);
}
