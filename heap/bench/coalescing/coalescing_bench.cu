// manyalloc_coalescing_bench: the experiments of [Blach2022] on the GPU.
//
//   unit       [Blach2022] 4.1: every thread allocates n floats (n = 25..400 step 25),
//              initialises them (0..n-1), runs the Linear or the Quadratic
//              workload, frees. Three kernels (alloc+init, workload, free);
//              the workload kernel is timed with events -> GFLOP/s; malloc and
//              free are timed per thread with clock64 (mean over threads).
//   alltoall   [Blach2022] 4.2 in spirit: threads are ranks in groups of 32; each
//              allocates one 4-double buffer per peer, fills it, the peers copy
//              their piece into buffers they allocate, verify, everything is
//              freed. Seconds = the three kernels.
//   small16    16-byte alloc and free throughput from full warps (Scatter +
//              NoOp / XMallocSIMD / DynamicWarp).
//   blowup     every lane allocates 100 bytes, all but lane 0 of each warp
//              free: pages still held by Scatter per live byte.
// Every run is verified (the data reads back; no other thread overwrote it,
// i.e. no overlap); "verified" is false otherwise.
//
// DeviceMalloc (CUDA's malloc) is slow for these sizes, so everything that
// involves it runs at a bounded thread count (--small-threads, default 32768)
// with fewer n values; Scatter-backed runs use the full GPU (--threads,
// default SMs x 2048; --small-threads 0 means that too). Each allocator
// stops its n sweep when one run takes longer than --max-run-s.
//
// Usage: manyalloc_coalescing_bench [--out FILE] [--threads N] [--small-threads N]
//        [--runs R] [--max-run-s S] [--quick] [--only SECTIONS] [--floats N] [--fused]
//   SECTIONS: comma-separated from full (unit benchmark, Scatter, whole GPU),
//   bounded (unit benchmark with DeviceMalloc), alltoall, small16 (with blowup).
//   --fused: the unit benchmark as [Blach2022] Listing 3, one kernel per run
//   (experiments unit_linear_fused / unit_quadratic_fused).
//   --ideal-pads: bounded also runs IdealSlices with these slice paddings.
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "manyalloc/heap/heap.hpp"
#include "manyalloc_support/cuda_runner.hpp"
#include "cli.hpp"  // parse_list
#include "records.hpp"

namespace ma = manyalloc;
namespace DP = manyalloc::heap::DistributionPolicies;
using ma::heap::acc::cuda_check;
using ma::heap::testing::CudaRunner;

