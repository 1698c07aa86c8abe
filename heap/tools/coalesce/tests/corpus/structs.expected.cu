// Structs: members of a by-value kernel argument and of __constant__ data
// are uniform; a local struct stays uniform until a member is assigned a
// thread-dependent value or a non-const member function is called on it.
#include "manyalloc/heap/coalesce/runtime.hpp"  // added by manyalloc-coalesce
#include <algorithm>

struct Sizes {
  unsigned count;
  unsigned bytes;
  __device__ void grow(unsigned by) { bytes += by; }
  __device__ unsigned total() const { return count * bytes; }
};

__constant__ Sizes constant_sizes;

__global__ void with_structs(Sizes arg, void** out) {
  out[0] = manyalloc::heap::coalesce::uniform_malloc(arg.count * arg.bytes);                    // uniform: kernel argument
  out[1] = manyalloc::heap::coalesce::uniform_malloc(std::max(arg.bytes, 16u));                 // uniform: const reference to a member
  out[2] = manyalloc::heap::coalesce::uniform_malloc(constant_sizes.bytes);                     // uniform: __constant__
  Sizes local = arg;
  out[3] = manyalloc::heap::coalesce::uniform_malloc(local.bytes);                              // uniform: a copy of the argument
  Sizes mine = arg;
  mine.bytes = threadIdx.x + 1;
  out[4] = manyalloc::heap::coalesce::dynamic_malloc(mine.bytes);                               // a member assigned a thread-dependent value
  Sizes grown = arg;
  grown.grow(8);
  out[5] = manyalloc::heap::coalesce::dynamic_malloc(grown.bytes);                              // a non-const member function ran on it
}
