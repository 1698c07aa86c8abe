// manyalloc-coalesce-args: --unproven=keep
// With --unproven=keep the calls not proven uniform stay CUDA's malloc; a
// flagged function falls back to it as well.
#include "manyalloc/heap/coalesce/runtime.hpp"  // added by manyalloc-coalesce
__device__ void helper(bool manyalloc_coalesce = false) {
  void* p = manyalloc::heap::coalesce::malloc_uniform_if_else_plain(16, manyalloc_coalesce);
  manyalloc::heap::coalesce::free(p);
}

__global__ void mixed(void** out) {
  out[threadIdx.x] = manyalloc::heap::coalesce::uniform_malloc(128);
  if (threadIdx.x < 8) out[threadIdx.x] = malloc(threadIdx.x + 1);
  helper(true);
  if (threadIdx.x == 0) helper();
}
