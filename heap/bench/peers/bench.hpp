// Shared pieces of the peers benchmark (manyalloc_heap_peers_bench): options,
// records, the allocator registry, the size function and the verification
// entry points. Every translation unit of the program includes it, the peer
// adapters too, which are compiled as C++17 (alpaka and mallocMC 2.6 do not
// build as C++20), so this header is C++17 and includes no manyalloc header.
//
// The adapter contract (one small class per allocator, see our_heaps.cuh and
// peer_*.cu):
//
//   struct SomeAdapter {
//     struct Handle {                       // trivially copyable, passed to kernels by value
//       __device__ void* malloc(std::size_t bytes) const;   // nullptr when it cannot serve
//       __device__ void free(void* p) const;                // free(nullptr) does nothing
//     };
//     explicit SomeAdapter(std::size_t pool_bytes);  // create: a fresh heap of pool_bytes
//     ~SomeAdapter();                                // destroy: gives the pool back
//     Handle handle() const;
//     static constexpr bool fresh_heap = true;       // false: the heap outlives the object
//                                                    // (CUDA's device malloc heap)
//     static std::string note(std::size_t pool);     // configuration remark for the records
//   };
//
// The experiment kernels and drivers (experiments.cuh) are templates over it.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "records.hpp"  // heap/bench/suite: Measurement, json_escape

namespace manyalloc::heap::peers {

inline void check(cudaError_t err, const char* what) {
  if (err != cudaSuccess)
    throw std::runtime_error(std::string("CUDA error in ") + what + ": " + cudaGetErrorString(err));
}

// ---------------------------------------------------------------------------
// Options (parsed by main.cu; a child process receives the same command line)
// ---------------------------------------------------------------------------
inline const std::vector<std::string>& experiment_names() {
  static const std::vector<std::string> names{"throughput", "churn", "large", "usable"};
  return names;
}
// Run only when named in --experiments (heap/bench/pic).
inline const std::vector<std::string>& optional_experiment_names() {
  static const std::vector<std::string> names{"pic_steps", "pic_growth"};
  return names;
}

struct Options {
  std::vector<std::string> experiments = experiment_names();
  std::vector<std::string> allocators;                       // empty: all
  double pool_gib = 16;                                       // throughput, churn, large
  std::vector<std::uint32_t> threads{1u << 17, 1u << 20};     // throughput
  std::vector<std::uint32_t> sizes{16, 64, 256, 1024, 4096, 8192, 0};  // 0 = mixed 16 B - 4 KiB
  int repeat = 5;                                             // warm launches after the cold one
  int cold_heaps = 3;  // fresh heaps whose first launches give the cold figure (median)
  std::uint32_t churn_threads = 1u << 18;
  std::uint32_t churn_rounds = 50;
  int churn_reps = 5;
  double usable_gib = 2;
  double slow_s = 2.0;          // cold alloc+free above this: one warm launch at most, larger configs skipped
  double churn_budget_s = 5;    // per churn repetition (threads stop starting rounds after it)
  double usable_budget_s = 6;   // per usable-share size (no further waves after it)
  double timeout_s = 0;         // per child process; 0: the experiment's default
  double deadline_s = 0;        // whole run: no child starts after it, a running one is cut at it; 0: none
  bool gated_timing = true;     // timed launches queued behind a gate (experiments.cuh, EventTimer)
  std::string out = "peers.jsonl";
  bool quick = false;
  bool help = false;
  std::string table;                   // --table FILE: print the tables of FILE and exit
  std::vector<std::string> forwarded;  // the options as given, for the child processes
  // Child process (internal): run one (allocator, experiment), records into `records`.
  std::string child_allocator, child_experiment, records;
};

// ---------------------------------------------------------------------------
// Records: one JSON Lines record per measurement, the heap suite's fields
// (records.hpp) plus peer, launch, size, commit.
// ---------------------------------------------------------------------------
struct Record {
  bench::Measurement m;
  std::string size;     // "16", "mixed", "16-1024"
  std::string launch;   // "cold" / "warm" / "" (where it does not apply)
  bool skipped = false;
  bool crash = false;   // the child process failed in this experiment
  std::string note;
};

// One line; the fields every record has come first, in a fixed order
// (main.cu's table reads them back).
inline std::string to_json(const Record& r, bool peer) {
  using bench::json_escape;
  const auto& m = r.m;
  char buf[512];
  std::snprintf(buf, sizeof buf,
                "{\"suite\":\"%s\",\"experiment\":\"%s\",\"allocator\":\"%s\",\"peer\":%s,\"device\":\"%s\","
                "\"threads\":%llu,\"bytes\":%llu,\"size\":\"%s\",\"launch\":\"%s\",\"ops\":%llu,"
                "\"seconds\":%.9g,\"ops_per_s\":%.9g,\"fails\":%llu,\"verified\":%s,\"skipped\":%s,\"crash\":%s",
                json_escape(m.suite).c_str(), json_escape(m.experiment).c_str(), json_escape(m.allocator).c_str(),
                peer ? "true" : "false", json_escape(m.device).c_str(), static_cast<unsigned long long>(m.threads),
                static_cast<unsigned long long>(m.bytes), json_escape(r.size).c_str(), r.launch.c_str(),
                static_cast<unsigned long long>(m.ops), m.seconds, m.ops_per_s(),
                static_cast<unsigned long long>(m.fails), m.verified ? "true" : "false", r.skipped ? "true" : "false",
                r.crash ? "true" : "false");
  std::string s = buf;
  for (const auto& [k, v] : m.extra) {
    if (v != v || v - v != 0) continue;  // not finite
    std::snprintf(buf, sizeof buf, ",\"%s\":%.9g", json_escape(k).c_str(), v);
    s += buf;
  }
  for (const auto& [k, v] : m.tags) s += ",\"" + json_escape(k) + "\":\"" + json_escape(v) + "\"";
  if (!r.note.empty()) s += ",\"note\":\"" + json_escape(r.note) + "\"";
  if (const char* c = std::getenv("MANYALLOC_COMMIT"); c != nullptr && *c != '\0')
    s += ",\"commit\":\"" + json_escape(c) + "\"";
  return s + "}";
}

// ---------------------------------------------------------------------------
// The registry: every allocator of the program, ours and the peers. Each
// translation unit registers its adapters with static `Register` objects.
// ---------------------------------------------------------------------------
struct RunContext {
  const Options& opt;
  std::string allocator;
  bool peer;
  std::string device;
  std::FILE* out;

