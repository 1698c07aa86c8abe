// manyalloc_coalescing_rewrite_bench: the unit and all-to-all workloads of
// [Blach2022] section 4, once as plain-malloc kernels rewritten by
// manyalloc-coalesce (allocator "rewritten:<policy>", calls through the
// runtime's uniform entry point) and once hand-written against a heap handle
// ("Scatter+<policy>", the way manyalloc_coalescing_bench calls the policy).
// Both use the same creation policy configuration (Scatter on
// MANYALLOC_COALESCE_PAGE_BYTES pages) and the same device code apart from
// the allocation calls (workloads.hpp), run interleaved (ABBA) and are
// verified. The question it answers: does the rewrite cost anything over
// calling the policy by hand ([Blach2022] 3.1: the rewrite is meant to be
// free)?
//
//   rewrite_unit_linear / rewrite_unit_quadratic  every thread allocates n
//        floats, initialises them (kernel 1), runs the Linear or Quadratic
//        workload, verifies and frees (kernel 2). seconds = both kernels.
//   rewrite_alltoall  ranks in groups of 32, each allocates one 4-double
//        buffer per peer, peers copy and verify, everything is freed.
//        seconds = the three kernels.
//
// Usage: manyalloc_coalescing_rewrite_bench [--out FILE] [--threads N]
//        [--alltoall-threads N] [--floats LIST] [--runs R] [--only unit,alltoall]
//        [--heap-mb MB] [--quick]
// R: runs after a warm-up (7 by default); unit workloads of n < 400 floats
// run R * 400 / n times.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "manyalloc/heap/coalesce/runtime.hpp"
#include "manyalloc/heap/heap.hpp"
#include "cli.hpp"  // parse_list
#include "plain_malloc_kernels.hpp"
#include "records.hpp"
#include "workloads.hpp"

namespace mh = manyalloc::heap;
namespace rw = manyalloc::heap::bench::rewrite;
using mh::acc::cuda_check;

