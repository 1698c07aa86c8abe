// Roofline of the linked-list exchange (bench_list.cpp): the same lists, the
// same stages and barriers, and the same walk (`x->value += 1` over 256-B
// nodes in address order), but no allocator and no transfer at all. What is
// left is the cost of the application's own walk with all workers walking at
// once, i.e. the best exchange time any library could give the region
// variant on this machine.
//   allocator "roofline-own-walk":  every worker walks its own list, in
//                                   private anonymous memory, in every stage.
//   allocator "roofline-peer-walk": every worker walks its stage partner's
//                                   list in the global address space (mapped
//                                   by the library's own map_global_address_space,
//                                   one memfd per host): the nodes were last written
//                                   by another core, which is what a zero-copy
//                                   mr_recv hands the application.
// Layout as in the region variant: n nodes of 256 B, node i+1 right after node
// i (balloc places them so: nodes_in_address_order = 1.000 in every region
// run), 4 KiB pages (the GAS is a memfd, no THP unless shmem_enabled allows
// it; the private lists get MADV_NOHUGEPAGE to match), a separate anchor node
// holding the head, the list rebuilt by its owner in every repetition. Stage
// s pairs me with me XOR s; each stage ends with MPI_Barrier. All pages are
// mapped before the timed phase (the region variant's steady state, i.e. its
// repetitions after the first, takes no page faults either).
// Both variants run in the same process, alternating, for each list length.
// Usage: mpiexec -n <workers> region_bench_list_roofline [nodes...] [--reps R]
// Workers (all ranks) must be a power of two and share one host.
#include <mpi.h>
#include <sys/mman.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <vector>

#include "bench_list_common.hpp"
#include "gas.hpp"
#include "prefault.hpp"

