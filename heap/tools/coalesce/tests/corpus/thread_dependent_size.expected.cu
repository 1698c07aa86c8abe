// Sizes: uniform (constants, kernel arguments, locals computed from them)
// against thread-dependent ones (threadIdx, loads from memory, locals that
// depend on either).
#include "manyalloc/heap/coalesce/runtime.hpp"  // added by manyalloc-coalesce
#include <cstddef>

__global__ void sizes(const unsigned* table, unsigned n, float** out) {
  const unsigned tid = blockIdx.x * blockDim.x + threadIdx.x;
  const std::size_t per_block = n * blockDim.x;
  float* same = static_cast<float*>(manyalloc::heap::coalesce::uniform_malloc(n * sizeof(float)));          // uniform: kernel argument
  float* scaled = static_cast<float*>(manyalloc::heap::coalesce::uniform_malloc(per_block + 16));          // uniform: local of uniform values
  float* mine = static_cast<float*>(manyalloc::heap::coalesce::dynamic_malloc((threadIdx.x + 1) * 4));     // thread-dependent
  float* looked_up = static_cast<float*>(manyalloc::heap::coalesce::dynamic_malloc(table[tid]));           // a load from memory
  float* first = static_cast<float*>(manyalloc::heap::coalesce::dynamic_malloc(table[0]));                 // also a load (memory may change)
  std::size_t grows = 8;
  grows += tid;
  float* grown = static_cast<float*>(manyalloc::heap::coalesce::dynamic_malloc(grows));                    // assigned a thread-dependent value
  out[tid] = same;
  manyalloc::heap::coalesce::free(scaled);
  manyalloc::heap::coalesce::free(mine);
  manyalloc::heap::coalesce::free(looked_up);
  manyalloc::heap::coalesce::free(first);
  manyalloc::heap::coalesce::free(grown);
}
