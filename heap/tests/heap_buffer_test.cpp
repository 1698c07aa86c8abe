// CreationPolicies::HeapBuffer ([Eckert2014] 2.4.4) on host threads: the fixed
// split per species, and the failure mode the thesis documents (a ring that
// runs empty is seen late and a live frame handed out again) provoked and
// shown to be refused and reported, never to overwrite a live frame.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <set>
#include <stdexcept>
#include <thread>
#include <vector>

#include "manyalloc/heap/heap.hpp"
#include "manyalloc_support/host_runner.hpp"

namespace manyalloc::heap::testing {
namespace {

struct SmallFrames : CreationPolicies::HeapBufferConfig {
  static constexpr std::uint32_t frame_bytes = 1024;
  static constexpr std::uint32_t species = 4;
};
using Creation = CreationPolicies::HeapBuffer<SmallFrames>;
using Heap = Allocator<Creation, DistributionPolicies::NoOp, OOMPolicies::ReturnNull, ReservePoolPolicies::HostPool,
                       AlignmentPolicies::Shrink<16>>;
using Backend = acc::HostThreads;

constexpr std::size_t heap_bytes = std::size_t{1} << 20;

Heap::Handle bound(const Heap& heap, std::uint32_t s) { return Heap::Handle(heap.creation().for_species(s)); }

// Writes the frame's owner into every word, so that a second owner shows.
void stamp(void* p, std::uint32_t owner) {
  auto* w = static_cast<std::uint32_t*>(p);
  for (std::uint32_t i = 0; i < SmallFrames::frame_bytes / 4; ++i) std::atomic_ref<std::uint32_t>(w[i]).store(owner);
}
bool stamped(const void* p, std::uint32_t owner) {
  auto* w = const_cast<std::uint32_t*>(static_cast<const std::uint32_t*>(p));
  for (std::uint32_t i = 0; i < SmallFrames::frame_bytes / 4; ++i) {
    if (std::atomic_ref<std::uint32_t>(w[i]).load() != owner) return false;
  }
  return true;
}

TEST(HeapBuffer, SplitsThePoolEquallyAmongSpecies) {
  Heap heap(heap_bytes);
  const Creation& c = heap.creation();
  const std::uint32_t frames = c.frames_per_species();
  ASSERT_GT(frames, 0u);
  // Metadata is 12 bytes per frame plus a few lines: almost the whole pool is frames.
  EXPECT_GE(std::size_t{frames} * SmallFrames::species * SmallFrames::frame_bytes, heap_bytes / 100 * 95);
  for (std::uint32_t s = 0; s < SmallFrames::species; ++s) EXPECT_EQ(c.free_frames<Backend>(s), frames);
  EXPECT_EQ(c.bound_species(), 0u);
  EXPECT_EQ(c.for_species(3).bound_species(), 3u);
  EXPECT_THROW((void)c.for_species(4), std::out_of_range);
  EXPECT_NE(Heap::info().find("HeapBuffer[frame_bytes=1024,species=4]"), std::string::npos);
  EXPECT_THROW(Heap(4096), std::invalid_argument) << "a pool without one frame per species is refused";
}

TEST(HeapBuffer, FramesAreDistinctAlignedAndInTheirSpeciesPart) {
  Heap heap(heap_bytes);
  const acc::HostThread acc;
  const std::uint32_t frames = heap.creation().frames_per_species();
  std::set<std::uintptr_t> seen;
  std::uintptr_t lo[SmallFrames::species], hi[SmallFrames::species];
  for (std::uint32_t s = 0; s < SmallFrames::species; ++s) {
    auto h = bound(heap, s);
    lo[s] = UINTPTR_MAX;
    hi[s] = 0;
    for (std::uint32_t i = 0; i < frames; ++i) {
      void* p = h.alloc(acc, 1 + i % SmallFrames::frame_bytes);
      ASSERT_NE(p, nullptr);
      const auto a = reinterpret_cast<std::uintptr_t>(p);
      EXPECT_EQ(a % Creation::frame_alignment, 0u);
      EXPECT_TRUE(seen.insert(a).second);
      lo[s] = std::min(lo[s], a);
      hi[s] = std::max(hi[s], a);
    }
    EXPECT_EQ(h.alloc(acc, 16), nullptr) << "species " << s << " has used its part";
  }
  for (std::uint32_t s = 1; s < SmallFrames::species; ++s) EXPECT_GT(lo[s], hi[s - 1]) << "parts do not overlap";
  EXPECT_EQ(heap.creation().reports<Backend>().empty, SmallFrames::species);
}

// The limit of the fixed split (2.4.4, Figure 5.6): one species cannot use
// the parts of the others, however empty they are.
TEST(HeapBuffer, OneSpeciesHoldsOnlyItsShare) {
  Heap heap(heap_bytes);
  const acc::HostThread acc;
  auto h = bound(heap, 2);
  std::uint32_t got = 0;
  while (h.alloc(acc, SmallFrames::frame_bytes) != nullptr) ++got;
  EXPECT_EQ(got, heap.creation().frames_per_species());
  for (std::uint32_t s : {0u, 1u, 3u}) EXPECT_EQ(heap.creation().free_frames<Backend>(s), got);
}

// Many workers at once drain a ring that cannot serve them all: exactly the
// frames of the part are handed out, each once; every other worker sees the
// empty ring itself (not only the next one, as in 2.4.4) and is counted.
TEST(HeapBuffer, ConcurrentExhaustionIsSeenByEveryWorker) {
  Heap heap(heap_bytes);
  const auto h = bound(heap, 1);
  const std::uint32_t frames = heap.creation().frames_per_species();
  const std::uint32_t workers = frames * 4;
  std::vector<void*> got(workers, nullptr);
  HostRunner::threads = 16;
  HostRunner::run(workers, [&](const acc::HostThread& acc, std::uint32_t w) {
    got[w] = h.alloc(acc, 64);
    if (got[w] != nullptr) stamp(got[w], w + 1);
  });
  std::set<void*> distinct;
  std::uint32_t ok = 0;
  for (std::uint32_t w = 0; w < workers; ++w) {
    if (got[w] == nullptr) continue;
    ++ok;
    EXPECT_TRUE(distinct.insert(got[w]).second);
    EXPECT_TRUE(stamped(got[w], w + 1)) << "frame of worker " << w << " was overwritten";
  }
  EXPECT_EQ(ok, frames);
  const auto r = heap.creation().reports<Backend>();
  EXPECT_EQ(r.empty, workers - frames);
  EXPECT_EQ(r.live_refused, 0u);
  EXPECT_EQ(heap.creation().free_frames<Backend>(1), 0u);
}

// The thesis's failure mode provoked over and over: more workers than frames
// allocate, stamp, check and free at the same time, so the ring runs empty
// and refills while frees are being written. Every frame a worker holds must
// still carry its stamp when it frees it; refusals are counted; at the end
// every frame is back.
struct TinyRing : SmallFrames {
  static constexpr std::uint32_t species = 1;
};

TEST(HeapBuffer, RingRunningEmptyUnderChurnNeverOverwritesALiveFrame) {
  using TinyHeap = Allocator<CreationPolicies::HeapBuffer<TinyRing>, DistributionPolicies::NoOp,
                             OOMPolicies::ReturnNull, ReservePoolPolicies::HostPool, AlignmentPolicies::Shrink<16>>;
  TinyHeap heap(64 * 1024 + 4096);
  const auto h = heap.handle();
  const std::uint32_t frames = heap.creation().frames_per_species();
  ASSERT_GE(frames, 8u);
  std::atomic<std::uint32_t> overwritten{0}, refused{0}, served{0};
  constexpr std::uint32_t rounds = 200;
  // Each worker holds a third of the frames per round, so that a few
  // workers in the middle of a round use up the ring.
  const std::uint32_t hold = frames / 3;
  const std::uint32_t workers = 48;
  HostRunner::threads = 24;
  HostRunner::run(workers, [&](const acc::HostThread& acc, std::uint32_t w) {
    std::vector<void*> mine;
    for (std::uint32_t r = 0; r < rounds; ++r) {
      const std::uint32_t owner = (w << 12) | (r + 1);
      for (std::uint32_t k = 0; k < hold; ++k) {
        void* p = h.alloc(acc, 1000);
        if (p == nullptr) {
          refused.fetch_add(1);
          continue;
        }
        served.fetch_add(1);
        stamp(p, owner);
        mine.push_back(p);
      }
      std::this_thread::yield();
      for (void* p : mine) {
        if (!stamped(p, owner)) overwritten.fetch_add(1);
        h.dealloc(acc, p);
      }
      mine.clear();
    }
  });
  EXPECT_EQ(overwritten.load(), 0u);
  EXPECT_GT(served.load(), 0u);
  const auto rep = heap.creation().template reports<Backend>();
  EXPECT_EQ(rep.empty, refused.load()) << "every refusal is an empty ring, and is counted";
  EXPECT_EQ(rep.live_refused, 0u);
  EXPECT_EQ(rep.misuse, 0u);
  EXPECT_EQ(heap.creation().template free_frames<Backend>(0), frames) << "every frame came back";
  // Workers holding a third of the ring each: it must have run empty.
  EXPECT_GT(refused.load(), 0u);
}

TEST(HeapBuffer, BadFreesAreReportedAndChangeNothing) {
  Heap heap(heap_bytes);
  const acc::HostThread acc;
  const auto h = bound(heap, 0);
  const std::uint32_t frames = heap.creation().frames_per_species();
  void* p = h.alloc(acc, 100);
  ASSERT_NE(p, nullptr);
  h.dealloc(acc, static_cast<std::byte*>(p) + 16);  // inside a frame
  int local = 0;
  h.dealloc(acc, &local);  // not in the heap
  EXPECT_EQ(heap.creation().reports<Backend>().misuse, 2u);
  EXPECT_EQ(heap.creation().free_frames<Backend>(0), frames - 1);
  h.dealloc(acc, p);
  h.dealloc(acc, p);  // double free
  const auto r = heap.creation().reports<Backend>();
  EXPECT_EQ(r.misuse, 3u);
  EXPECT_EQ(r.last_misuse, Misuse::double_free);
  EXPECT_EQ(heap.creation().free_frames<Backend>(0), frames) << "the frame went back once";
}

TEST(HeapBuffer, OversizeRequestsAreRefusedAndFreesFindTheirSpecies) {
  Heap heap(heap_bytes);
  const acc::HostThread acc;
  EXPECT_EQ(bound(heap, 0).alloc(acc, SmallFrames::frame_bytes + 1), nullptr);
  EXPECT_EQ(heap.creation().reports<Backend>().oversize, 1u);
  const std::uint32_t frames = heap.creation().frames_per_species();
  void* p = bound(heap, 3).alloc(acc, 8);
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(heap.creation().free_frames<Backend>(3), frames - 1);
  bound(heap, 0).dealloc(acc, p);  // freed through another species' handle
  EXPECT_EQ(heap.creation().free_frames<Backend>(3), frames);
  EXPECT_EQ(heap.creation().free_frames<Backend>(0), frames);
  heap.reset();
  EXPECT_EQ(heap.creation().reports<Backend>().oversize, 0u) << "reset rebuilds the metadata";
}

}  // namespace
}  // namespace manyalloc::heap::testing
