// Linked-list exchange with OpenSHMEM (the UPC-like baseline of [Lyberis2012]
// section 6.5): nodes in the symmetric heap, the partner's list fetched node
// by node with shmem_getmem, modified, and written back with shmem_putmem.
// Usage: oshrun -n <workers> region_bench_list_shmem [nodes...] [--reps R]
#include <shmem.h>

#include <chrono>
#include <cstdint>
#include <cstdio>

#include "bench_list_common.hpp"

namespace {
using region_bench::Node;  // linked by next_index

double now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

long psync[SHMEM_REDUCE_SYNC_SIZE];
double pwrk_d[SHMEM_REDUCE_MIN_WRKDATA_SIZE];
int pwrk_i[SHMEM_REDUCE_MIN_WRKDATA_SIZE];
double red_d_src, red_d_dst;
int red_i_src, red_i_dst;
}  // namespace

int main(int argc, char** argv) {
  shmem_init();
  const int me = shmem_my_pe(), nw = shmem_n_pes();
  const region_bench::ListArgs args = region_bench::parse_list_args(argc, argv);
  for (int i = 0; i < SHMEM_REDUCE_SYNC_SIZE; ++i) psync[i] = SHMEM_SYNC_VALUE;
  if (!region_bench::power_of_two(nw)) {
    if (me == 0) std::fprintf(stderr, "bench_list_shmem: PEs (%d) must be a power of two\n", nw);
    shmem_finalize();
    return 1;
  }
  shmem_barrier_all();
  for (std::uint64_t n : args.sizes) {
    for (int rep = 0; rep < args.reps; ++rep) {
      double t0 = now();
      auto* base = static_cast<Node*>(shmem_malloc(n * sizeof(Node)));
      region_bench::build_indexed(base, n, me);
      const double build = now() - t0;
      shmem_barrier_all();
      t0 = now();
      for (int stage = 1; stage < nw; ++stage) {
        const int peer = me ^ stage;
        Node local;
        for (std::uint64_t idx = 0; idx != region_bench::no_index;) {
          shmem_getmem(&local, &base[idx], sizeof(Node), peer);
          local.value += 1;
          shmem_putmem(&base[idx], &local, sizeof(Node), peer);
          shmem_quiet();
          idx = local.next_index;
        }
        shmem_barrier_all();
      }
      const double exch = now() - t0;
      const int ok = region_bench::check_indexed(base, n, me, nw) ? 1 : 0;
      red_d_src = exch;
      shmem_double_max_to_all(&red_d_dst, &red_d_src, 1, 0, 0, nw, pwrk_d, psync);
      shmem_barrier_all();
      red_i_src = ok;
      shmem_int_min_to_all(&red_i_dst, &red_i_src, 1, 0, 0, nw, pwrk_i, psync);
      shmem_barrier_all();
      if (me == 0) {
        region_bench::Record rec = region_bench::list_record("openshmem-getmem", nw, n);
        rec.seconds = red_d_dst;
        rec.verified = red_i_dst == 1;
        rec.extra("build_seconds", build);
        rec.extra("rep", rep);
        rec.print();
      }
      shmem_free(base);
      shmem_barrier_all();
    }
  }
  shmem_finalize();
  return 0;
}
