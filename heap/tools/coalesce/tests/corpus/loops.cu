// Loops: uniform trip counts (constants, kernel arguments) against
// thread-dependent ones, loops that some threads leave early, and a continue
// that ends an iteration early for some threads.
constexpr unsigned group = 32;
constexpr unsigned elems = 4;

__global__ void per_peer(double** send, unsigned rounds) {
  const unsigned w = blockIdx.x * blockDim.x + threadIdx.x;
  for (unsigned j = 0; j < group; ++j) {
    send[w * group + j] = static_cast<double*>(malloc(elems * sizeof(double)));  // uniform
  }
  unsigned k = 0;
  while (k < rounds) {
    void* p = malloc((k + 1) * 16);  // the counter is uniform too
    free(p);
    ++k;
  }
  for (unsigned i = 0; i < threadIdx.x; ++i) {
    void* p = malloc(8);  // thread-dependent trip count
    free(p);
  }
  for (unsigned i = 0; i < rounds; ++i) {
    void* p = malloc(8);  // uniform: the continue below only ends this iteration early
    if (p == nullptr) continue;
    void* q = malloc(8);  // after a thread-dependent continue
    free(q);
    free(p);
  }
  for (unsigned i = 0; i < rounds; ++i) {
    if (send[w * group] == nullptr) break;  // some threads leave early
    void* p = malloc(8);
    free(p);
  }
}