namespace {

using region_bench::minor_faults;
using region_bench::Node;  // as in bench_list.cpp

constexpr std::uint64_t page = 4096;
constexpr std::uint64_t mib = 1ull << 20;

double now() { return MPI_Wtime(); }

struct Result {
  double build = 0, exchange = 0, walk = 0, barrier = 0, faults = 0;
  bool verified = true;
};

// The list of `n` nodes at `mem` (node i at mem + i * 256), anchor after them.
Node* build(char* mem, std::uint64_t n, int me) {
  auto* nodes = reinterpret_cast<Node*>(mem);
  for (std::uint64_t i = 0; i < n; ++i) {
    nodes[i].next = i + 1 < n ? &nodes[i + 1] : nullptr;
    nodes[i].value = region_bench::initial_value(me, i);
  }
  nodes[n].next = n > 0 ? &nodes[0] : nullptr;
  return &nodes[n];
}

// Stages as in bench_list.cpp: stage s (1..nw-1) walks list_of(me ^ s), then
// MPI_Barrier.
template <class ListOf>
void stages(int me, int nw, ListOf list_of, Result& res) {
  MPI_Barrier(MPI_COMM_WORLD);
  const double f0 = minor_faults();
  const double t0 = now();
  for (int stage = 1; stage < nw; ++stage) {
    const double w0 = now();
    region_bench::add_one_to_each(list_of(me ^ stage));
    const double b0 = now();
    res.walk += b0 - w0;
    MPI_Barrier(MPI_COMM_WORLD);
    res.barrier += now() - b0;
  }
  res.exchange = now() - t0;
  res.faults = minor_faults() - f0;
}

void report(const char* alloc, const char* memory, int nw, std::uint64_t n, int rep, const Result& r, int me) {
  double v[5] = {r.build, r.exchange, r.walk, r.barrier, r.faults}, m[5] = {};
  MPI_Reduce(v, m, 5, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
  int ok = r.verified ? 1 : 0, all_ok = 0;
  MPI_Reduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, 0, MPI_COMM_WORLD);
  if (me != 0) return;
  region_bench::Record rec = region_bench::list_record(alloc, nw, n);
  rec.seconds = m[1];
  rec.verified = all_ok == 1;
  rec.extra("build_seconds", m[0]);
  rec.extra("rep", rep);
  rec.extra("minor_faults", m[4]);
  rec.extra("walk_seconds", m[2]);     // max over workers of the walks alone
  rec.extra("barrier_seconds", m[3]);  // MPI_Barrier after each stage
  rec.extra_str("memory", memory);
  rec.print();
}

// Map every page of [p, p + bytes) into this process (read populate, as
// mr_recv's prefault does; a read of every page where the kernel lacks it).
void populate(char* p, std::uint64_t bytes) {
  if (madvise(p, bytes, manyalloc::region::detail::populate_read) == 0) return;
  volatile char sink = 0;
  for (std::uint64_t o = 0; o < bytes; o += page) sink = sink + p[o];
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int me = 0, nw = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &me);
  MPI_Comm_size(MPI_COMM_WORLD, &nw);
  const region_bench::ListArgs args = region_bench::parse_list_args(argc, argv);
  const std::vector<std::uint64_t>& sizes = args.sizes;
  MPI_Comm host;
  int host_size = 0;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, me, MPI_INFO_NULL, &host);
  MPI_Comm_size(host, &host_size);
  MPI_Comm_free(&host);
  if (!region_bench::power_of_two(nw) || host_size != nw) {
    if (me == 0) std::fprintf(stderr, "bench_list_roofline: ranks (%d) must be a power of two on one host\n", nw);
    MPI_Finalize();
    return 1;
  }
  // One slot per worker, 1 MiB aligned (the scheduler hands out 1-MiB pages).
  const std::uint64_t nmax = *std::max_element(sizes.begin(), sizes.end());
  const std::uint64_t slot = ((nmax + 1) * sizeof(Node) + mib - 1) / mib * mib;
  // The GAS itself: one memfd per host, mapped at the same address on every
  // rank, so the nodes' next pointers hold on every rank.
  const MPI_Comm world = MPI_COMM_WORLD;
  const manyalloc::region::detail::GasMapping gas =
      manyalloc::region::detail::map_global_address_space(slot * static_cast<std::uint64_t>(nw), true, false, &world);
  char* shared = gas.base != 0 && gas.shared ? reinterpret_cast<char*>(gas.base) : nullptr;
  void* own_p = mmap(nullptr, slot, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  int ok = shared != nullptr && own_p != MAP_FAILED ? 1 : 0, all = 0;
  MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  if (!all) {
    if (me == 0) std::fprintf(stderr, "bench_list_roofline: shared or private mapping failed\n");
    MPI_Finalize();
    return 1;
  }
  char* own = static_cast<char*>(own_p);
  madvise(own, slot, MADV_NOHUGEPAGE);
  // First touch by the owner (its slot of the memfd, its private memory),
  // then every rank maps all slots: no page faults in the timed phase.
  char* mine = shared + slot * static_cast<std::uint64_t>(me);
  for (std::uint64_t o = 0; o < slot; o += page) mine[o] = 0, own[o] = 0;
  MPI_Barrier(MPI_COMM_WORLD);
  populate(shared, slot * static_cast<std::uint64_t>(nw));
  std::vector<Node*> anchors(static_cast<std::size_t>(nw));

  for (std::uint64_t n : sizes) {
    for (int rep = 0; rep < args.reps; ++rep) {
      {  // own list, private memory
        Result res;
        MPI_Barrier(MPI_COMM_WORLD);
        const double t0 = now();
        Node* anchor = build(own, n, me);
        res.build = now() - t0;
        stages(me, nw, [&](int) { return anchor; }, res);
        res.verified = region_bench::check_list(anchor, n, me, nw);
        report("roofline-own-walk", "private-anonymous", nw, n, rep, res, me);
      }
      {  // the partner's list, shared memory
        Result res;
        MPI_Barrier(MPI_COMM_WORLD);
        const double t0 = now();
        Node* anchor = build(mine, n, me);
        res.build = now() - t0;
        // Anchors are at index n of every slot; the barrier in stages()
        // orders every owner's build before its partners' walks.
        for (int w = 0; w < nw; ++w)
          anchors[static_cast<std::size_t>(w)] = reinterpret_cast<Node*>(shared + slot * static_cast<std::uint64_t>(w)) + n;
        stages(me, nw, [&](int peer) { return anchors[static_cast<std::size_t>(peer)]; }, res);
        // After the last barrier: every partner is done.
        res.verified = region_bench::check_list(anchor, n, me, nw);
        report("roofline-peer-walk", "shared-memfd", nw, n, rep, res, me);
      }
    }
  }
  MPI_Barrier(MPI_COMM_WORLD);
  manyalloc::region::detail::unmap_global_address_space(gas);
  munmap(own, slot);
  MPI_Finalize();
  return 0;
}
