// Distribution policies on a CUDA GPU at full occupancy (2^20 threads by
// default; MANYALLOC_TEST_WORKERS / MANYALLOC_TEST_HEAP_MB shrink it for
// compute-sanitizer): alloc/write/verify/free with mixed sizes, divergent
// branches, cross-lane frees, the [Eckert2014] 5.4 overlap test on Scatter for every
// policy, and DynamicWarp / WarpHeader over CUDA's device malloc. Skips itself
// (visibly) when no GPU is present.
#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <vector>

#include "manyalloc_support/cuda_runner.hpp"
#include "manyalloc_support/workers.hpp"

namespace manyalloc::heap::testing {
namespace {

namespace DP = DistributionPolicies;

struct ResetConfig : CreationPolicies::ScatterHeapConfig {
  static constexpr bool resetfreedpages = true;
};

template <class Policy>
using GpuScatter = Allocator<CreationPolicies::Scatter<ResetConfig>, Policy, OOMPolicies::ReturnNull,
                             ReservePoolPolicies::CudaMalloc, AlignmentPolicies::NoOp>;
template <class Policy>
using GpuDeviceMalloc = Allocator<CreationPolicies::DeviceMalloc, Policy, OOMPolicies::ReturnNull,
                                  ReservePoolPolicies::CudaSetLimits, AlignmentPolicies::NoOp>;


template <class Policy>
__device__ std::size_t gpu_size(std::uint32_t worker, std::uint32_t round) {
  if constexpr (DP::requires_uniform_sizes<Policy>) {
    return 4u * (5u + round % 7u);
  } else {
    const std::uint32_t x = worker * 2654435761u ^ round * 40503u;
    switch (x % 6u) {
      case 0: return 1 + x % 7u;
      case 1: return 4 + 8u * (x % 5u);
      case 2: return 16u * (1 + x % 8u);
      default: return 1 + x % 300u;
    }
  }
}

__device__ bool write_check(unsigned char* p, std::size_t n, std::uint32_t worker, std::uint32_t round) {
  for (std::size_t i = 0; i < n; ++i) p[i] = static_cast<unsigned char>(checksum(worker, round, i));
  __threadfence_block();
  for (std::size_t i = 0; i < n; ++i) {
    if (p[i] != static_cast<unsigned char>(checksum(worker, round, i))) return false;
  }
  return true;
}

// counters: [0] failed allocations, [1] corrupt parts, [2] misaligned parts.
template <class Policy, class Handle>
struct AllocWriteFree {
  Handle heap;
  std::uint32_t rounds;
  std::uint32_t* counters;
  template <class Acc>
  __device__ void operator()(const Acc& acc, std::uint32_t worker) const {
    for (std::uint32_t round = 0; round < rounds; ++round) {
      const std::size_t n = gpu_size<Policy>(DP::requires_uniform_sizes<Policy> ? blockIdx.x + round : worker, round);
      // Divergent branches for the warp policies: the lanes split by lane id.
      void* p = nullptr;
      if (!DP::block_scope<Policy> && acc.lane_id() % 3u == 0u) {
        p = heap.alloc(acc, n);
      } else {
        p = heap.alloc(acc, n);
      }
      if (p == nullptr) {
        atomicAdd(counters, 1u);
        continue;
      }
      if (!std::is_same_v<Policy, DP::NoOp> &&
          reinterpret_cast<std::uintptr_t>(p) % distribution::detail::natural_alignment(n) != 0u) {
        atomicAdd(counters + 2, 1u);
      }
      if (!write_check(static_cast<unsigned char*>(p), n, worker, round)) atomicAdd(counters + 1, 1u);
      heap.dealloc(acc, p);
    }
  }
};

// Every lane frees its warp neighbour's part (lane ^ 1), after checking it.
template <class Policy, class Handle>
struct CrossLaneFree {
  Handle heap;
  std::uint32_t* counters;
  template <class Acc>
  __device__ void operator()(const Acc& acc, std::uint32_t worker) const {
    const std::size_t n = DP::requires_uniform_sizes<Policy> ? 40u : 8u + worker % 50u;
    auto* p = static_cast<unsigned char*>(heap.alloc(acc, n));
    if (p == nullptr) atomicAdd(counters, 1u);
    if (p != nullptr && !write_check(p, n, worker, 0)) atomicAdd(counters + 1, 1u);
    __syncthreads();  // every launched thread of the runner's block reaches this
    const unsigned mask = __activemask();
    const unsigned partner_lane = acc.lane_id() ^ 1u;
    const bool has_partner = ((mask >> partner_lane) & 1u) != 0u;
    const auto mine = reinterpret_cast<unsigned long long>(p);
    const unsigned long long other = __shfl_sync(mask, mine, has_partner ? partner_lane : acc.lane_id());
    const std::uint32_t other_worker = has_partner ? worker ^ 1u : worker;
    const std::size_t other_n = DP::requires_uniform_sizes<Policy> ? 40u : 8u + other_worker % 50u;
    auto* q = reinterpret_cast<unsigned char*>(other);
    if (q != nullptr) {
      for (std::size_t i = 0; i < other_n; ++i) {
        if (q[i] != static_cast<unsigned char>(checksum(other_worker, 0, i))) {
          atomicAdd(counters + 1, 1u);
          break;
        }
      }
    }
    __syncwarp(mask);
    heap.dealloc(acc, q);
  }
};

// Where lost memory is, for the message of a failing leak check: parts the
// no-header map still holds (a free that did not find its part), and the
// page table's states (scatter/invariants.hpp I1-I4), with the superblock counter
// of each multi-page run still allocated.
template <class Heap>
std::string leak_census(const Heap& heap, const distribution::SuperblockMapView* map) {
  std::ostringstream out;
  if (map != nullptr && map->mask != 0) {
    std::vector<std::uint64_t> keys(map->mask + 1u);
    acc::cuda_check(cudaMemcpy(keys.data(), map->keys, keys.size() * 8u, cudaMemcpyDeviceToHost), "census keys");
    std::uint64_t live = 0;
    for (auto k : keys) live += k > distribution::SuperblockMapView::tombstone;
    out << "map: " << live << " live keys; ";
  }
  const auto& l = heap.creation().layout();
  std::vector<heap::detail::PageEntry> pages(l.page_count);
  acc::cuda_check(cudaMemcpy(pages.data(), l.pages, pages.size() * sizeof(heap::detail::PageEntry), cudaMemcpyDeviceToHost),
                  "census pages");
  std::uint64_t split_empty = 0, split_used = 0, locked_free = 0, run_pages = 0;
  for (std::uint32_t i = 0; i < l.page_count; ++i) {
    const auto& e = pages[i];
    if (e.chunk_size == heap::detail::multi_page) {
      ++run_pages;
      if (e.mask != 0u) {
        std::uint32_t counter = 0;
        acc::cuda_check(cudaMemcpy(&counter, l.page_data(i, ResetConfig::pagesize), 4, cudaMemcpyDeviceToHost), "census counter");
        out << "run at page " << i << " of " << e.mask << " pages (fill " << e.fill << ", counter " << counter << "); ";
      }
    } else if (e.chunk_size != 0u) {
      (e.fill == 0u ? split_empty : split_used) += 1;
    } else if (e.fill != 0u) {
      ++locked_free;
    }
  }
  out << "pages: " << run_pages << " in runs, " << split_empty << " split and empty, " << split_used
      << " split and used, " << locked_free << " unused with fill != 0";
  return out.str();
}

template <class Policy>
class GpuCoalescing : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!CudaRunner::available()) GTEST_SKIP() << "no CUDA device present: test skipped";
    table_ = std::make_unique<distribution::SuperblockTable<ReservePoolPolicies::CudaMalloc>>(std::uint64_t{1} << 23);
  }
  std::unique_ptr<distribution::SuperblockTable<ReservePoolPolicies::CudaMalloc>> table_;
};

