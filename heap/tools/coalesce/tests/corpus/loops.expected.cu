// Loops: uniform trip counts (constants, kernel arguments) against
// thread-dependent ones, loops that some threads leave early, and a continue
// that ends an iteration early for some threads.
#include "manyalloc/heap/coalesce/runtime.hpp"  // added by manyalloc-coalesce
constexpr unsigned group = 32;
constexpr unsigned elems = 4;

__global__ void per_peer(double** send, unsigned rounds) {
  const unsigned w = blockIdx.x * blockDim.x + threadIdx.x;
  for (unsigned j = 0; j < group; ++j) {
    send[w * group + j] = static_cast<double*>(manyalloc::heap::coalesce::uniform_malloc(elems * sizeof(double)));  // uniform
  }
  unsigned k = 0;
  while (k < rounds) {
    void* p = manyalloc::heap::coalesce::uniform_malloc((k + 1) * 16);  // the counter is uniform too
    manyalloc::heap::coalesce::free(p);
    ++k;
  }
  for (unsigned i = 0; i < threadIdx.x; ++i) {
    void* p = manyalloc::heap::coalesce::dynamic_malloc(8);  // thread-dependent trip count
    manyalloc::heap::coalesce::free(p);
  }
  for (unsigned i = 0; i < rounds; ++i) {
    void* p = manyalloc::heap::coalesce::uniform_malloc(8);  // uniform: the continue below only ends this iteration early
    if (p == nullptr) continue;
    void* q = manyalloc::heap::coalesce::dynamic_malloc(8);  // after a thread-dependent continue
    manyalloc::heap::coalesce::free(q);
    manyalloc::heap::coalesce::free(p);
  }
  for (unsigned i = 0; i < rounds; ++i) {
    if (send[w * group] == nullptr) break;  // some threads leave early
    void* p = manyalloc::heap::coalesce::dynamic_malloc(8);
    manyalloc::heap::coalesce::free(p);
  }
}