namespace {

// One heap serves the whole sweep of sizes: emptied pages must give up their
// split, or pages split for earlier sizes are lost to later ones.
struct BigPages : ma::heap::CreationPolicies::ScatterHeapConfig {
  static constexpr std::uint32_t pagesize = 65536;
  static constexpr bool resetfreedpages = true;
};
template <class Policy>
using ScatterBig = ma::heap::Allocator<ma::heap::CreationPolicies::Scatter<BigPages>, Policy, ma::heap::OOMPolicies::ReturnNull,
                                 ma::heap::ReservePoolPolicies::CudaMalloc, ma::heap::AlignmentPolicies::NoOp>;
struct ResetPages : ma::heap::CreationPolicies::ScatterHeapConfig {
  static constexpr bool resetfreedpages = true;
};
template <class Policy>
using Scatter4K = ma::heap::Allocator<ma::heap::CreationPolicies::Scatter<ResetPages>, Policy, ma::heap::OOMPolicies::ReturnNull,
                                ma::heap::ReservePoolPolicies::CudaMalloc, ma::heap::AlignmentPolicies::NoOp>;
template <class Policy>
using Device = ma::heap::Allocator<ma::heap::CreationPolicies::DeviceMalloc, Policy, ma::heap::OOMPolicies::ReturnNull,
                             ma::heap::ReservePoolPolicies::CudaSetLimits, ma::heap::AlignmentPolicies::NoOp>;

struct Options {
  std::string out;
  std::uint32_t threads = 0;
  std::uint32_t small_threads = 1u << 15;
  int runs = 5;
  double max_run_s = 3.0;
  bool quick = false;
  std::string only;           // comma-separated sections; empty: all
  std::uint32_t floats = 0;   // one n instead of the sweep
  bool fused = false;         // unit benchmark as one kernel per run (FusedRun)
  std::vector<std::size_t> ideal_pads;  // extra IdealSlices runs with these paddings
  bool wants(const char* section) const {
    return only.empty() || ("," + only + ",").find(std::string(",") + section + ",") != std::string::npos;
  }
};

std::string g_device;
double g_clock_hz = 1.0;
std::FILE* g_out = stdout;

struct Sums {
  unsigned long long malloc_cycles, free_cycles, work_cycles, fails, bad;
};

// ---- unit benchmark kernels ---------------------------------------------------
// Not an allocator: thread w gets slice w of one preallocated array (the
// parts of a warp side by side, no header, 16-byte aligned slices). It gives
// the workload's throughput on the layout coalescing aims at, i.e. the best
// ratio any allocator can reach against DeviceMalloc in the same run.
// `pad` bytes between slices (a multiple of 4) show how much the stride
// between the lanes' parts matters (--ideal-pads).
struct IdealSlices {
  std::byte* base;
  std::size_t max_stride;  // bytes per thread the array was sized for
  std::size_t pad = 0;
  template <class Acc>
  __device__ void* alloc(const Acc&, std::size_t bytes) const {
    const std::size_t w = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x;
    const std::size_t stride = (bytes + 15u) / 16u * 16u + pad;
    return stride <= max_stride ? base + w * stride : nullptr;
  }
  template <class Acc>
  __device__ void dealloc(const Acc&, void*) const {}
};

// The three timed parts of one run of the unit benchmark, shared by the
// separate kernels and the one-kernel run (FusedRun).

// Allocates n floats (malloc timed) and initialises them to 0..n-1.
template <class Handle, class Acc>
__device__ float* alloc_init(const Handle& heap, const Acc& acc, std::uint32_t n, Sums* sums) {
  const long long t0 = clock64();
  auto* p = static_cast<float*>(heap.alloc(acc, n * sizeof(float)));
  const long long t1 = clock64();
  atomicAdd(&sums->malloc_cycles, static_cast<unsigned long long>(t1 - t0));
  if (p == nullptr) {
    atomicAdd(&sums->fails, 1ull);
    return nullptr;
  }
  for (std::uint32_t i = 0; i < n; ++i) p[i] = static_cast<float>(i);
  return p;
}

// The Linear or Quadratic workload of [Blach2022] Listing 2 on d (timed with clock64,
// as in its Listing 3); the sum goes to d[0].
template <bool Quadratic>
__device__ void workload(float* d, std::uint32_t n, Sums* sums) {
  const long long t0 = clock64();
  float sum = 0;
  if constexpr (Quadratic) {
    for (std::uint32_t i = 0; i < n; ++i) {
      const float a = d[i];
      for (std::uint32_t j = 0; j < n; ++j) sum = __fmaf_rn(a, d[j], sum);
    }
  } else {
    for (std::uint32_t i = 0; i < n; ++i) sum += d[i];
  }
  d[0] = sum;
  const long long t1 = clock64();
  atomicAdd(&sums->work_cycles, static_cast<unsigned long long>(t1 - t0));
}

// Whether d holds the workload's result and, after it, the initial values
// (no other thread wrote into this part).
template <bool Quadratic>
__device__ bool verified(const float* d, std::uint32_t n) {
  float expect = 0;
  if constexpr (Quadratic) {
    for (std::uint32_t i = 0; i < n; ++i) {
      const float a = static_cast<float>(i);
      for (std::uint32_t j = 0; j < n; ++j) expect = __fmaf_rn(a, static_cast<float>(j), expect);
    }
  } else {
    for (std::uint32_t i = 0; i < n; ++i) expect += static_cast<float>(i);
  }
  bool ok = d[0] == expect;
  for (std::uint32_t i = 1; i < n && ok; ++i) ok = d[i] == static_cast<float>(i);
  return ok;
}

template <class Handle, class Acc>
__device__ void timed_free(const Handle& heap, const Acc& acc, float* d, Sums* sums) {
  const long long t0 = clock64();
  heap.dealloc(acc, d);
  const long long t1 = clock64();
  atomicAdd(&sums->free_cycles, static_cast<unsigned long long>(t1 - t0));
}

template <class Handle>
struct AllocInit {
  Handle heap;
  std::uint32_t n;
  float** ptrs;
  Sums* sums;
  template <class Acc>
  __device__ void operator()(const Acc& acc, std::uint32_t w) const {
    ptrs[w] = alloc_init(heap, acc, n, sums);
  }
};

// Timed twice: the kernel with events, and each thread's loop with clock64.
template <bool Quadratic>
struct Workload {
  std::uint32_t n;
  float** ptrs;
  Sums* sums;
  template <class Acc>
  __device__ void operator()(const Acc&, std::uint32_t w) const {
    if (float* d = ptrs[w]) workload<Quadratic>(d, n, sums);
  }
};

// Checks the result and that no other thread wrote into this part, then frees.
template <class Handle, bool Quadratic>
struct VerifyFree {
  Handle heap;
  std::uint32_t n;
  float** ptrs;
  Sums* sums;
  template <class Acc>
  __device__ void operator()(const Acc& acc, std::uint32_t w) const {
    float* d = ptrs[w];
    if (d != nullptr && !verified<Quadratic>(d, n)) atomicAdd(&sums->bad, 1ull);
    timed_free(heap, acc, d, sums);
  }
};

// [Blach2022] Listing 3 literally: one kernel per run in which every thread
// allocates, initialises, runs the workload and frees (--fused). The
// workload then reads data its own thread has just written, and warps of a
// slow allocator reach it at different times.
template <class Handle, bool Quadratic>
struct FusedRun {
  Handle heap;
  std::uint32_t n;
  Sums* sums;
  template <class Acc>
  __device__ void operator()(const Acc& acc, std::uint32_t) const {
    float* d = alloc_init(heap, acc, n, sums);
    if (d != nullptr) {
      workload<Quadratic>(d, n, sums);
      if (!verified<Quadratic>(d, n)) atomicAdd(&sums->bad, 1ull);
    }
    timed_free(heap, acc, d, sums);
  }
};

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

template <class Handle>
bool unit_sweep(const std::string& name, const Handle& handle, std::uint32_t threads,
                const std::vector<std::uint32_t>& ns, const Options& o) {
  CudaRunner::Buffer<float*> ptrs(o.fused ? 1 : threads);  // the fused kernel keeps its pointer
  CudaRunner::Buffer<Sums> sums(1);
  for (std::uint32_t n : ns) {
    for (int quad = 0; quad < 2; ++quad) {
      std::vector<double> work_s, work_thread_s, malloc_s, free_s;
      unsigned long long fails = 0, bad = 0;
      for (int r = 0; r < o.runs + 1; ++r) {  // the first run warms up
        sums.zero();
        double ws = 0;
        if (o.fused) {
          // Seconds = the whole kernel; the rate that counts is the per-thread one.
          ws = quad ? CudaRunner::timed_run(threads, FusedRun<Handle, true>{handle, n, sums.data()})
                    : CudaRunner::timed_run(threads, FusedRun<Handle, false>{handle, n, sums.data()});
        } else {
          CudaRunner::run(threads, AllocInit<Handle>{handle, n, ptrs.data(), sums.data()});
          ws = quad ? CudaRunner::timed_run(threads, Workload<true>{n, ptrs.data(), sums.data()})
                    : CudaRunner::timed_run(threads, Workload<false>{n, ptrs.data(), sums.data()});
          if (quad) {
            CudaRunner::run(threads, VerifyFree<Handle, true>{handle, n, ptrs.data(), sums.data()});
          } else {
            CudaRunner::run(threads, VerifyFree<Handle, false>{handle, n, ptrs.data(), sums.data()});
          }
        }
        const Sums s = sums.to_host()[0];
        if (r == 0) continue;
        fails += s.fails;
        bad += s.bad;
        work_s.push_back(ws);
        work_thread_s.push_back(static_cast<double>(s.work_cycles) / threads / g_clock_hz);
        malloc_s.push_back(static_cast<double>(s.malloc_cycles) / threads / g_clock_hz);
        free_s.push_back(static_cast<double>(s.free_cycles) / threads / g_clock_hz);
        // The fused kernel's time includes its malloc and free already.
        if (ws + (o.fused ? 0.0 : malloc_s.back() + free_s.back()) > o.max_run_s) break;
      }
      const double flops_per_thread = quad ? 2.0 * n * n : 1.0 * n;
      ma::heap::bench::Measurement m;
      m.suite = "coalescing";
      m.experiment = std::string(quad ? "unit_quadratic" : "unit_linear") + (o.fused ? "_fused" : "");
      m.allocator = name;
      m.device = g_device;
      m.threads = threads;
      m.bytes = n * sizeof(float);
      m.ops = static_cast<std::uint64_t>(flops_per_thread * threads);
      m.seconds = median(work_s);
      m.fails = fails;
      m.verified = bad == 0 && fails == 0;
      m.extra["floats"] = n;
      // Kernel GFLOP/s only for the split kernels: the fused kernel's time
      // (`seconds`) includes malloc and free, so its rate would not be the
      // workload's.
      if (!o.fused) m.extra["gflops"] = m.seconds > 0 ? flops_per_thread * threads / m.seconds / 1e9 : 0;
      // [Blach2022]'s figure: every thread's flops over the mean per-thread
      // workload time (no launch overhead, no tail of the grid).
      m.extra["gflops_thread_clock"] =
          median(work_thread_s) > 0 ? flops_per_thread * threads / median(work_thread_s) / 1e9 : 0;
      m.extra["work_s_per_thread"] = median(work_thread_s);
      m.extra["malloc_s_per_thread"] = median(malloc_s);
      m.extra["free_s_per_thread"] = median(free_s);
      m.extra["repeats"] = static_cast<double>(work_s.size());
      m.extra["corrupt"] = static_cast<double>(bad);
      ma::heap::bench::write_jsonl(g_out, m);
      if (median(malloc_s) + median(free_s) + m.seconds > o.max_run_s) {
        std::fprintf(stderr, "%s: run at n=%u took too long; sweep stopped\n", name.c_str(), n);
        return false;
      }
    }
  }
  return true;
}

// ---- all-to-all ---------------------------------------------------------------
constexpr std::uint32_t group = 32;
constexpr std::uint32_t elems = 4;  // doubles per message

__device__ double message(std::uint32_t from, std::uint32_t to, std::uint32_t e) {
  return static_cast<double>(from) * 1e3 + to + e * 0.25;
}

template <class Handle>
struct SendPhase {
  Handle heap;
  double** send;
  Sums* sums;
  template <class Acc>
  __device__ void operator()(const Acc& acc, std::uint32_t w) const {
    const std::uint32_t base = w / group * group;
    for (std::uint32_t j = 0; j < group; ++j) {
      auto* b = static_cast<double*>(heap.alloc(acc, elems * sizeof(double)));
      send[w * group + j] = b;
      if (b == nullptr) {
        atomicAdd(&sums->fails, 1ull);
        continue;
      }
      for (std::uint32_t e = 0; e < elems; ++e) b[e] = message(w, base + j, e);
    }
  }
};

template <class Handle>
struct ExchangePhase {
  Handle heap;
  double** send;
  double** recv;
  Sums* sums;
  template <class Acc>
  __device__ void operator()(const Acc& acc, std::uint32_t w) const {
    const std::uint32_t base = w / group * group;
    const std::uint32_t me = w - base;
    for (std::uint32_t j = 0; j < group; ++j) {
      auto* r = static_cast<double*>(heap.alloc(acc, elems * sizeof(double)));
      recv[w * group + j] = r;
      const double* s = send[(base + j) * group + me];
      if (r == nullptr || s == nullptr) {
        atomicAdd(&sums->fails, 1ull);
        continue;
      }
      bool ok = true;
      for (std::uint32_t e = 0; e < elems; ++e) {
        r[e] = s[e];
        ok = ok && r[e] == message(base + j, w, e);
      }
      if (!ok) atomicAdd(&sums->bad, 1ull);
    }
  }
};

template <class Handle>
struct FreePhase {
  Handle heap;
  double** send;
  double** recv;
  template <class Acc>
  __device__ void operator()(const Acc& acc, std::uint32_t w) const {
    for (std::uint32_t j = 0; j < group; ++j) {
      heap.dealloc(acc, send[w * group + j]);
      heap.dealloc(acc, recv[w * group + j]);
    }
  }
};

template <class Handle>
void alltoall(const std::string& name, const Handle& handle, std::uint32_t threads, const Options& o) {
  CudaRunner::Buffer<double*> send(std::size_t{threads} * group), recv(std::size_t{threads} * group);
  CudaRunner::Buffer<Sums> sums(1);
  std::vector<double> total, t_send, t_ex, t_free;
  unsigned long long fails = 0, bad = 0;
  for (int r = 0; r < o.runs + 1; ++r) {
    sums.zero();
    const double a = CudaRunner::timed_run(threads, SendPhase<Handle>{handle, send.data(), sums.data()});
    const double b = CudaRunner::timed_run(threads, ExchangePhase<Handle>{handle, send.data(), recv.data(), sums.data()});
    const double c = CudaRunner::timed_run(threads, FreePhase<Handle>{handle, send.data(), recv.data()});
    const Sums s = sums.to_host()[0];
    if (r == 0) continue;
    fails += s.fails;
    bad += s.bad;
    total.push_back(a + b + c);
    t_send.push_back(a);
    t_ex.push_back(b);
    t_free.push_back(c);
    if (a + b + c > o.max_run_s) break;
  }
  ma::heap::bench::Measurement m;
  m.suite = "coalescing";
  m.experiment = "alltoall";
  m.allocator = name;
  m.device = g_device;
  m.threads = threads;
  m.bytes = elems * sizeof(double);
  m.ops = std::uint64_t{threads} * group;  // messages
  m.seconds = median(total);
  m.fails = fails;
  m.verified = bad == 0 && fails == 0;
  m.extra["send_s"] = median(t_send);
  m.extra["exchange_s"] = median(t_ex);
  m.extra["free_s"] = median(t_free);
  m.extra["group"] = group;
  m.extra["repeats"] = static_cast<double>(total.size());
  ma::heap::bench::write_jsonl(g_out, m);
}

// ---- 16-byte throughput and blowup --------------------------------------------
template <class Handle>
struct Alloc16 {
  Handle heap;
  std::uint32_t** ptrs;
  Sums* sums;
  template <class Acc>
  __device__ void operator()(const Acc& acc, std::uint32_t w) const {
    auto* p = static_cast<std::uint32_t*>(heap.alloc(acc, 16));
    ptrs[w] = p;
    if (p == nullptr) {
      atomicAdd(&sums->fails, 1ull);
      return;
    }
    p[0] = w;
    p[3] = ~w;
  }
};
template <class Handle>
struct Free16 {
  Handle heap;
  std::uint32_t** ptrs;
  Sums* sums;
  std::uint32_t keep_every;  // 0: free all; k: lanes with w % k == 0 keep theirs
  template <class Acc>
  __device__ void operator()(const Acc& acc, std::uint32_t w) const {
    std::uint32_t* p = ptrs[w];
    if (p != nullptr && (p[0] != w || p[3] != ~w)) atomicAdd(&sums->bad, 1ull);
    if (keep_every != 0 && w % keep_every == 0) return;
    heap.dealloc(acc, p);
    ptrs[w] = nullptr;
  }
};

template <class Heap>
void small16(const std::string& name, Heap& heap, std::uint32_t threads, const Options& o) {
  using Handle = typename Heap::Handle;
  CudaRunner::Buffer<std::uint32_t*> ptrs(threads);
  CudaRunner::Buffer<Sums> sums(1);
  std::vector<double> ta, tf;
  for (int r = 0; r < o.runs + 1; ++r) {
    sums.zero();
    const double a = CudaRunner::timed_run(threads, Alloc16<Handle>{heap.handle(), ptrs.data(), sums.data()});
    const double f = CudaRunner::timed_run(threads, Free16<Handle>{heap.handle(), ptrs.data(), sums.data(), 0});
    const Sums s = sums.to_host()[0];
    if (r == 0) continue;
    ta.push_back(a);
    tf.push_back(f);
    for (int k = 0; k < 2; ++k) {
      ma::heap::bench::Measurement m;
      m.suite = "coalescing";
      m.experiment = k == 0 ? "small16_alloc" : "small16_free";
      m.allocator = name;
      m.device = g_device;
      m.threads = threads;
      m.bytes = 16;
      m.ops = threads;
      m.seconds = k == 0 ? a : f;
      m.fails = s.fails;
      m.verified = s.bad == 0 && s.fails == 0;
      m.extra["repeat"] = r;
      if (r == o.runs) ma::heap::bench::write_jsonl(g_out, m);
    }
  }
  (void)ta;
  (void)tf;
}

// Memory held, measured as 16-byte slots Scatter can no longer hand out
// (getAvailableSlots), with all parts live, with one part in 32 live (lane 0
// of each warp keeps its part), and after everything is freed.
template <class Heap>
void blowup(const std::string& name, Heap& heap, std::uint32_t threads) {
  using Handle = typename Heap::Handle;
  CudaRunner::Buffer<std::uint32_t*> ptrs(threads);
  CudaRunner::Buffer<Sums> sums(1);
  const double before = static_cast<double>(heap.getAvailableSlots(16));
  CudaRunner::run(threads, Alloc16<Handle>{heap.handle(), ptrs.data(), sums.data()});
  const double full = static_cast<double>(heap.getAvailableSlots(16));
  CudaRunner::run(threads, Free16<Handle>{heap.handle(), ptrs.data(), sums.data(), 32});
  const double kept = static_cast<double>(heap.getAvailableSlots(16));
  CudaRunner::run(threads, Free16<Handle>{heap.handle(), ptrs.data(), sums.data(), 0});
  const double after = static_cast<double>(heap.getAvailableSlots(16));
  const Sums s = sums.to_host()[0];
  ma::heap::bench::Measurement m;
  m.suite = "coalescing";
  m.experiment = "blowup";
  m.allocator = name;
  m.device = g_device;
  m.threads = threads;
  m.bytes = 16;
  m.ops = threads;
  m.seconds = 0;
  m.fails = s.fails;
  m.verified = s.bad == 0 && s.fails == 0;
  const double live = 16.0 * ((threads + 31) / 32);
  m.extra["held_bytes_all_live"] = (before - full) * 16.0;
  m.extra["held_bytes_one_in_32_live"] = (before - kept) * 16.0;
  m.extra["held_bytes_after_free"] = (before - after) * 16.0;
  m.extra["held_bytes_per_live_byte"] = (before - kept) * 16.0 / live;
  ma::heap::bench::write_jsonl(g_out, m);
}

// --ideal-pads: a comma list of paddings in bytes, each a multiple of 4
// (IdealSlices pads in floats); false for anything else.
bool parse_pads(const char* list, std::vector<std::size_t>& pads) {
  try {
    for (std::uint64_t pad : ma::heap::bench::parse_list(list)) {
      if (pad % 4u != 0u) return false;
      pads.push_back(static_cast<std::size_t>(pad));
    }
  } catch (const std::exception&) {
    return false;
  }
  return true;
}

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&]() -> const char* {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "missing value for %s\n", a.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--out") o.out = next();
    else if (a == "--threads") o.threads = static_cast<std::uint32_t>(std::strtoul(next(), nullptr, 10));
    else if (a == "--small-threads") o.small_threads = static_cast<std::uint32_t>(std::strtoul(next(), nullptr, 10));
    else if (a == "--runs") o.runs = std::atoi(next());
    else if (a == "--max-run-s") o.max_run_s = std::atof(next());
    else if (a == "--quick") o.quick = true;
    else if (a == "--only") o.only = next();
    else if (a == "--floats") o.floats = static_cast<std::uint32_t>(std::strtoul(next(), nullptr, 10));
    else if (a == "--fused") o.fused = true;
    else if (a == "--ideal-pads" && parse_pads(next(), o.ideal_pads)) continue;
    else {
      std::fprintf(stderr, "usage: %s [--out FILE] [--threads N] [--small-threads N] [--runs R] [--max-run-s S] [--quick]\n"
                   "       [--only full,bounded,alltoall,small16] [--floats N] [--fused]\n"
                   "       [--ideal-pads P,P,...]   (P: bytes, multiples of 4)\n", argv[0]);
      std::exit(2);
    }
  }
  return o;
}