using Policies = ::testing::Types<DP::NoOp, DP::XMallocSIMD<4096>, DP::DynamicWarp, DP::WarpHeader, DP::WarpNoHeader,
                                  DP::BlockHeader, DP::BlockNoHeader>;
TYPED_TEST_SUITE(GpuCoalescing, Policies);

TYPED_TEST(GpuCoalescing, FullOccupancyAllocWriteFree) {
  using Heap = GpuScatter<TypeParam>;
  Heap heap(CudaRunner::heap_bytes());
  const std::size_t slots_before = heap.getAvailableSlots(64);
  CudaRunner::Buffer<std::uint32_t> counters(3);
  CudaRunner::run(CudaRunner::many_workers(),
                  AllocWriteFree<TypeParam, typename Heap::Handle>{heap.handle(), 4, counters.data()});
  const auto c = counters.to_host();
  EXPECT_EQ(c[0], 0u) << "failed allocations";
  EXPECT_EQ(c[1], 0u) << "corrupt parts";
  EXPECT_EQ(c[2], 0u) << "misaligned parts";
  EXPECT_EQ(heap.creation().template statistics<acc::Cuda>().misuse_reports, 0u);
  EXPECT_EQ(heap.getAvailableSlots(64), slots_before)
      << "superblocks not returned: " << leak_census(heap, this->table_ ? &this->table_->view() : nullptr);
}

