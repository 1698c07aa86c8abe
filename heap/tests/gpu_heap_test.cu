// The generic heap suite on a CUDA GPU at full occupancy (2^20 workers),
// plus the DeviceMalloc baseline. Skips itself when no GPU is present.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <vector>

#include "manyalloc_support/cuda_runner.hpp"
#include "generic/heap_typed_tests.hpp"
#include "generic/slabs_run_churn.hpp"

namespace manyalloc::heap::testing {

using CudaCases = ::testing::Types<ScatterCase<CudaRunner>, SlabsCase<CudaRunner>, ListCase<CudaRunner>,
                                   MultiListCase<CudaRunner>>;
INSTANTIATE_TYPED_TEST_SUITE_P(Cuda, HeapTest, CudaCases, CaseName);

namespace {
// Worker w's chunk of `bytes` into ptrs[w], its index in the first word and
// its complement in the last; counters[0] counts failed allocations.
template <class Handle, class Acc>
__device__ void alloc_tagged(const Handle& heap, const Acc& acc, std::size_t bytes, std::uint32_t w, void** ptrs,
                             std::uint32_t* counters) {
  auto* p = static_cast<std::uint32_t*>(heap.alloc(acc, bytes));
  ptrs[w] = p;
  if (p == nullptr) {
    atomicAdd(counters, 1u);
    return;
  }
  p[0] = w;
  p[bytes / 4 - 1] = ~w;
}
template <class Handle>
struct AllocWriteFree {
  Handle heap;
  std::uint32_t* failures;
  template <class Acc>
  __device__ void operator()(const Acc& acc, std::uint32_t worker) const {
    auto* p = static_cast<std::uint32_t*>(heap.alloc(acc, 16));
    if (p == nullptr) {
      atomicAdd(failures, 1u);
      return;
    }
    p[0] = worker;
    p[3] = ~worker;
    if (p[0] != worker || p[3] != ~worker) atomicAdd(failures + 1, 1u);
    heap.dealloc(acc, p);
  }
};
// Each worker takes one chunk of `bytes`, writes its index into the first
// and last word, or (check) counts chunks whose words changed, or frees.
template <class Handle>
struct GrowProbe {
  Handle heap;
  std::size_t bytes;
  void** ptrs;
  std::uint32_t* counters;  // [0] failed allocations, [1] corrupt chunks
  int step;                 // 0 alloc+write, 1 check, 2 free
  template <class Acc>
  __device__ void operator()(const Acc& acc, std::uint32_t w) const {
    if (step == 0) {
      alloc_tagged(heap, acc, bytes, w, ptrs, counters);
    } else if (auto* p = static_cast<std::uint32_t*>(ptrs[w])) {
      if (step == 1 && (p[0] != w || p[bytes / 4 - 1] != ~w)) atomicAdd(counters + 1, 1u);
      if (step == 2) heap.dealloc(acc, p);
    }
  }
};
// Each worker asks for 16 B-4 KiB (a hash of its index) and keeps it.
template <class Handle>
struct MixedAlloc {
  Handle heap;
  void** ptrs;
  std::uint32_t* failures;
  int step;  // 0 alloc, 1 free
  template <class Acc>
  __device__ void operator()(const Acc& acc, std::uint32_t w) const {
    if (step == 1) {
      heap.dealloc(acc, ptrs[w]);
      return;
    }
    std::uint32_t x = w * 2654435761u;
    x ^= x >> 15;
    alloc_tagged(heap, acc, 16u + x % 4081u, w, ptrs, failures);
  }
};
// Sizes of 16 B-4 KiB by a hash of the worker's index, and 1 MiB for one
// worker in 64 (the large path in the same warps); `mode` 1 leaves out the
// 1 MiB requests, 2 makes only them. step 0: allocate and tag, 1: check the
// tags, 2: free.
template <class Handle>
struct MixedGrowProbe {
  Handle heap;
  void** ptrs;
  std::uint32_t* counters;  // [0] failed allocations, [1] corrupt chunks, [2] failed 1 MiB requests
  int step;
  int mode = 0;
  __device__ std::size_t bytes_of(std::uint32_t w) const {
    std::uint32_t x = w * 2654435761u;
    x ^= x >> 15;
    const bool large = w % 64u == 7u;
    if (mode == 2) return large ? std::size_t{1} << 20 : 0u;
    return large && mode == 0 ? std::size_t{1} << 20 : 16u + x % 4081u;
  }
  template <class Acc>
  __device__ void operator()(const Acc& acc, std::uint32_t w) const {
    const std::size_t bytes = bytes_of(w);
    if (bytes == 0u) {
      if (step == 0) ptrs[w] = nullptr;
      return;
    }
    if (step == 0) {
      alloc_tagged(heap, acc, bytes, w, ptrs, counters);
      if (ptrs[w] == nullptr && bytes > 4096u) atomicAdd(counters + 2, 1u);
    } else if (auto* p = static_cast<std::uint32_t*>(ptrs[w])) {
      if (step == 1 && (p[0] != w || p[bytes / 4 - 1] != ~w)) atomicAdd(counters + 1, 1u);
      if (step == 2) heap.dealloc(acc, p);
    }
  }
};
// Fill, free every other chunk, allocate again (slabs/invariants.hpp C6).
// step 0: every worker allocates and tags its chunk; 1: odd workers free
// theirs; 2: odd workers allocate again; 3: every tag is checked; 4: all free.
template <class Handle>
struct ReuseProbe {
  Handle heap;
  std::size_t bytes;
  void** ptrs;
  std::uint32_t* counters;  // [0] failed allocations, [1] corrupt chunks, [2] chunks freed in step 1
  int step;
  template <class Acc>
  __device__ void operator()(const Acc& acc, std::uint32_t w) const {
    auto* p = static_cast<std::uint32_t*>(ptrs[w]);
    if (step == 0 || (step == 2 && w % 2u == 1u)) {
      alloc_tagged(heap, acc, bytes, w, ptrs, counters);
    } else if (step == 1 && w % 2u == 1u && p != nullptr) {
      heap.dealloc(acc, p);
      ptrs[w] = nullptr;
      atomicAdd(counters + 2, 1u);
    } else if (step == 3 && p != nullptr && (p[0] != w || p[bytes / 4 - 1] != ~w)) {
      atomicAdd(counters + 1, 1u);
    } else if (step == 4 && p != nullptr) {
      heap.dealloc(acc, p);
    }
  }
};
}  // namespace

// Issue 18 (C6, ReuseFreedChunksConfig): a full heap hands out the freed
// chunks of partly used slabs. Twice as many workers as the heap has chunks
// fill it, the odd ones free theirs (no page empties) and ask again: every
// freed chunk is taken again, and no tag of a live chunk changes. Before C6
// these requests failed.
TEST(CudaSlabs, AFullPoolHandsOutTheFreedChunksOfPartlyUsedSlabs) {
  if (!CudaRunner::available()) GTEST_SKIP() << "no CUDA device present: test skipped";
  for (std::size_t bytes : {64, 1024, 8192}) {
    using Heap = SlabsHeap<CudaRunner, CreationPolicies::ReuseFreedChunksConfig>;
    Heap heap(std::size_t{64} << 20);
    const auto workers = static_cast<std::uint32_t>(2 * heap.getAvailableSlots(bytes));
    CudaRunner::Buffer<void*> ptrs(workers);
    CudaRunner::Buffer<std::uint32_t> counters(3);
    using H = Heap::Handle;
    std::uint32_t freed = 0;
    for (int step = 0; step < 4; ++step) {
      CudaRunner::run(workers, ReuseProbe<H>{heap.handle(), bytes, ptrs.data(), counters.data(), step});
      if (step == 1) {
        const auto c = counters.to_host();
        EXPECT_GT(c[0], workers / 4) << bytes << ": the fill must run the pool dry";
        freed = c[2];
        EXPECT_GT(freed, workers / 8) << bytes;
        counters.zero();
      }
    }
    const auto c = counters.to_host();
    EXPECT_EQ(c[1], 0u) << bytes << ": corrupted chunks";
    EXPECT_GE(workers / 2 - c[0], freed) << bytes << ": odd workers that got a chunk again";
    EXPECT_GE(heap.creation().statistics<acc::Cuda>().reused_chunks, freed / 2) << bytes;
    CudaRunner::run(workers, ReuseProbe<H>{heap.handle(), bytes, ptrs.data(), counters.data(), 4});
    heap.creation().release_open_segments<acc::Cuda>();
    EXPECT_EQ(heap.creation().statistics<acc::Cuda>().pages_in_use, 0u) << bytes << ": memory lost";
  }
}

// The first launch on a fresh heap opens a segment in almost every slot at
// once. Each refill reserves its pages in the open count before it claims
// them (slabs/invariants.hpp C4); when all read the count first, thousands
// of refills took full-length segments together, the pool ran dry under a
// quarter of its size in requests, and every later refill went through the
// dry path.
// FineSizeClassesConfig sizes its segments by demand (C4) and runs the same.
template <class Config>
void expect_cold_mixed_launch_within_the_open_budget() {
  SlabsHeap<CudaRunner, Config> heap(std::size_t{1} << 30);
  const std::uint32_t workers = 1u << 17;  // about 256 MiB of requests
  CudaRunner::Buffer<void*> ptrs(workers);
  CudaRunner::Buffer<std::uint32_t> failures(1);
  using H = typename SlabsHeap<CudaRunner, Config>::Handle;
  CudaRunner::run(workers, MixedAlloc<H>{heap.handle(), ptrs.data(), failures.data(), 0});
  const auto st = heap.creation().template statistics<acc::Cuda>();
  EXPECT_EQ(failures.to_host()[0], 0u);
  EXPECT_EQ(st.dry_refills, 0u) << "the pool ran dry";
  const auto& l = heap.creation().layout();
  EXPECT_LE(st.open_pages, st.open_budget + heap.creation().class_count * l.shards);
  CudaRunner::run(workers, MixedAlloc<H>{heap.handle(), ptrs.data(), failures.data(), 1});
  heap.creation().template release_open_segments<acc::Cuda>();
  EXPECT_EQ(heap.creation().template statistics<acc::Cuda>().pages_in_use, 0u);
}

TEST(CudaSlabs, ColdMixedLaunchStaysWithinTheOpenBudget) {
  if (!CudaRunner::available()) GTEST_SKIP() << "no CUDA device present: test skipped";
  expect_cold_mixed_launch_within_the_open_budget<CreationPolicies::SizeClassSlabsConfig>();
  expect_cold_mixed_launch_within_the_open_budget<CreationPolicies::FineSizeClassesConfig>();
}

// Placement (slabs/invariants.hpp P4): beside 2^17 live mixed chunks (slot
// segments of every class and shard) and beside 2^20 live 4 KiB chunks
// (4 GiB; warps' private slabs), one request of 1 GiB finds 512 free words
// in a row of a 16 GiB pool, in the large-request zone. Hashed over the
// whole pool, the small runs left no such run
// (docs/results/heap/peers/placement_probe). `launch(handle, ptrs,
// failures, free)` runs the small requests' allocs (free: their frees).
template <class Launch>
void expect_one_gib_beside(std::uint32_t workers, const char* what, Launch launch) {
  using H = SlabsHeap<CudaRunner>::Handle;
  SlabsHeap<CudaRunner> heap(std::size_t{16} << 30);
  CudaRunner::Buffer<void*> ptrs(workers), large(1);
  CudaRunner::Buffer<std::uint32_t> counters(3);  // small requests' failures; then GrowProbe's two counters
  launch(heap.handle(), ptrs.data(), counters.data(), false);
  ASSERT_EQ(counters.to_host()[0], 0u) << what << ": small requests failed";
  const std::size_t gib = std::size_t{1} << 30;
  for (int step = 0; step < 3; ++step) CudaRunner::run(1, GrowProbe<H>{heap.handle(), gib, large.data(), counters.data() + 1, step});
  const auto c = counters.to_host();
  EXPECT_EQ(c[1], 0u) << "the 1 GiB request failed beside " << workers << " " << what;
  EXPECT_EQ(c[2], 0u) << "the 1 GiB chunk was overwritten";
  launch(heap.handle(), ptrs.data(), counters.data(), true);
  heap.creation().template release_open_segments<acc::Cuda>();
  const auto st = heap.creation().statistics<acc::Cuda>();
  EXPECT_EQ(st.misuse_reports, 0u);
  EXPECT_EQ(st.pages_in_use, 0u) << what << ": pages lost";
}

TEST(CudaSlabs, AOneGiBRequestFitsBesideSmallChunks) {
  if (!CudaRunner::available()) GTEST_SKIP() << "no CUDA device present: test skipped";
  using H = SlabsHeap<CudaRunner>::Handle;
  const std::uint32_t mixed = std::min(CudaRunner::many_workers(), 1u << 17);
  expect_one_gib_beside(mixed, "mixed chunks of 16 B-4 KiB", [mixed](H h, void** p, std::uint32_t* failures, bool free) {
    CudaRunner::run(mixed, MixedAlloc<H>{h, p, failures, free ? 1 : 0});
  });
  const std::uint32_t pages = std::min(CudaRunner::many_workers(), 1u << 20);
  expect_one_gib_beside(pages, "chunks of 4 KiB", [pages](H h, void** p, std::uint32_t* failures, bool free) {
    CudaRunner::run(pages, GrowProbe<H>{h, 4096, p, failures, free ? 2 : 0});
  });
}

// C5's last resort on the GPU: whole warps whose class (1024 B) and the
// pool have run out claim chunks from the open segments of larger classes,
// up to 32 lanes on one slot word at once (ClassSlots::from_open_segments).
// A 16 MiB pool has one shard, so every claim of a class meets on one slot.
// Twice as many workers as the pool holds ask once each. Each chunk goes to
// one worker (its tags survive), some requests are served by a larger
// class, one more request afterwards fails only if no larger class whose
// room flag is set has room left (C7: on the GPU a flag may be left clear
// beside room), and nothing is lost.
template <class Handle>
struct LargerClassProbe {
  Handle heap;
  heap::detail::slabs::SlabLayout layout;
  std::uint32_t own_cls;  // SlabPage::cls of the requested class (class + 1, S2)
  void** ptrs;
  std::uint32_t* counters;  // [0] failed, [1] corrupt, [2] served by a larger class
  int step;                 // 0 alloc+tag, 1 check and count, 2 free
  template <class Acc>
  __device__ void operator()(const Acc& acc, std::uint32_t w) const {
    if (step == 0) return alloc_tagged(heap, acc, 1024, w, ptrs, counters);
    auto* p = static_cast<std::uint32_t*>(ptrs[w]);
    if (p == nullptr) return;
    if (step == 2) return heap.dealloc(acc, p);
    if (p[0] != w || p[255] != ~w) atomicAdd(counters + 1, 1u);
    const auto page = static_cast<std::uint32_t>((reinterpret_cast<std::byte*>(p) - layout.data) >> layout.slab_shift);
    if (layout.pages[page].cls != own_cls) atomicAdd(counters + 2, 1u);
  }
};
// One worker opens a segment of each of `sizes` and keeps the chunk (step
// 0), or frees them (step 1).
template <class Handle>
struct OpenSegments {
  Handle heap;
  void** ptrs;
  int step;
  template <class Acc>
  __device__ void operator()(const Acc& acc, std::uint32_t) const {
    constexpr std::size_t sizes[] = {1536, 2048, 4096, 8192};
    for (int i = 0; i < 4; ++i) {
      if (step == 0) ptrs[i] = heap.alloc(acc, sizes[i]);
      else heap.dealloc(acc, ptrs[i]);
    }
  }
};

TEST(CudaSlabs, FullWarpsRacingForLargerClassesGetEachChunkOnce) {
  if (!CudaRunner::available()) GTEST_SKIP() << "no CUDA device present: test skipped";
  using Heap = SlabsHeap<CudaRunner>;
  using Slots = heap::detail::slabs::ClassSlots<CreationPolicies::SizeClassSlabsConfig>;
  const std::size_t pool = std::size_t{16} << 20;
  Heap heap(pool);
  const auto& l = heap.creation().layout();
  ASSERT_EQ(l.shards, 1u) << "the test wants every claim of a class on one slot";
  CudaRunner::Buffer<void*> opened(4);
  CudaRunner::run(1, OpenSegments<Heap::Handle>{heap.handle(), opened.data(), 0});
  for (void* p : opened.to_host()) ASSERT_NE(p, nullptr);
  const auto workers = static_cast<std::uint32_t>(2 * pool / 1024);
  CudaRunner::Buffer<void*> ptrs(workers);
  CudaRunner::Buffer<std::uint32_t> counters(3);
  const std::uint32_t first_larger = Slots::Classes::of(1024) + 1u;  // also SlabPage::cls of 1 KiB (class + 1, S2)
  using Probe = LargerClassProbe<Heap::Handle>;
  CudaRunner::run(workers, Probe{heap.handle(), l, first_larger, ptrs.data(), counters.data(), 0});
  // One more request once the race is over: its chunk must be none of the
  // live ones (its tags would also overwrite one's, which the check counts).
  CudaRunner::Buffer<void*> last(1);
  CudaRunner::Buffer<std::uint32_t> last_counters(2);  // GrowProbe's: [0] failed
  CudaRunner::run(1, GrowProbe<Heap::Handle>{heap.handle(), 1024, last.data(), last_counters.data(), 0});
  CudaRunner::run(workers, Probe{heap.handle(), l, first_larger, ptrs.data(), counters.data(), 1});
  const auto c = counters.to_host();
  EXPECT_GT(c[0], workers / 4) << "the requests must run the pool dry";
  EXPECT_EQ(c[1], 0u) << "a chunk was handed out twice";
  EXPECT_GT(c[2], 0u) << "no request was served by a larger class (C5)";
  const void* last_chunk = last.to_host()[0];
  if (last_chunk != nullptr) {
    const auto live = ptrs.to_host();
    EXPECT_EQ(std::count(live.begin(), live.end(), last_chunk), 0) << "the last request got a live chunk";
  } else {
    std::vector<std::uint64_t> slots(Slots::class_count);
    std::vector<std::uint32_t> flags(Slots::class_count);
    acc::Cuda::copy_to_host(slots.data(), l.slot(0, 0), slots.size() * sizeof(std::uint64_t));
    acc::Cuda::copy_to_host(flags.data(), l.class_flags, flags.size() * sizeof(std::uint32_t));
    for (std::uint32_t cls = first_larger; cls < Slots::class_count; ++cls)
      if ((flags[cls] & heap::detail::slabs::room_flag) != 0u)
        EXPECT_EQ(Slots::segment_room(cls, slots[cls]), 0u) << "class " << cls << " kept room while a request failed";
  }
  CudaRunner::run(1, GrowProbe<Heap::Handle>{heap.handle(), 1024, last.data(), last_counters.data(), 2});
  CudaRunner::run(workers, Probe{heap.handle(), l, first_larger, ptrs.data(), counters.data(), 2});
  CudaRunner::run(1, OpenSegments<Heap::Handle>{heap.handle(), opened.data(), 1});
  heap.creation().release_open_segments<acc::Cuda>();
  const auto st = heap.creation().statistics<acc::Cuda>();
  EXPECT_EQ(st.misuse_reports, 0u) << "a chunk's bit was not set when it was handed out, or set twice";
  EXPECT_EQ(st.pages_in_use, 0u) << "memory lost";
}

// 2^16 workers churn chunks up to 8 MiB (runs of up to four whole words)
// in the 512 MiB test pool, far more than it holds: whole-word searches
// that trust the busy hints race with the claims and releases that change
// them; nothing corrupted or lost (generic/slabs_run_churn.hpp).
TEST(CudaSlabs, ChurnOfWholeWordRunsLosesNothing) {
  if (!CudaRunner::available()) GTEST_SKIP() << "no CUDA device present: test skipped";
  expect_whole_word_run_churn_loses_nothing<CudaRunner>(CudaRunner::heap_bytes(),
                                                        std::min<std::uint32_t>(CudaRunner::many_workers(), 1u << 16),
                                                        64, 23);
}

// The back end zeroes heap metadata with a kernel of its own (acc::Cuda::
// fill_zero); ranges of any alignment and length are zeroed exactly.
TEST(CudaBackend, FillZeroClearsExactlyTheRange) {
  if (!CudaRunner::available()) GTEST_SKIP() << "no CUDA device present: test skipped";
  const std::size_t size = 70000;
  unsigned char* dev = nullptr;
  ASSERT_EQ(cudaMalloc(&dev, size), cudaSuccess);
  std::vector<unsigned char> host(size);
  for (std::size_t begin : {0, 1, 3, 15, 16, 17}) {
    for (std::size_t n : {0, 1, 7, 16, 31, 1000, 65537}) {
      ASSERT_EQ(cudaMemset(dev, 0xab, size), cudaSuccess);
      acc::Cuda::fill_zero(dev + begin, n);
      ASSERT_EQ(cudaMemcpy(host.data(), dev, size, cudaMemcpyDeviceToHost), cudaSuccess);
      for (std::size_t i = 0; i < size; ++i) {
        const unsigned char want = i >= begin && i < begin + n ? 0 : 0xab;
        ASSERT_EQ(host[i], want) << "byte " << i << " of fill_zero(" << begin << ", " << n << ")";
      }
    }
  }
  cudaFree(dev);
}

// Issue 15: a pool that grows between launches (CUDA virtual memory
// management). Chunks from before the growth keep their place and data.
TEST(CudaGrowingPool, GrowsBetweenLaunchesWithoutMovingChunks) {
  if (!CudaRunner::available()) GTEST_SKIP() << "no CUDA device present: test skipped";
  using Heap = Allocator<CreationPolicies::SizeClassSlabs<>, DistributionPolicies::NoOp, OOMPolicies::ReturnNull,
                         ReservePoolPolicies::CudaVirtualMemory, AlignmentPolicies::Shrink<16>>;
  const std::size_t mib = std::size_t{1} << 20;
  Heap heap(std::size_t{16} << 30, 64 * mib);
  EXPECT_LT(heap.mapped_bytes(), 512 * mib) << "metadata and 64 MiB only";
  const std::uint32_t workers = 1u << 16;
  const std::size_t bytes = 4096;  // 2^16 x 4 KiB = 256 MiB: more than the first mapping
  CudaRunner::Buffer<void*> first(workers), second(workers);
  CudaRunner::Buffer<std::uint32_t> counters(2);
  using H = Heap::Handle;
  CudaRunner::run(workers, GrowProbe<H>{heap.handle(), bytes, first.data(), counters.data(), 0});
  const std::uint32_t failed_small = counters.to_host()[0];
  EXPECT_GT(failed_small, workers / 2) << "64 MiB cannot hold 256 MiB of chunks";
  EXPECT_LT(failed_small, workers);

  heap.grow(std::size_t{2} << 30);
  counters.zero();
  CudaRunner::run(workers, GrowProbe<H>{heap.handle(), bytes, second.data(), counters.data(), 0});
  EXPECT_EQ(counters.to_host()[0], 0u) << "after growing to 2 GiB every worker gets a chunk";
  CudaRunner::run(workers, GrowProbe<H>{heap.handle(), bytes, first.data(), counters.data(), 1});
  CudaRunner::run(workers, GrowProbe<H>{heap.handle(), bytes, second.data(), counters.data(), 1});
  EXPECT_EQ(counters.to_host()[1], 0u) << "chunks changed";
  CudaRunner::run(workers, GrowProbe<H>{heap.handle(), bytes, first.data(), counters.data(), 2});
  CudaRunner::run(workers, GrowProbe<H>{heap.handle(), bytes, second.data(), counters.data(), 2});
  const auto st = heap.creation().statistics<acc::Cuda>();
  EXPECT_EQ(st.misuse_reports, 0u);
  EXPECT_EQ(st.pages_in_use, 0u);
  // A 1 GiB run in the grown part, then the whole reservation.
  heap.grow(std::size_t{16} << 30);
  EXPECT_GE(heap.getAvailableSlots(std::size_t{1} << 30), heap.creation().layout().page_count / 16384 - 1);
}

// Issue 15: a pool that grows while a kernel runs (Allocator::serve_growth):
// the workers' requests that find no room ask the growth service, which maps
// more of the reservation while they wait. Every request succeeds in one
// launch, the chunks are intact, and a request too large for the
// reservation fails without waiting.
TEST(CudaGrowingPool, GrowsWhileAKernelRuns) {
  if (!CudaRunner::available()) GTEST_SKIP() << "no CUDA device present: test skipped";
  using Heap = Allocator<CreationPolicies::SizeClassSlabs<>, DistributionPolicies::NoOp, OOMPolicies::ReturnNull,
                         ReservePoolPolicies::CudaVirtualMemory, AlignmentPolicies::Shrink<16>>;
  static_assert(Heap::grows_while_running);
  const std::size_t mib = std::size_t{1} << 20;
  Heap heap(std::size_t{16} << 30, 0);  // the metadata mapped, hardly any page
  const std::size_t first = heap.mapped_bytes();
  heap.serve_growth({.step_bytes = 64 * mib, .wait = std::chrono::seconds(10)});
  const std::uint32_t workers = std::min(CudaRunner::many_workers(), 1u << 17);
  const std::size_t bytes = 4096;  // 2^17 x 4 KiB = 512 MiB: eight steps
  CudaRunner::Buffer<void*> ptrs(workers);
  CudaRunner::Buffer<std::uint32_t> counters(2);
  using H = Heap::Handle;
  const auto grow0 = std::chrono::steady_clock::now();
  CudaRunner::run(workers, GrowProbe<H>{heap.handle(), bytes, ptrs.data(), counters.data(), 0});
  const double growing_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - grow0).count();
  EXPECT_EQ(counters.to_host()[0], 0u) << "requests failed though the reservation had room";
  EXPECT_GE(heap.mapped_bytes() + 2 * mib, first + workers * bytes) << "the pool did not grow during the launch";
  const auto st = heap.growth_statistics();
  ASSERT_TRUE(st.has_value());
  EXPECT_GE(st->growths, 1u);
  EXPECT_EQ(st->refusals, 0u);
  std::printf("[growth] mapped %zu MiB -> %zu MiB in one launch of %u workers: %llu answers, %llu growths; "
              "pages in use %u (open segments %u); the host mapped for %.3f ms (longest answer %.3f ms)\n",
              first / mib, heap.mapped_bytes() / mib, workers, static_cast<unsigned long long>(st->answered),
              static_cast<unsigned long long>(st->growths), heap.creation().statistics<acc::Cuda>().pages_in_use,
              heap.creation().statistics<acc::Cuda>().open_pages, st->mapping.count() / 1e6,
              st->longest_mapping.count() / 1e6);
  {
    // The same launch on a pool mapped whole, for the log: the pages the
    // heap takes for these requests when it has room.
    SlabsHeap<CudaRunner> fixed(std::size_t{16} << 30);
    CudaRunner::Buffer<void*> fixed_ptrs(workers);
    CudaRunner::Buffer<std::uint32_t> fixed_counters(2);
    using F = SlabsHeap<CudaRunner>::Handle;
    CudaRunner::run(workers, GrowProbe<F>{fixed.handle(), bytes, fixed_ptrs.data(), fixed_counters.data(), 0});
    std::printf("[growth] the same launch in a pool mapped whole: pages in use %u (open segments %u)\n",
                fixed.creation().statistics<acc::Cuda>().pages_in_use,
                fixed.creation().statistics<acc::Cuda>().open_pages);
    CudaRunner::run(workers, GrowProbe<F>{fixed.handle(), bytes, fixed_ptrs.data(), fixed_counters.data(), 2});
  }
  CudaRunner::run(workers, GrowProbe<H>{heap.handle(), bytes, ptrs.data(), counters.data(), 1});
  EXPECT_EQ(counters.to_host()[1], 0u) << "chunks changed";
  CudaRunner::run(workers, GrowProbe<H>{heap.handle(), bytes, ptrs.data(), counters.data(), 2});
  EXPECT_EQ(heap.creation().statistics<acc::Cuda>().misuse_reports, 0u);
  // The same launch in the pool now mapped (for the log; no timed assert).
  const auto again0 = std::chrono::steady_clock::now();
  CudaRunner::run(workers, GrowProbe<H>{heap.handle(), bytes, ptrs.data(), counters.data(), 0});
  const double mapped_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - again0).count();
  EXPECT_EQ(counters.to_host()[0], 0u);
  CudaRunner::run(workers, GrowProbe<H>{heap.handle(), bytes, ptrs.data(), counters.data(), 2});
  std::printf("[growth] launch with host timing: %.3f ms growing, %.3f ms in the grown pool\n", growing_ms, mapped_ms);

  // One worker asks for 4 GiB: the pool grows by that much in the launch.
  CudaRunner::Buffer<void*> one(1);
  counters.zero();
  const std::size_t big = std::size_t{4} << 30;
  const auto big0 = std::chrono::steady_clock::now();
  CudaRunner::run(1, GrowProbe<H>{heap.handle(), big, one.data(), counters.data(), 0});
  std::printf("[growth] one 4 GiB request that grows the pool: %.3f ms with host timing\n",
              std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - big0).count());
  EXPECT_EQ(counters.to_host()[0], 0u) << "a 4 GiB request in a pool with 15 GiB of unmapped reservation";
  EXPECT_GE(heap.mapped_bytes(), big);
  CudaRunner::run(1, GrowProbe<H>{heap.handle(), big, one.data(), counters.data(), 1});
  EXPECT_EQ(counters.to_host()[1], 0u);
  CudaRunner::run(1, GrowProbe<H>{heap.handle(), big, one.data(), counters.data(), 2});
  // More than the reservation: fails without waiting for the service (M4;
  // a wait would last the service's `wait`, set above to twice the limit
  // checked here).
  counters.zero();
  const auto t0 = std::chrono::steady_clock::now();
  CudaRunner::run(1, GrowProbe<H>{heap.handle(), std::size_t{17} << 30, one.data(), counters.data(), 0});
  EXPECT_EQ(counters.to_host()[0], 1u);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(5));
  heap.creation().release_open_segments<acc::Cuda>();
  EXPECT_EQ(heap.creation().statistics<acc::Cuda>().pages_in_use, 0u) << "pages were lost";
}

