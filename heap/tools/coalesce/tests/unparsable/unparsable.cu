// Not valid CUDA: the tool must refuse it and leave it as it is.
__global__ void broken(int* out) {
  void* p = malloc(sizeof(int);
  out[threadIdx.x] = undeclared_helper(p);
}
