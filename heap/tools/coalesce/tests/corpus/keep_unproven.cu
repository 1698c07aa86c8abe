// manyalloc-coalesce-args: --unproven=keep
// With --unproven=keep the calls not proven uniform stay CUDA's malloc; a
// flagged function falls back to it as well.
__device__ void helper() {
  void* p = malloc(16);
  free(p);
}

__global__ void mixed(void** out) {
  out[threadIdx.x] = malloc(128);
  if (threadIdx.x < 8) out[threadIdx.x] = malloc(threadIdx.x + 1);
  helper();
  if (threadIdx.x == 0) helper();
}
