// Device functions: sizes passed as arguments, functions called only by all
// threads, called from both kinds of code (they get the coalescing flag,
// also through a second level), and one whose address escapes.
#include "manyalloc/heap/coalesce/runtime.hpp"  // added by manyalloc-coalesce
__device__ float* make_buffer(unsigned floats) {
  return static_cast<float*>(manyalloc::heap::coalesce::uniform_malloc(floats * sizeof(float)));
}

__device__ void scratch(unsigned bytes) {
  void* p = manyalloc::heap::coalesce::dynamic_malloc(bytes);
  manyalloc::heap::coalesce::free(p);
}

__device__ void inner(bool manyalloc_coalesce = false) {
  void* p = manyalloc::heap::coalesce::malloc_uniform_if(24, manyalloc_coalesce);
  manyalloc::heap::coalesce::free(p);
}

__device__ void outer(bool manyalloc_coalesce = false) {
  inner(manyalloc_coalesce);
}

__device__ void via_pointer() {
  void* p = manyalloc::heap::coalesce::dynamic_malloc(40);
  manyalloc::heap::coalesce::free(p);
}

__global__ void uses_helpers(float** out, unsigned n) {
  out[threadIdx.x] = make_buffer(n);  // every call passes a uniform size
  scratch(64);
  if (threadIdx.x % 2 == 1) scratch(threadIdx.x);  // thread-dependent size at one call: dynamic in scratch
  outer(true);
  if (threadIdx.x == 0) outer();
  void (*f)() = via_pointer;
  f();
}