// Runs f on a handle of allocator type H. CUDA's malloc heap is shared by
// every DeviceMalloc configuration (its size can be set only once per
// process); a Scatter heap of `heap_bytes` is built for each call.
template <class H, class Device, class F>
void with_handle(const Device& device, std::size_t heap_bytes, F&& f) {
  if constexpr (std::is_same_v<typename H::CreationPolicy, ma::heap::CreationPolicies::DeviceMalloc>) {
    f(typename H::Handle(device.creation()));
  } else {
    H heap(heap_bytes);
    f(heap.handle());
  }
}

// Calls f(std::type_identity<H>{}, name) for CUDA's malloc alone and under
// every coalescing policy ([Blach2022]'s baseline and its variants).
template <class F>
void for_each_device_malloc_variant(F&& f) {
  f(std::type_identity<Device<DP::NoOp>>{}, "DeviceMalloc");
  f(std::type_identity<Device<DP::DynamicWarp>>{}, "DeviceMalloc+DynamicWarp");
  f(std::type_identity<Device<DP::WarpHeader>>{}, "DeviceMalloc+WarpHeader");
  f(std::type_identity<Device<DP::WarpNoHeader>>{}, "DeviceMalloc+WarpNoHeader");
  f(std::type_identity<Device<DP::BlockHeader>>{}, "DeviceMalloc+BlockHeader");
  f(std::type_identity<Device<DP::BlockNoHeader>>{}, "DeviceMalloc+BlockNoHeader");
}

}  // namespace

