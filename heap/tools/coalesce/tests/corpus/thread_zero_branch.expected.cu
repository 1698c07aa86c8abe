// Allocation under a branch on the thread index, under a block-uniform
// branch, behind ?:, and after a return that only some threads take.
#include "manyalloc/heap/coalesce/runtime.hpp"  // added by manyalloc-coalesce
__global__ void leader_allocates(int** shared_out, int flag) {
  if (threadIdx.x == 0) {
    shared_out[blockIdx.x] = static_cast<int*>(manyalloc::heap::coalesce::dynamic_malloc(64));  // one thread: dynamic
  }
  if (blockIdx.x % 2 == 0) {
    void* p = manyalloc::heap::coalesce::uniform_malloc(32);  // every thread of the block takes this branch alike
    manyalloc::heap::coalesce::free(p);
  }
  if (flag > 3) {
    void* q = manyalloc::heap::coalesce::uniform_malloc(16);  // kernel argument: uniform
    manyalloc::heap::coalesce::free(q);
  }
  void* r = threadIdx.x < 16 ? manyalloc::heap::coalesce::dynamic_malloc(8) : nullptr;  // behind a thread-dependent ?:
  manyalloc::heap::coalesce::free(r);
}

__global__ void bounded(float** out, unsigned count) {
  const unsigned tid = blockIdx.x * blockDim.x + threadIdx.x;
  if (tid >= count) return;
  out[tid] = static_cast<float*>(manyalloc::heap::coalesce::dynamic_malloc(4 * sizeof(float)));  // after a divergent return
}
