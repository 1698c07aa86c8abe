// Templates: the pattern is rewritten once; sizes from template parameters
// and sizeof(T) are uniform.
#include <cstddef>

template <class T, unsigned Count>
__device__ T* make_array() {
  return static_cast<T*>(malloc(Count * sizeof(T)));
}

template <class T>
__global__ void fill(T** out, std::size_t n) {
  T* p = static_cast<T*>(malloc(n * sizeof(T)));
  T* q = make_array<T, 8>();
  T* r = static_cast<T*>(malloc((threadIdx.x + n) * sizeof(T)));
  out[threadIdx.x] = p;
  free(q);
  free(r);
}

template __global__ void fill<float>(float**, std::size_t);
template __global__ void fill<double>(double**, std::size_t);