// The same with mixed sizes, large requests among them in the same warps,
// and the default step (the mapped part doubles). The same launches in a
// pool mapped whole are the reference.
TEST(CudaGrowingPool, MixedAndLargeRequestsGrowInOneLaunch) {
  if (!CudaRunner::available()) GTEST_SKIP() << "no CUDA device present: test skipped";
  using Heap = Allocator<CreationPolicies::SizeClassSlabs<>, DistributionPolicies::NoOp, OOMPolicies::ReturnNull,
                         ReservePoolPolicies::CudaVirtualMemory, AlignmentPolicies::Shrink<16>>;
  const std::size_t mib = std::size_t{1} << 20;
  const std::uint32_t workers = std::min(CudaRunner::many_workers(), 1u << 17);
  CudaRunner::Buffer<void*> ptrs(workers);
  CudaRunner::Buffer<std::uint32_t> counters(3);
  const char* names[] = {"mixed and 1 MiB", "mixed", "1 MiB"};
  for (int mode = 0; mode < 3; ++mode) {
    std::uint32_t fixed_failed = 0, fixed_large = 0;
    double fixed_ms = 0;
    {
      SlabsHeap<CudaRunner> fixed(std::size_t{16} << 30);
      using F = SlabsHeap<CudaRunner>::Handle;
      counters.zero();
      const auto f0 = std::chrono::steady_clock::now();
      CudaRunner::run(workers, MixedGrowProbe<F>{fixed.handle(), ptrs.data(), counters.data(), 0, mode});
      fixed_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - f0).count();
      const auto c = counters.to_host();
      fixed_failed = c[0];
      fixed_large = c[2];
      CudaRunner::run(workers, MixedGrowProbe<F>{fixed.handle(), ptrs.data(), counters.data(), 2, mode});
    }
    EXPECT_EQ(fixed_failed, 0u) << names[mode] << ": the reference, a pool mapped whole";
    Heap heap(std::size_t{16} << 30, 0);
    const std::size_t first = heap.mapped_bytes();
    heap.serve_growth();
    using H = Heap::Handle;
    counters.zero();
    const auto t0 = std::chrono::steady_clock::now();
    CudaRunner::run(workers, MixedGrowProbe<H>{heap.handle(), ptrs.data(), counters.data(), 0, mode});
    const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    const auto c = counters.to_host();
    const auto st = heap.growth_statistics();
    ASSERT_TRUE(st.has_value());
    const auto hs = heap.creation().statistics<acc::Cuda>();
    std::printf("[growth] %s, %u workers: failed %u (1 MiB: %u), in a pool mapped whole %u (1 MiB: %u); mapped %zu MiB "
                "-> %zu MiB, %llu answers, %llu growths, %llu refusals; pages in use %u, dry refills %u; launch %.3f ms "
                "with host timing (%.3f ms in the pool mapped whole); the host mapped for %.3f ms (longest answer "
                "%.3f ms)\n",
                names[mode], workers, c[0], c[2], fixed_failed, fixed_large, first / mib, heap.mapped_bytes() / mib,
                static_cast<unsigned long long>(st->answered), static_cast<unsigned long long>(st->growths),
                static_cast<unsigned long long>(st->refusals), hs.pages_in_use, hs.dry_refills, ms, fixed_ms,
                st->mapping.count() / 1e6, st->longest_mapping.count() / 1e6);
    EXPECT_EQ(st->refusals, 0u);
    // A request that used its retries while the pool was smaller tries the
    // pool others grew before it gives up (allocator.hpp, create_after_growth).
    EXPECT_EQ(c[0], 0u) << names[mode] << ": requests failed though the reservation had room";
    CudaRunner::run(workers, MixedGrowProbe<H>{heap.handle(), ptrs.data(), counters.data(), 1, mode});
    EXPECT_EQ(counters.to_host()[1], 0u) << "chunks changed";
    CudaRunner::run(workers, MixedGrowProbe<H>{heap.handle(), ptrs.data(), counters.data(), 2, mode});
    EXPECT_EQ(heap.creation().statistics<acc::Cuda>().misuse_reports, 0u);
    heap.creation().release_open_segments<acc::Cuda>();
    EXPECT_EQ(heap.creation().statistics<acc::Cuda>().pages_in_use, 0u) << "pages were lost";
  }
}

