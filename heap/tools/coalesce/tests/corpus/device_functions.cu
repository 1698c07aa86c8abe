// Device functions: sizes passed as arguments, functions called only by all
// threads, called from both kinds of code (they get the coalescing flag,
// also through a second level), and one whose address escapes.
__device__ float* make_buffer(unsigned floats) {
  return static_cast<float*>(malloc(floats * sizeof(float)));
}

__device__ void scratch(unsigned bytes) {
  void* p = malloc(bytes);
  free(p);
}

__device__ void inner() {
  void* p = malloc(24);
  free(p);
}

__device__ void outer() {
  inner();
}

__device__ void via_pointer() {
  void* p = malloc(40);
  free(p);
}

__global__ void uses_helpers(float** out, unsigned n) {
  out[threadIdx.x] = make_buffer(n);  // every call passes a uniform size
  scratch(64);
  if (threadIdx.x % 2 == 1) scratch(threadIdx.x);  // thread-dependent size at one call: dynamic in scratch
  outer();
  if (threadIdx.x == 0) outer();
  void (*f)() = via_pointer;
  f();
}