namespace {

// The hand-written variant: the runtime's uniform policy on the same Scatter
// configuration, called through a handle passed to the kernel.
using HandWrittenHeap = mh::Allocator<mh::CreationPolicies::Scatter<mh::coalesce::ScatterPages>,
                                      mh::coalesce::UniformPolicy, mh::OOMPolicies::ReturnNull,
                                      mh::ReservePoolPolicies::CudaMalloc, mh::AlignmentPolicies::NoOp>;
using Handle = HandWrittenHeap::Handle;

__global__ void hand_unit_alloc_init(Handle heap, std::uint32_t n, float** ptrs, rw::Counters* counters) {
  const std::uint32_t w = blockIdx.x * blockDim.x + threadIdx.x;
  float* p = static_cast<float*>(heap.alloc(mh::acc::CudaThread{}, n * sizeof(float)));
  ptrs[w] = p;
  if (p == nullptr) {
    atomicAdd(&counters->fails, 1ull);
  } else {
    rw::unit_init(p, n);
  }
}

__global__ void hand_unit_verify_free(Handle heap, std::uint32_t n, bool quadratic, float** ptrs,
                                      rw::Counters* counters) {
  const std::uint32_t w = blockIdx.x * blockDim.x + threadIdx.x;
  float* p = ptrs[w];
  if (p != nullptr) {
    rw::unit_workload(p, n, quadratic);
    if (!rw::unit_verified(p, n, quadratic)) atomicAdd(&counters->bad, 1ull);
  }
  heap.dealloc(mh::acc::CudaThread{}, p);
}

__global__ void hand_alltoall_send(Handle heap, double** send, rw::Counters* counters) {
  const std::uint32_t w = blockIdx.x * blockDim.x + threadIdx.x;
  const std::uint32_t base = w / rw::alltoall_group * rw::alltoall_group;
  for (std::uint32_t j = 0; j < rw::alltoall_group; ++j) {
    auto* b = static_cast<double*>(heap.alloc(mh::acc::CudaThread{}, rw::alltoall_elems * sizeof(double)));
    send[w * rw::alltoall_group + j] = b;
    if (b == nullptr) {
      atomicAdd(&counters->fails, 1ull);
      continue;
    }
    for (std::uint32_t e = 0; e < rw::alltoall_elems; ++e) b[e] = rw::alltoall_message(w, base + j, e);
  }
}

__global__ void hand_alltoall_exchange(Handle heap, double** send, double** recv, rw::Counters* counters) {
  const std::uint32_t w = blockIdx.x * blockDim.x + threadIdx.x;
  const std::uint32_t base = w / rw::alltoall_group * rw::alltoall_group;
  const std::uint32_t me = w - base;
  for (std::uint32_t j = 0; j < rw::alltoall_group; ++j) {
    auto* r = static_cast<double*>(heap.alloc(mh::acc::CudaThread{}, rw::alltoall_elems * sizeof(double)));
    recv[w * rw::alltoall_group + j] = r;
    const double* s = send[(base + j) * rw::alltoall_group + me];
    if (r == nullptr || s == nullptr) {
      atomicAdd(&counters->fails, 1ull);
      continue;
    }
    bool ok = true;
    for (std::uint32_t e = 0; e < rw::alltoall_elems; ++e) {
      r[e] = s[e];
      ok = ok && r[e] == rw::alltoall_message(base + j, w, e);
    }
    if (!ok) atomicAdd(&counters->bad, 1ull);
  }
}

__global__ void hand_alltoall_free(Handle heap, double** send, double** recv) {
  const std::uint32_t w = blockIdx.x * blockDim.x + threadIdx.x;
  for (std::uint32_t j = 0; j < rw::alltoall_group; ++j) {
    heap.dealloc(mh::acc::CudaThread{}, send[w * rw::alltoall_group + j]);
    heap.dealloc(mh::acc::CudaThread{}, recv[w * rw::alltoall_group + j]);
  }
}

struct Options {
  std::string out;
  std::uint32_t threads = 0;            // unit benchmark; 0: SMs x 2048
  std::uint32_t alltoall_threads = 16384;
  std::vector<std::uint64_t> floats{25, 100, 200, 400};
  int runs = 7;
  std::string only;
  std::size_t heap_mb = 2048;
  bool wants(const char* section) const {
    return only.empty() || ("," + only + ",").find(std::string(",") + section + ",") != std::string::npos;
  }
};

[[noreturn]] void usage(const char* argv0) {
  std::fprintf(stderr,
               "usage: %s [--out FILE] [--threads N] [--alltoall-threads N] [--floats LIST] [--runs R]\n"
               "       [--only unit,alltoall] [--heap-mb MB] [--quick]\n",
               argv0);
  std::exit(2);
}

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&]() -> const char* {
      if (i + 1 >= argc) usage(argv[0]);
      return argv[++i];
    };
    if (a == "--out") o.out = next();
    else if (a == "--threads") o.threads = static_cast<std::uint32_t>(std::strtoul(next(), nullptr, 10));
    else if (a == "--alltoall-threads") o.alltoall_threads = static_cast<std::uint32_t>(std::strtoul(next(), nullptr, 10));
    else if (a == "--floats") o.floats = mh::bench::parse_list(next());
    else if (a == "--runs") o.runs = std::atoi(next());
    else if (a == "--only") o.only = next();
    else if (a == "--heap-mb") o.heap_mb = std::strtoull(next(), nullptr, 10);
    else if (a == "--quick") {
      o.runs = 3;
      o.threads = 1u << 16;
      o.floats = {100, 400};
    } else usage(argv[0]);
  }
  if (o.runs < 1) usage(argv[0]);
  return o;
}