// Issue 15: churn at full occupancy for MANYALLOC_SOAK_SECONDS (default 10;
// scripts/gpu_run.sh's soak stage runs 600): every worker keeps up to 8
// chunks of 1 B-16 KiB live, checks each before freeing it; afterwards the
// heap offers exactly what it offered before (no memory lost).
TEST(CudaSoak, SizeClassSlabsChurnLosesNothing) {
  if (!CudaRunner::available()) GTEST_SKIP() << "no CUDA device present: test skipped";
  SlabsHeap<CudaRunner> heap(CudaRunner::heap_bytes());
  const std::size_t fresh16 = heap.getAvailableSlots(16), fresh_pages = heap.getAvailableSlots(65536);
  CudaRunner::Buffer<std::uint32_t> counters(2);
  const double seconds = positive_env_or("MANYALLOC_SOAK_SECONDS", 10);
  const auto t0 = std::chrono::steady_clock::now();
  unsigned launches = 0;
  std::uint64_t corrupt = 0, failed = 0;  // summed per launch: a 32-bit counter wraps over a soak
  double elapsed = 0;                      // seconds of churn, measured (the last launch ends past `seconds`)
  do {
    counters.zero();
    CudaRunner::run(CudaRunner::many_workers(), Churn<SlabsHeap<CudaRunner>::Handle>{heap.handle(), 64, 14,
                                                                                     counters.data(),
                                                                                     counters.data() + 1});
    const auto c = counters.to_host();
    corrupt += c[0];
    failed += c[1];
    ++launches;
    elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  } while (elapsed < seconds);
  EXPECT_EQ(corrupt, 0u) << "corrupted chunks";
  std::printf("soak: %u launches of %u workers x 64 rounds in %.1f s, %llu failed allocations (%.1f M per launch)\n",
              launches, CudaRunner::many_workers(), elapsed, static_cast<unsigned long long>(failed),
              static_cast<double>(failed) / launches / 1e6);
  EXPECT_EQ(heap.getAvailableSlots(16), fresh16);
  EXPECT_EQ(heap.getAvailableSlots(65536), fresh_pages);
  const auto st = heap.creation().statistics<acc::Cuda>();
  EXPECT_EQ(st.misuse_reports, 0u);
  EXPECT_EQ(st.pages_in_use, 0u);
}