TYPED_TEST(GpuCoalescing, CrossLaneFrees) {
  using Heap = GpuScatter<TypeParam>;
  Heap heap(CudaRunner::heap_bytes());
  const std::size_t slots_before = heap.getAvailableSlots(64);
  CudaRunner::Buffer<std::uint32_t> counters(2);
  CudaRunner::run(CudaRunner::many_workers(), CrossLaneFree<TypeParam, typename Heap::Handle>{heap.handle(), counters.data()});
  const auto c = counters.to_host();
  EXPECT_EQ(c[0], 0u);
  EXPECT_EQ(c[1], 0u);
  EXPECT_EQ(heap.creation().template statistics<acc::Cuda>().misuse_reports, 0u);
  EXPECT_EQ(heap.getAvailableSlots(64), slots_before);
}

// [Eckert2014] 5.4: fill the heap from every thread, verify every chunk, free all;
// the heap is as free as before.
TYPED_TEST(GpuCoalescing, HeapOverlapTest) {
  using Heap = GpuScatter<TypeParam>;
  const std::size_t heap_bytes = std::min<std::size_t>(CudaRunner::heap_bytes(), std::size_t{128} << 20);
  Heap heap(heap_bytes);
  const std::size_t bytes = 48;
  const std::size_t slots_before = heap.getAvailableSlots(bytes);
  const std::uint32_t capacity = static_cast<std::uint32_t>(heap_bytes / bytes);
  CudaRunner::Buffer<Record> records(capacity);
  CudaRunner::Buffer<std::uint32_t> counters(3);  // count, overflow, corrupt
  std::uint32_t* c = counters.data();
  const std::uint32_t workers = std::min<std::uint32_t>(CudaRunner::many_workers(), 1u << 18);
  CudaRunner::run(workers, FillUntilFull<typename Heap::Handle>{heap.handle(), bytes, records.data(), capacity, c, c + 1});
  std::uint32_t count = counters.to_host()[0];
  count = std::min(count, capacity);
  EXPECT_GT(count, capacity / 4) << "the heap filled far too early";
  CudaRunner::run(count, VerifyRecords{records.data(), count, bytes, c + 2});
  EXPECT_EQ(counters.to_host()[2], 0u) << "overlapping chunks";
  CudaRunner::run(count, FreeRecords<typename Heap::Handle>{heap.handle(), records.data(), count});
  EXPECT_EQ(heap.creation().template statistics<acc::Cuda>().misuse_reports, 0u);
  EXPECT_EQ(heap.getAvailableSlots(bytes), slots_before);
}

// Any creation policy: CUDA's device malloc under the segment-header and
// header policies (fewer threads: device malloc is slow).
// CUDA's malloc heap size can be set only before the first kernel that uses
// it: one DeviceMalloc allocator for the process, handles for every policy.
GpuDeviceMalloc<DP::NoOp>& device_malloc_heap() {
  static GpuDeviceMalloc<DP::NoOp> heap(std::size_t{256} << 20);
  return heap;
}
template <class Policy>
void device_malloc_run() {
  if (!CudaRunner::available()) GTEST_SKIP() << "no CUDA device present: test skipped";
  using Heap = GpuDeviceMalloc<Policy>;
  const typename Heap::Handle handle(device_malloc_heap().creation());
  CudaRunner::Buffer<std::uint32_t> counters(3);
  CudaRunner::run(1u << 15, AllocWriteFree<Policy, typename Heap::Handle>{handle, 2, counters.data()});
  const auto c = counters.to_host();
  EXPECT_EQ(c[0], 0u);
  EXPECT_EQ(c[1], 0u);
  EXPECT_EQ(c[2], 0u);
}
TEST(GpuDeviceMallocCoalescing, DynamicWarp) { device_malloc_run<DP::DynamicWarp>(); }
TEST(GpuDeviceMallocCoalescing, XMallocSIMDStyleHeaderWarp) { device_malloc_run<DP::WarpHeader>(); }
TEST(GpuDeviceMallocCoalescing, BlockHeader) { device_malloc_run<DP::BlockHeader>(); }
TEST(GpuDeviceMallocCoalescing, BlockNoHeader) {
  if (!CudaRunner::available()) GTEST_SKIP() << "no CUDA device present: test skipped";
  distribution::SuperblockTable<ReservePoolPolicies::CudaMalloc> table(std::uint64_t{1} << 20);
  device_malloc_run<DP::BlockNoHeader>();
}

}  // namespace
}  // namespace manyalloc::heap::testing
