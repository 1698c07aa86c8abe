// Already rewritten (the rewrite of listing1.cu): a second run changes nothing.
// [Blach2022] Listing 1 as a CUDA program: f allocates for every thread that
// calls it; the kernel calls it from all threads and from some.
#include "manyalloc/heap/coalesce/runtime.hpp"  // added by manyalloc-coalesce
#include <cstdio>

__device__ void f(bool manyalloc_coalesce = false) {
  void* ptr = manyalloc::heap::coalesce::malloc_uniform_if(sizeof(int), manyalloc_coalesce);
  manyalloc::heap::coalesce::free(ptr);
}

__global__ void all_to_all(int* out) {
  void* ptr = manyalloc::heap::coalesce::uniform_malloc(sizeof(int));
  f(true);
  out[threadIdx.x] = ptr != nullptr;
  manyalloc::heap::coalesce::free(ptr);
  if (threadIdx.x < 4) {
    void* ptr2 = manyalloc::heap::coalesce::dynamic_malloc(sizeof(int));
    f();
    manyalloc::heap::coalesce::free(ptr2);
  }
}

int main() {
  const manyalloc::heap::coalesce::Session manyalloc_coalesce_session;  // manyalloc-coalesce: heaps up until main returns
  int* out = nullptr;
  cudaMalloc(&out, 32 * sizeof(int));
  all_to_all<<<1, 32>>>(out);
  cudaDeviceSynchronize();
  cudaFree(out);
  return 0;
}