// Three launches of churn of 1 B-16 KiB chunks at full occupancy in a heap
// of Config: nothing corrupted, nothing lost. Returns the heap's statistics
// after the churn.
template <class Config>
CreationPolicies::SizeClassSlabsStatistics expect_churn_loses_nothing(bool fence_before_free) {
  using Heap = SlabsHeap<CudaRunner, Config>;
  Heap heap(CudaRunner::heap_bytes());
  const std::size_t fresh16 = heap.getAvailableSlots(16), fresh_pages = heap.getAvailableSlots(65536);
  CudaRunner::Buffer<std::uint32_t> counters(2);
  for (int launch = 0; launch < 3; ++launch)
    CudaRunner::run(CudaRunner::many_workers(), Churn<typename Heap::Handle>{heap.handle(), 64, 14, counters.data(),
                                                                              counters.data() + 1, fence_before_free});
  EXPECT_EQ(counters.to_host()[0], 0u) << "corrupted chunks";
  const auto churned = heap.creation().template statistics<acc::Cuda>();
  EXPECT_EQ(heap.getAvailableSlots(16), fresh16);
  EXPECT_EQ(heap.getAvailableSlots(65536), fresh_pages);
  const auto st = heap.creation().template statistics<acc::Cuda>();
  EXPECT_EQ(st.misuse_reports, 0u);
  EXPECT_EQ(st.pages_in_use, 0u);
  return churned;
}

