// Ways a value or the control flow escapes the simple patterns: a local a
// lambda changes through a reference capture, a reference parameter, a
// backward goto under a thread-dependent condition, and an address taken.
__device__ void* through_reference(const unsigned& bytes) {
  return malloc(bytes);  // a reference reads memory
}

__global__ void escapes(void** out, unsigned n) {
  unsigned captured = n;
  auto set = [&] { captured = threadIdx.x + 1; };
  set();
  out[0] = malloc(captured);  // changed by the lambda
  unsigned by_value = n;
  auto read = [=] { return by_value; };
  out[1] = malloc(by_value + read());  // a lambda call: not analysed
  out[2] = through_reference(n);
  unsigned addressed = n;
  unsigned* where = &addressed;
  *where = threadIdx.x;
  out[3] = malloc(addressed);  // its address was taken
}

__global__ void jumps_back(void** out, unsigned rounds) {
  unsigned round = 0;
again:
  out[round] = malloc(32);  // reached again by the threads that jump back
  ++round;
  if (round < rounds && threadIdx.x % 2 == 0) goto again;
}