int main(int argc, char** argv) {
  Options o = parse(argc, argv);
  if (!CudaRunner::available()) {
    std::fprintf(stderr, "manyalloc_coalescing_bench: no CUDA device\n");
    return 1;
  }
  cudaDeviceProp prop{};
  cuda_check(cudaGetDeviceProperties(&prop, 0), "cudaGetDeviceProperties");
  int clock_khz = 0;
  cuda_check(cudaDeviceGetAttribute(&clock_khz, cudaDevAttrClockRate, 0), "clock rate");
  g_clock_hz = clock_khz * 1e3;
  g_device = prop.name;
  if (o.threads == 0) o.threads = static_cast<std::uint32_t>(prop.multiProcessorCount) * 2048u;
  if (o.small_threads == 0) o.small_threads = static_cast<std::uint32_t>(prop.multiProcessorCount) * 2048u;
  if (o.quick) {
    o.runs = 2;
    o.threads = std::min<std::uint32_t>(o.threads, 1u << 16);
    o.small_threads = std::min<std::uint32_t>(o.small_threads, 1u << 13);
  }
  if (!o.out.empty()) {
    g_out = std::fopen(o.out.c_str(), "w");
    if (g_out == nullptr) {
      std::perror(o.out.c_str());
      return 1;
    }
  }
  const auto t_start = std::chrono::steady_clock::now();
  std::vector<std::uint32_t> all_n;
  for (std::uint32_t n = 25; n <= 400; n += 25) all_n.push_back(n);
  std::vector<std::uint32_t> few_n{25, 100, 200, 300, 400};
  if (o.quick) all_n = few_n;
  if (o.floats != 0) all_n = few_n = {o.floats};

  // The no-header policies' map (this translation unit's kernels use it).
  ma::heap::distribution::SuperblockTable<ma::heap::ReservePoolPolicies::CudaMalloc> table(std::uint64_t{1} << 22);

  const std::size_t big_heap = std::size_t{3} << 30;
  // CUDA's malloc heap size can be set only before its first use: one
  // DeviceMalloc allocator for the run; every policy gets a handle on it.
  Device<DP::NoOp> device(std::size_t{2} << 30);
  if (o.wants("full")) {
    // Full GPU, Scatter (64 KiB pages) underneath every coalescing variant.
    auto full = [&](auto tag, const char* name) {
      using Policy = typename decltype(tag)::type;
      ScatterBig<Policy> heap(big_heap);
      unit_sweep(name, heap.handle(), o.threads, all_n, o);
    };
    full(std::type_identity<DP::NoOp>{}, "Scatter+NoOp");
    full(std::type_identity<DP::XMallocSIMD<65536>>{}, "Scatter+XMallocSIMD");
    full(std::type_identity<DP::DynamicWarp>{}, "Scatter+DynamicWarp");
    full(std::type_identity<DP::WarpHeader>{}, "Scatter+WarpHeader");
    full(std::type_identity<DP::WarpNoHeader>{}, "Scatter+WarpNoHeader");
    full(std::type_identity<DP::BlockHeader>{}, "Scatter+BlockHeader");
    full(std::type_identity<DP::BlockNoHeader>{}, "Scatter+BlockNoHeader");
  }
  if (o.wants("bounded")) {
    // The setting of [Blach2022]: CUDA's malloc underneath, bounded thread count;
    // Scatter+NoOp and Scatter+DynamicWarp at the same count for the ratio.
    auto bounded = [&](auto tag, const char* name) {
      with_handle<typename decltype(tag)::type>(device, big_heap,
                                                [&](const auto& h) { unit_sweep(name, h, o.small_threads, few_n, o); });
    };
    for_each_device_malloc_variant(bounded);
    bounded(std::type_identity<ScatterBig<DP::NoOp>>{}, "Scatter+NoOp");
    bounded(std::type_identity<ScatterBig<DP::DynamicWarp>>{}, "Scatter+DynamicWarp");
    bounded(std::type_identity<ScatterBig<DP::WarpHeader>>{}, "Scatter+WarpHeader");
    std::size_t max_pad = 0;
    for (std::size_t pad : o.ideal_pads) max_pad = std::max(max_pad, pad);
    const std::size_t stride =
        (std::size_t{*std::max_element(few_n.begin(), few_n.end())} * sizeof(float) + 15u) / 16u * 16u + max_pad;
    CudaRunner::Buffer<std::byte> slices(stride * o.small_threads);
    unit_sweep("IdealSlices (no allocator)", IdealSlices{slices.data(), stride}, o.small_threads, few_n, o);
    for (std::size_t pad : o.ideal_pads) {
      unit_sweep("IdealSlices+pad" + std::to_string(pad), IdealSlices{slices.data(), stride, pad}, o.small_threads,
                 few_n, o);
    }
  }
  if (o.wants("alltoall")) {
    const std::uint32_t ranks = o.small_threads / 2;
    auto a2a = [&](auto tag, const char* name) {
      with_handle<typename decltype(tag)::type>(device, big_heap,
                                                [&](const auto& h) { alltoall(name, h, ranks, o); });
    };
    for_each_device_malloc_variant(a2a);
    a2a(std::type_identity<Scatter4K<DP::NoOp>>{}, "Scatter+NoOp");
    a2a(std::type_identity<Scatter4K<DP::XMallocSIMD<4096>>>{}, "Scatter+XMallocSIMD");
    a2a(std::type_identity<Scatter4K<DP::DynamicWarp>>{}, "Scatter+DynamicWarp");
    a2a(std::type_identity<Scatter4K<DP::WarpHeader>>{}, "Scatter+WarpHeader");
  }
  if (o.wants("small16")) {
    const std::uint32_t n16 = std::max<std::uint32_t>(o.threads, 1u << 20);
    auto s16 = [&](auto tag, const char* name) {
      using Policy = typename decltype(tag)::type;
      Scatter4K<Policy> heap(std::size_t{1} << 30);
      small16(name, heap, o.quick ? o.threads : n16, o);
      blowup(name, heap, o.quick ? o.threads : n16);
    };
    s16(std::type_identity<DP::NoOp>{}, "Scatter+NoOp");
    s16(std::type_identity<DP::XMallocSIMD<4096>>{}, "Scatter+XMallocSIMD");
    s16(std::type_identity<DP::DynamicWarp>{}, "Scatter+DynamicWarp");
    s16(std::type_identity<DP::WarpHeader>{}, "Scatter+WarpHeader");
    s16(std::type_identity<DP::WarpNoHeader>{}, "Scatter+WarpNoHeader");
    s16(std::type_identity<DP::BlockHeader>{}, "Scatter+BlockHeader");
  }
  const double total_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t_start).count();
  std::fprintf(stderr, "manyalloc_coalescing_bench: done in %.1f s on %s\n", total_s, g_device.c_str());
  if (g_out != stdout) std::fclose(g_out);
  return 0;
}
