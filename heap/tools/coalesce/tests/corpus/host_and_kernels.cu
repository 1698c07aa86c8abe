// Host code keeps its own malloc/free; __host__ __device__ functions are
// left (the entry points are device-only); a file without main gets no
// Session (its kernels use the heaps of the program's main file).
#include <cstdlib>

__host__ __device__ void* either_side(unsigned bytes) {
  return malloc(bytes);
}

__global__ void kernel_only(int** out) {
  out[threadIdx.x] = static_cast<int*>(malloc(sizeof(int) * 4));
}

void host_side() {
  void* p = std::malloc(100);
  std::free(p);
}