  void emit(Record r) const {
    r.m.allocator = allocator;
    r.m.device = device;
    const std::string line = to_json(r, peer);
    std::fprintf(out, "%s\n", line.c_str());
    std::fflush(out);
  }
};

using RunFn = void (*)(const RunContext&, const std::string& experiment);

struct Entry {
  std::string name;
  bool peer;
  int order;  // table column order: ours 0.., Gallatin 100, Ouroboros 200, mallocMC 300
  RunFn run;
  bool by_default = true;  // false: runs only when named in --allocators
};

inline std::vector<Entry>& registry() {
  static std::vector<Entry> entries;
  return entries;
}

struct Register {
  explicit Register(Entry e) { registry().push_back(std::move(e)); }
};

// ---------------------------------------------------------------------------
// Request sizes: fixed, or the heap suite's mixed distribution (uniform
// 16 B .. 4 KiB from a hash of the worker, heap/bench/suite/bench_common.hpp
// request_size; the same function for every allocator).
// ---------------------------------------------------------------------------
__host__ __device__ inline std::uint32_t hash2(std::uint32_t a, std::uint32_t b) {
  // heap/support/manyalloc_support/workers.hpp checksum(a, b, 0x5bd1e995)
  std::uint32_t x = a * 0x9e3779b1u ^ (b + 1u) * 0x85ebca77u ^ 0x5bd1e995u * 0xc2b2ae3du;
  x ^= x >> 15;
  x *= 0x2c1b3c6du;
  return x ^ (x >> 13);
}

struct SizeSpec {
  std::uint32_t fixed = 0;  // 0: uniform in [lo, hi] from hash2(index, salt)
  std::uint32_t lo = 16, hi = 4096;
  std::uint32_t salt = 0;
  __host__ __device__ std::uint32_t operator()(std::uint64_t i) const {
    return fixed != 0 ? fixed : lo + hash2(static_cast<std::uint32_t>(i), salt) % (hi - lo + 1u);
  }
  std::uint32_t largest() const { return fixed != 0 ? fixed : hi; }
  std::string label() const { return fixed != 0 ? std::to_string(fixed) : "mixed"; }
};

// ---------------------------------------------------------------------------
// Verification (verify.cu), untimed: a pattern into the first and the last
// 4-byte word of every chunk, read back after all are written; the chunks
// sorted by address on the GPU and neighbours checked for overlap.
// ---------------------------------------------------------------------------
struct CheckResult {
  std::uint64_t nulls = 0;       // failed requests
  std::uint64_t bad = 0;         // pattern not read back, or a pointer not 4-byte aligned
  std::uint64_t overlaps = 0;    // chunks that overlap the next one by address
  std::uint64_t bytes = 0;       // bytes handed out (requested sizes of the non-null chunks)
  bool ok() const { return bad == 0 && overlaps == 0; }
  void add(const CheckResult& o) {
    nulls += o.nulls;
    bad += o.bad;
    overlaps += o.overlaps;
    bytes += o.bytes;
  }
};
CheckResult check_chunks(void* const* d_ptrs, std::uint64_t n, SizeSpec sizes, std::uint32_t salt);
// Failed requests among n pointers (cheap: no pattern, no sort).
std::uint64_t count_nulls(void* const* d_ptrs, std::uint64_t n);

// ---------------------------------------------------------------------------
// Small host helpers
// ---------------------------------------------------------------------------
template <class T>
class DeviceArray {
 public:
  explicit DeviceArray(std::size_t n) : n_(n) {
    check(cudaMalloc(&p_, std::max<std::size_t>(n, 1) * sizeof(T)), "cudaMalloc (benchmark array)");
    check(cudaMemset(p_, 0, std::max<std::size_t>(n, 1) * sizeof(T)), "cudaMemset (benchmark array)");
  }
  ~DeviceArray() { cudaFree(p_); }
  DeviceArray(const DeviceArray&) = delete;
  DeviceArray& operator=(const DeviceArray&) = delete;
  T* get() const { return p_; }
  std::size_t size() const { return n_; }

 private:
  T* p_ = nullptr;
  std::size_t n_;
};

inline double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const std::size_t h = v.size() / 2;
  return v.size() % 2 ? v[h] : (v[h - 1] + v[h]) / 2;
}

}  // namespace manyalloc::heap::peers