// Seconds of the launches `launch` makes (events around them); throws on a
// launch or kernel error.
double timed(const std::function<int()>& launch, const char* what) {
  cudaEvent_t start, stop;
  cuda_check(cudaEventCreate(&start), "cudaEventCreate");
  cuda_check(cudaEventCreate(&stop), "cudaEventCreate");
  cuda_check(cudaEventRecord(start), "cudaEventRecord");
  cuda_check(static_cast<cudaError_t>(launch()), what);
  cuda_check(cudaEventRecord(stop), "cudaEventRecord");
  cuda_check(cudaEventSynchronize(stop), what);
  cuda_check(cudaGetLastError(), what);
  float ms = 0;
  cuda_check(cudaEventElapsedTime(&ms, start, stop), "cudaEventElapsedTime");
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  return ms * 1e-3;
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

template <class T>
struct DeviceArray {
  explicit DeviceArray(std::size_t n) { cuda_check(cudaMalloc(&data, n * sizeof(T)), "cudaMalloc (bench buffers)"); }
  ~DeviceArray() { cudaFree(data); }
  DeviceArray(const DeviceArray&) = delete;
  DeviceArray& operator=(const DeviceArray&) = delete;
  T* data = nullptr;
};

struct Tally {
  std::vector<double> total, part_a, part_b, part_c;
  unsigned long long fails = 0, bad = 0;
};

// The launches of one variant: unit (alloc_init, verify_free) and
// all-to-all (send, exchange, free).
struct Variant {
  std::string name;
  std::function<int(std::uint32_t, std::uint32_t, float**, rw::Counters*)> unit_alloc_init;
  std::function<int(std::uint32_t, std::uint32_t, bool, float**, rw::Counters*)> unit_verify_free;
  std::function<int(std::uint32_t, double**, rw::Counters*)> send;
  std::function<int(std::uint32_t, double**, double**, rw::Counters*)> exchange;
  std::function<int(std::uint32_t, double**, double**)> release;
};

std::string g_device;
std::FILE* g_out = stdout;

void write(const Options& o, const std::string& experiment, const Variant& v, std::uint32_t threads,
           std::uint64_t bytes, std::uint64_t ops, const Tally& t, const char* a, const char* b, const char* c) {
  mh::bench::Measurement m;
  m.suite = "coalescing";
  m.experiment = experiment;
  m.allocator = v.name;
  m.device = g_device;
  m.threads = threads;
  m.bytes = bytes;
  m.ops = ops;
  m.seconds = median(t.total);
  m.fails = t.fails;
  m.verified = t.fails == 0 && t.bad == 0;
  m.extra[a] = median(t.part_a);
  m.extra[b] = median(t.part_b);
  if (c != nullptr) m.extra[c] = median(t.part_c);
  m.extra["seconds_min"] = t.total.empty() ? 0 : *std::min_element(t.total.begin(), t.total.end());
  m.extra["seconds_max"] = t.total.empty() ? 0 : *std::max_element(t.total.begin(), t.total.end());
  m.extra["repeats"] = static_cast<double>(t.total.size());
  m.extra["corrupt"] = static_cast<double>(t.bad);
  mh::bench::write_jsonl(g_out, m);
  std::fflush(g_out);
  (void)o;
}

void compare_line(const std::string& what, const std::vector<Tally>& tallies, const std::vector<Variant>& variants) {
  const double hand = median(tallies[1].total);
  const double rewritten = median(tallies[0].total);
  std::fprintf(stderr, "%-28s %-22s %10.6f s   %-22s %10.6f s   rewritten/hand %.3f\n", what.c_str(),
               variants[0].name.c_str(), rewritten, variants[1].name.c_str(), hand, hand > 0 ? rewritten / hand : 0.0);
}

void unit(const Options& o, const std::vector<Variant>& variants, std::uint32_t threads) {
  DeviceArray<float*> ptrs(threads);
  DeviceArray<rw::Counters> counters(1);
  for (std::uint64_t n64 : o.floats) {
    const auto n = static_cast<std::uint32_t>(n64);
    for (bool quadratic : {false, true}) {
      std::vector<Tally> tallies(variants.size());
      // Short launches get more runs: the spread of single runs of the
      // smallest workloads is larger than the difference this benchmark
      // looks for (docs/results/heap/coalescing_rewrite/README.md).
      const int runs = n >= 400u ? o.runs : static_cast<int>(std::uint64_t{400} * o.runs / n);
      for (int r = 0; r < runs + 1; ++r) {  // run 0 warms up
        for (std::size_t k = 0; k < variants.size(); ++k) {
          const std::size_t i = (r % 2 == 0) ? k : variants.size() - 1 - k;  // ABBA
          const Variant& v = variants[i];
          cuda_check(cudaMemset(counters.data, 0, sizeof(rw::Counters)), "cudaMemset");
          const double a = timed([&] { return v.unit_alloc_init(threads, n, ptrs.data, counters.data); }, "alloc_init");
          const double b =
              timed([&] { return v.unit_verify_free(threads, n, quadratic, ptrs.data, counters.data); }, "verify_free");
          rw::Counters c{};
          cuda_check(cudaMemcpy(&c, counters.data, sizeof c, cudaMemcpyDeviceToHost), "counters");
          if (r == 0) continue;
          Tally& t = tallies[i];
          t.total.push_back(a + b);
          t.part_a.push_back(a);
          t.part_b.push_back(b);
          t.fails += c.fails;
          t.bad += c.bad;
        }
      }
      const std::string experiment = quadratic ? "rewrite_unit_quadratic" : "rewrite_unit_linear";
      const double flops = quadratic ? 2.0 * n * n : 1.0 * n;
      for (std::size_t i = 0; i < variants.size(); ++i) {
        write(o, experiment, variants[i], threads, n * sizeof(float), static_cast<std::uint64_t>(flops * threads),
              tallies[i], "alloc_init_s", "verify_free_s", nullptr);
      }
      compare_line(experiment + " n=" + std::to_string(n), tallies, variants);
    }
  }
}

void alltoall(const Options& o, const std::vector<Variant>& variants, std::uint32_t threads) {
  const std::size_t slots = std::size_t{threads} * rw::alltoall_group;
  DeviceArray<double*> send(slots), recv(slots);
  DeviceArray<rw::Counters> counters(1);
  std::vector<Tally> tallies(variants.size());
  for (int r = 0; r < o.runs + 1; ++r) {
    for (std::size_t k = 0; k < variants.size(); ++k) {
      const std::size_t i = (r % 2 == 0) ? k : variants.size() - 1 - k;
      const Variant& v = variants[i];
      cuda_check(cudaMemset(counters.data, 0, sizeof(rw::Counters)), "cudaMemset");
      const double a = timed([&] { return v.send(threads, send.data, counters.data); }, "send");
      const double b = timed([&] { return v.exchange(threads, send.data, recv.data, counters.data); }, "exchange");
      const double c = timed([&] { return v.release(threads, send.data, recv.data); }, "free");
      rw::Counters cnt{};
      cuda_check(cudaMemcpy(&cnt, counters.data, sizeof cnt, cudaMemcpyDeviceToHost), "counters");
      if (r == 0) continue;
      Tally& t = tallies[i];
      t.total.push_back(a + b + c);
      t.part_a.push_back(a);
      t.part_b.push_back(b);
      t.part_c.push_back(c);
      t.fails += cnt.fails;
      t.bad += cnt.bad;
    }
  }
  for (std::size_t i = 0; i < variants.size(); ++i) {
    write(o, "rewrite_alltoall", variants[i], threads, rw::alltoall_elems * sizeof(double),
          std::uint64_t{threads} * rw::alltoall_group, tallies[i], "send_s", "exchange_s", "free_s");
  }
  compare_line("rewrite_alltoall", tallies, variants);
}

std::uint32_t whole_blocks(std::uint32_t threads) {
  return std::max<std::uint32_t>(rw::block_threads, threads / rw::block_threads * rw::block_threads);
}

}  // namespace

