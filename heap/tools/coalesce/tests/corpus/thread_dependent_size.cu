// Sizes: uniform (constants, kernel arguments, locals computed from them)
// against thread-dependent ones (threadIdx, loads from memory, locals that
// depend on either).
#include <cstddef>

__global__ void sizes(const unsigned* table, unsigned n, float** out) {
  const unsigned tid = blockIdx.x * blockDim.x + threadIdx.x;
  const std::size_t per_block = n * blockDim.x;
  float* same = static_cast<float*>(malloc(n * sizeof(float)));          // uniform: kernel argument
  float* scaled = static_cast<float*>(malloc(per_block + 16));          // uniform: local of uniform values
  float* mine = static_cast<float*>(malloc((threadIdx.x + 1) * 4));     // thread-dependent
  float* looked_up = static_cast<float*>(malloc(table[tid]));           // a load from memory
  float* first = static_cast<float*>(malloc(table[0]));                 // also a load (memory may change)
  std::size_t grows = 8;
  grows += tid;
  float* grown = static_cast<float*>(malloc(grows));                    // assigned a thread-dependent value
  out[tid] = same;
  free(scaled);
  free(mine);
  free(looked_up);
  free(first);
  free(grown);
}
