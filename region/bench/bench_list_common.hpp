// What the three list-exchange benchmarks share (bench_list.cpp: regions and
// MPI_Get, bench_list_roofline.cpp, bench_list_shmem.cpp): the 256-B node,
// the values a list starts with and ends with after the stages, the
// index-linked lists of the one-sided baselines, the timed walk, the command line, and the
// fields every list_exchange record carries.
#pragma once

#include <sys/resource.h>

#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "bench_json.hpp"

namespace region_bench {

struct Node {
  Node* next;                // region and roofline lists
  std::uint64_t value;       // initial_value(), + 1 per stage
  std::uint64_t next_index;  // one-sided baselines (MPI_Get, OpenSHMEM): index of the next node
  char pad[232];
};
static_assert(sizeof(Node) == 256);

constexpr std::uint64_t no_index = ~std::uint64_t{0};  // next_index of the last node

// Value of node i of worker me's list when built; every one of the nw - 1
// stages adds 1 to every node of the list.
inline std::uint64_t initial_value(int me, std::uint64_t i) { return static_cast<std::uint64_t>(me) << 32 | i; }
inline std::uint64_t final_value(int me, std::uint64_t i, int nw) {
  return initial_value(me, i) + static_cast<std::uint64_t>(nw - 1);
}

// The pointer-linked list after `anchor` has n nodes, all at final_value.
// In the same pass, *in_order (when given): the share of nodes after the
// first that lie right after their predecessor (1 for n <= 1).
inline bool check_list(const Node* anchor, std::uint64_t n, int me, int nw, double* in_order = nullptr) {
  std::uint64_t i = 0, seq = 0;
  bool ok = true;
  for (const Node* x = anchor->next; x != nullptr; x = x->next, ++i) {
    if (x->value != final_value(me, i, nw)) ok = false;
    if (x->next == x + 1) ++seq;
  }
  if (in_order != nullptr) *in_order = n > 1 ? static_cast<double>(seq) / static_cast<double>(n - 1) : 1.0;
  return ok && i == n;
}

// The walk the pointer-linked variants (region, roofline) time: each node of
// the list after `anchor` gets +1 (not inlined into the timing loops, so
// that they run this very code; the MPI_Get and OpenSHMEM variants walk by
// index).
[[gnu::noinline]] inline void add_one_to_each(Node* anchor) {
  for (Node* x = anchor->next; x != nullptr; x = x->next) x->value += 1;
}

// The one-sided baselines' list: node i at base[i], linked by index.
inline void build_indexed(Node* base, std::uint64_t n, int me) {
  for (std::uint64_t i = 0; i < n; ++i) {
    base[i].next_index = i + 1 < n ? i + 1 : no_index;
    base[i].value = initial_value(me, i);
  }
}
inline bool check_indexed(const Node* base, std::uint64_t n, int me, int nw) {
  bool ok = true;
  for (std::uint64_t i = 0; i < n; ++i)
    if (base[i].value != final_value(me, i, nw)) ok = false;
  return ok;
}

inline double minor_faults() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_minflt);
}

inline bool power_of_two(int x) { return (x & (x - 1)) == 0; }

// Command line: [nodes...] [--reps R] and, where `flag` is given, that flag.
struct ListArgs {
  std::vector<std::uint64_t> sizes;
  int reps = 3;
  bool flag = false;
};
inline ListArgs parse_list_args(int argc, char** argv, const char* flag = nullptr) {
  ListArgs a;
  for (int i = 1; i < argc; ++i) {
    if (std::string(argv[i]) == "--reps" && i + 1 < argc)
      a.reps = std::atoi(argv[++i]);
    else if (flag != nullptr && std::string(argv[i]) == flag)
      a.flag = true;
    else
      a.sizes.push_back(std::strtoull(argv[i], nullptr, 10));
  }
  if (a.sizes.empty()) a.sizes = {15000, 30000};
  return a;
}

// A list_exchange record of nw workers with n nodes each; the caller sets
// seconds, fails and verified and appends its fields after `workers`.
inline Record list_record(const char* allocator, int nw, std::uint64_t n) {
  Record rec;
  rec.experiment = "list_exchange";
  rec.allocator = allocator;
  rec.threads = nw;
  rec.bytes = static_cast<double>(n) * sizeof(Node) * nw;
  rec.ops = static_cast<double>(n) * nw * (nw - 1);  // node visits
  rec.extra("nodes", static_cast<double>(n));
  rec.extra("workers", nw);
  return rec;
}

}  // namespace region_bench
