// What every experiment gets: the options, the output, the device, and the
// set of allocator configurations to run side by side.
//
// A platform P (main_cuda.cu, main_host.cpp) provides:
//   Runner, Scatter, ScatterTuned, XMalloc, Slabs,
//   Lists, MultiLists, Baseline                    types
//   gpu, baseline_bounded                          constexpr bool
//   full_occupancy(), default_threads()            concurrent workers
//   memory_cap()                                   bytes the heaps may take
//   baseline_pool(bytes)                           pool size for Baseline
//   clock_name()                                   what cycles_per_op counts
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "cli.hpp"
#include "records.hpp"

namespace manyalloc::heap::bench {

// Heap bytes for `threads` live chunks of `bytes` (plus room for the
// page-granular layout and hashing spread).
inline std::size_t heap_bytes_for(std::size_t bytes, std::uint64_t threads) {
  const std::size_t chunk = bytes < 16 ? 16 : bytes;
  return std::max<std::size_t>(std::size_t{64} << 20, chunk * threads * 3);
}

struct Context {
  Options opt;
  std::string device;
  std::string clock;
  std::FILE* out = nullptr;
  std::vector<Measurement> all;

  void emit(Measurement m) {
    m.device = device;
    if (m.extra.count("cycles_per_op") != 0) m.tags["clock"] = clock;
    write_jsonl(out, m);
    all.push_back(std::move(m));
  }
};

// A configuration built fresh for each use (Scatter: a new heap per size).
template <class Heap>
class FreshHeap {
 public:
  using heap_type = Heap;
  static constexpr bool shared = false;
  explicit FreshHeap(std::string n) : name(std::move(n)) {}
  Heap& get(std::size_t bytes) {
    heap_.reset();
    heap_ = std::make_unique<Heap>(bytes);
    bytes_ = bytes;
    return *heap_;
  }
  void release() { heap_.reset(); }
  std::size_t heap_bytes() const { return bytes_; }
  std::string name;

 private:
  std::unique_ptr<Heap> heap_;
  std::size_t bytes_ = 0;
};

// The baseline: one heap for the whole process (CUDA's heap limit can only be
// set before the first kernel that calls malloc).
template <class Heap>
class SharedHeap {
 public:
  using heap_type = Heap;
  static constexpr bool shared = true;
  SharedHeap(std::string n, Heap& heap, std::size_t bytes) : name(std::move(n)), heap_(heap), bytes_(bytes) {}
  Heap& get(std::size_t) { return heap_; }
  void release() {}
  std::size_t heap_bytes() const { return bytes_; }
  std::string name;

 private:
  Heap& heap_;
  std::size_t bytes_;
};

template <class P>
class AllocatorSet {
 public:
  AllocatorSet(typename P::Baseline& baseline, std::size_t baseline_bytes, const std::vector<std::string>& enabled)
      : baseline_("baseline", baseline, baseline_bytes), enabled_(enabled) {}

  // f(source) for each enabled configuration: Scatter, the tuned Scatter,
  // XMalloc (Scatter with XMallocSIMD), SizeClassSlabs, the list-based
  // baselines of [Steinberger2012] section 4 (one list, one list per
  // processor), the baseline.
  template <class F>
  void for_each(F&& f) {
    if (on(scatter_.name)) f(scatter_);
    if (on(tuned_.name)) f(tuned_);
    if (on(xmalloc_.name)) f(xmalloc_);
    if (on(slabs_.name)) f(slabs_);
    if (on(lists_.name)) f(lists_);
    if (on(multi_lists_.name)) f(multi_lists_);
    if (on(baseline_.name)) f(baseline_);
  }
  std::size_t count() const {
    return static_cast<std::size_t>(on(scatter_.name)) + on(tuned_.name) + on(xmalloc_.name) + on(slabs_.name) +
           on(lists_.name) + on(multi_lists_.name) + on(baseline_.name);
  }

 private:
  // Without --allocators the paper's baselines are left out: a list serves
  // one request at a time, so at full occupancy they alone would take longer
  // than every other configuration together, and XMalloc is Scatter with
  // another distribution policy (scripts/gpu_run.sh `figures` names them;
  // `--allocators all` takes every configuration).
  bool on(const std::string& n) const {
    if (enabled_.empty()) return n != lists_.name && n != multi_lists_.name && n != xmalloc_.name;
    return std::find(enabled_.begin(), enabled_.end(), "all") != enabled_.end() ||
           std::find(enabled_.begin(), enabled_.end(), n) != enabled_.end();
  }
  FreshHeap<typename P::Scatter> scatter_{"scatter"};
  FreshHeap<typename P::ScatterTuned> tuned_{"scatter-tuned"};
  FreshHeap<typename P::XMalloc> xmalloc_{"xmalloc"};
  FreshHeap<typename P::Slabs> slabs_{"slabs"};
  FreshHeap<typename P::Lists> lists_{"lists"};
  FreshHeap<typename P::MultiLists> multi_lists_{"mp-lists"};
  SharedHeap<typename P::Baseline> baseline_;
  std::vector<std::string> enabled_;
};

// Whether a heap type is a Scatter heap (has a page table of split pages to inspect).
template <class Heap>
concept HasPageTable = requires(const Heap& h) { h.creation().layout().pages_per_block; };

}  // namespace manyalloc::heap::bench
