// Macros: a macro in the size is fine (the arguments stay as written); a
// malloc inside a macro argument is rewritten where it is spelled; a malloc
// in a macro body is left for a person (the macro may have other uses).
#define FLOATS(n) ((n) * sizeof(float))
#define ALLOC_BYTES(n) malloc(n)
#define KEEP(x) (x)

__global__ void with_macros(float** out, unsigned n) {
  float* a = static_cast<float*>(malloc(FLOATS(n)));
  float* b = static_cast<float*>(KEEP(malloc(FLOATS(4))));
  float* c = static_cast<float*>(ALLOC_BYTES(FLOATS(n)));
  out[threadIdx.x] = a;
  free(b);
  free(c);
}