// RelaxedFreesConfig: its frees skip the release (Config::ordered_frees), so
// the workers order their writes before each free themselves, as the
// configuration asks.
TEST(CudaSlabs, RelaxedFreesChurnLosesNothing) {
  if (!CudaRunner::available()) GTEST_SKIP() << "no CUDA device present: test skipped";
  expect_churn_loses_nothing<CreationPolicies::RelaxedFreesConfig>(true);
}

// FineSizeClassesConfig: 32 classes per doubling, segments sized by the
// requests waiting on their slot (slabs/invariants.hpp C4).
TEST(CudaSlabs, FineClassesChurnLosesNothing) {
  if (!CudaRunner::available()) GTEST_SKIP() << "no CUDA device present: test skipped";
  expect_churn_loses_nothing<CreationPolicies::FineSizeClassesConfig>(false);
}

// ReuseFreedChunksConfig in a heap that runs full, so that requests take
// freed chunks of partly used slabs (C6) while others free them.
TEST(CudaSlabs, ReuseFreedChunksChurnLosesNothing) {
  if (!CudaRunner::available()) GTEST_SKIP() << "no CUDA device present: test skipped";
  const auto st = expect_churn_loses_nothing<CreationPolicies::ReuseFreedChunksConfig>(false);
  EXPECT_GT(st.reused_chunks, 0u) << "the heap did not run full: C6 untested";
}

TEST(CudaDeviceMalloc, BaselineAllocatesFromKernels) {
  if (!CudaRunner::available()) GTEST_SKIP() << "no CUDA device present: test skipped";
  using Heap = Allocator<CreationPolicies::DeviceMalloc, DistributionPolicies::NoOp, OOMPolicies::ReturnNull,
                         ReservePoolPolicies::CudaSetLimits, AlignmentPolicies::NoOp>;
  Heap heap(std::size_t{256} << 20);
  EXPECT_FALSE(traits::providesAvailableSlots<Heap>);
  CudaRunner::Buffer<std::uint32_t> counters(2);
  CudaRunner::run(1u << 16, AllocWriteFree<Heap::Handle>{heap.handle(), counters.data()});
  const auto c = counters.to_host();
  EXPECT_EQ(c[0], 0u);
  EXPECT_EQ(c[1], 0u);
}

}  // namespace manyalloc::heap::testing