int main(int argc, char** argv) {
  const Options o = parse(argc, argv);
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::fprintf(stderr, "manyalloc_coalescing_rewrite_bench: no CUDA device\n");
    return 1;
  }
  cudaDeviceProp prop{};
  cuda_check(cudaGetDeviceProperties(&prop, 0), "cudaGetDeviceProperties");
  g_device = prop.name;
  if (!o.out.empty()) {
    g_out = std::fopen(o.out.c_str(), "w");
    if (g_out == nullptr) {
      std::perror(o.out.c_str());
      return 1;
    }
  }
  const std::uint32_t unit_threads =
      whole_blocks(o.threads != 0 ? o.threads : static_cast<std::uint32_t>(prop.multiProcessorCount) * 2048u);
  const std::uint32_t a2a_threads = whole_blocks(o.alltoall_threads);
  const std::size_t heap_bytes = o.heap_mb << 20;

  // The heaps the rewritten kernels use: what the tool adds to a rewritten
  // program's main (here the kernels live in another file, so this file
  // holds the Session).
  const mh::coalesce::Session session(heap_bytes);
  HandWrittenHeap hand(heap_bytes);
  const Handle handle = hand.handle();
  const std::string policy = mh::coalesce::UniformPolicy::classname();

  std::vector<Variant> variants(2);
  variants[0] = {"rewritten:" + policy, rw::plain_unit_alloc_init, rw::plain_unit_verify_free, rw::plain_alltoall_send,
                 rw::plain_alltoall_exchange, rw::plain_alltoall_free};
  auto blocks = [](std::uint32_t threads) { return threads / rw::block_threads; };
  variants[1] = {
      "Scatter+" + policy,
      [&](std::uint32_t t, std::uint32_t n, float** p, rw::Counters* c) {
        hand_unit_alloc_init<<<blocks(t), rw::block_threads>>>(handle, n, p, c);
        return static_cast<int>(cudaGetLastError());
      },
      [&](std::uint32_t t, std::uint32_t n, bool q, float** p, rw::Counters* c) {
        hand_unit_verify_free<<<blocks(t), rw::block_threads>>>(handle, n, q, p, c);
        return static_cast<int>(cudaGetLastError());
      },
      [&](std::uint32_t t, double** s, rw::Counters* c) {
        hand_alltoall_send<<<blocks(t), rw::block_threads>>>(handle, s, c);
        return static_cast<int>(cudaGetLastError());
      },
      [&](std::uint32_t t, double** s, double** r, rw::Counters* c) {
        hand_alltoall_exchange<<<blocks(t), rw::block_threads>>>(handle, s, r, c);
        return static_cast<int>(cudaGetLastError());
      },
      [&](std::uint32_t t, double** s, double** r) {
        hand_alltoall_free<<<blocks(t), rw::block_threads>>>(handle, s, r);
        return static_cast<int>(cudaGetLastError());
      }};

  std::fprintf(stderr,
               "manyalloc_coalescing_rewrite_bench on %s: unit at %u threads, all-to-all at %u, %d runs "
               "(more below 400 floats)\n",
               g_device.c_str(), unit_threads, a2a_threads, o.runs);
  if (o.wants("unit")) unit(o, variants, unit_threads);
  if (o.wants("alltoall")) alltoall(o, variants, a2a_threads);
  if (g_out != stdout) std::fclose(g_out);
  return 0;
}
