// The limit of one 1 GiB claim with no allocator in the way: one thread
// swaps 512 words (1 GiB of 64 KiB pages, 32 pages a word) from 0 to all
// ones with CAS, BATCH of them in flight at a time, and waits for each
// batch's results (as a claim must, to know whether it won). Also an empty
// one-thread launch: the floor under every row.
#include "../probe_kernels.cuh"
#include <algorithm>
#include <vector>

template <int BATCH> __global__ void claim_k(unsigned* words, unsigned n, unsigned* won_out) {
  unsigned won_all = 0;
  for (unsigned base = 0; base < n; base += BATCH) {
    unsigned old[BATCH];
#pragma unroll
    for (int i = 0; i < BATCH; ++i) old[i] = atomicCAS(&words[base + i], 0u, 0xffffffffu);
    unsigned won = 0;
#pragma unroll
    for (int i = 0; i < BATCH; ++i) won += old[i] == 0u;
    if (won != BATCH) break;  // a claim that loses stops: the branch makes each batch wait for its results
    won_all += won;
  }
  *won_out = won_all;
}
__global__ void empty_k(unsigned* out) { *out = 1; }

template <int BATCH> void row(unsigned* words, unsigned* won) {
  std::vector<float> t;
  for (int r = 0; r < 21; ++r) {
    probe_check(cudaMemset(words, 0, 512 * sizeof(unsigned)), "memset");
    t.push_back(timed([&] { claim_k<BATCH><<<1, 1>>>(words, 512, won); }));
  }
  std::printf("roofline batch %3d: median %6.1f us (min %6.1f)\n", BATCH, probe_median(t), *std::min_element(t.begin(), t.end()));
}

int main() {
  unsigned *words, *won;
  probe_check(cudaMalloc(&words, 512 * sizeof(unsigned)), "malloc");
  probe_check(cudaMalloc(&won, sizeof(unsigned)), "malloc");
  std::vector<float> e;
  for (int r = 0; r < 21; ++r) e.push_back(timed([&] { empty_k<<<1, 1>>>(won); }));
  std::printf("empty one-thread launch: median %6.1f us\n", probe_median(e));
  row<1>(words, won);
  row<16>(words, won);
  row<32>(words, won);
  row<64>(words, won);
  row<128>(words, won);
}
