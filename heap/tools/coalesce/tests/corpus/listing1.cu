// [Blach2022] Listing 1 as a CUDA program: f allocates for every thread that
// calls it; the kernel calls it from all threads and from some.
#include <cstdio>

__device__ void f() {
  void* ptr = malloc(sizeof(int));
  free(ptr);
}

__global__ void all_to_all(int* out) {
  void* ptr = malloc(sizeof(int));
  f();
  out[threadIdx.x] = ptr != nullptr;
  free(ptr);
  if (threadIdx.x < 4) {
    void* ptr2 = malloc(sizeof(int));
    f();
    free(ptr2);
  }
}

int main() {
  int* out = nullptr;
  cudaMalloc(&out, 32 * sizeof(int));
  all_to_all<<<1, 32>>>(out);
  cudaDeviceSynchronize();
  cudaFree(out);
  return 0;
}
