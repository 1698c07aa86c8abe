// Allocation under a branch on the thread index, under a block-uniform
// branch, behind ?:, and after a return that only some threads take.
__global__ void leader_allocates(int** shared_out, int flag) {
  if (threadIdx.x == 0) {
    shared_out[blockIdx.x] = static_cast<int*>(malloc(64));  // one thread: dynamic
  }
  if (blockIdx.x % 2 == 0) {
    void* p = malloc(32);  // every thread of the block takes this branch alike
    free(p);
  }
  if (flag > 3) {
    void* q = malloc(16);  // kernel argument: uniform
    free(q);
  }
  void* r = threadIdx.x < 16 ? malloc(8) : nullptr;  // behind a thread-dependent ?:
  free(r);
}

__global__ void bounded(float** out, unsigned count) {
  const unsigned tid = blockIdx.x * blockDim.x + threadIdx.x;
  if (tid >= count) return;
  out[tid] = static_cast<float*>(malloc(4 * sizeof(float)));  // after a divergent return
}
