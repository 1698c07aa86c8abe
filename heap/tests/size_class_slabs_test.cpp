// CreationPolicies::SizeClassSlabs on the CPU: its size classes, its page
// pool, and its warp-combined fast path on emulated warps (the generic suite
// in generic/heap_typed_tests.hpp covers it on host threads and CUDA).
#include <gtest/gtest.h>

#include <algorithm>
#include <barrier>
#include <bit>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <random>
#include <set>
#include <type_traits>
#include <vector>

#include "generic/slabs_run_churn.hpp"
#include "generic/test_heaps.hpp"
#include "manyalloc_support/emulated_warp.hpp"
#include "manyalloc/heap/heap.hpp"
#include "manyalloc_support/host_runner.hpp"

namespace manyalloc::heap::testing {
namespace {

namespace slabs = heap::detail::slabs;

template <std::uint32_t PerDoubling>
void expect_smallest_holding_class() {
  using Classes = slabs::SizeClasses<PerDoubling>;
  for (std::uint32_t c = 0; c + 1 < Classes::all; ++c) EXPECT_LT(Classes::bytes(c), Classes::bytes(c + 1));
  EXPECT_EQ(Classes::bytes(0), 16u);
  EXPECT_EQ(Classes::bytes(Classes::all - 1), 32768u);
  for (std::uint32_t bytes = 1; bytes <= 32768; ++bytes) {
    const std::uint32_t c = Classes::of(bytes);
    ASSERT_LT(c, Classes::all) << bytes;
    ASSERT_GE(Classes::bytes(c), bytes) << bytes;
    if (c > 0) ASSERT_LT(Classes::bytes(c - 1), bytes) << bytes;
    // Above the first classes, padding is less than 1/PerDoubling of the request.
    if (bytes > 16 * PerDoubling) ASSERT_LT(Classes::bytes(c), bytes + bytes / PerDoubling) << bytes;
  }
}

TEST(SlabSizeClasses, EveryRequestGetsTheSmallestClassThatHoldsIt) {
  expect_smallest_holding_class<2>();
  expect_smallest_holding_class<4>();
  expect_smallest_holding_class<16>();
  expect_smallest_holding_class<32>();
}

template <std::uint32_t PerDoubling>
void expect_aligned_classes() {
  using Classes = slabs::SizeClasses<PerDoubling>;
  for (std::uint32_t align = 16; align <= 32768; align *= 2) {
    for (std::uint32_t bytes = align; bytes <= 32768; bytes += align)
      ASSERT_EQ(Classes::bytes(Classes::of(bytes)) % align, 0u) << bytes << " aligned to " << align;
  }
}

TEST(SlabSizeClasses, AlignedRequestsLandInAlignedClasses) {
  expect_aligned_classes<2>();
  expect_aligned_classes<16>();
  expect_aligned_classes<32>();
  // Two per doubling: 16 32 48 64 96 128 ... 24576 32768.
  EXPECT_EQ(slabs::SizeClasses<2>::count(65536), 22u);
  EXPECT_EQ(slabs::SizeClasses<2>::bytes(4), 96u);
  EXPECT_EQ(slabs::SizeClasses<2>::count(4096), 14u);  // up to 2 KiB: two chunks per page
  EXPECT_EQ(slabs::SizeClasses<16>::count(65536), 128u);
  EXPECT_EQ(slabs::SizeClasses<16>::bytes(16), 272u);
  EXPECT_EQ(slabs::SizeClasses<32>::count(65536), 224u);
}

// A bare page pool of `pages` pages over host memory.
struct PoolFixture {
  explicit PoolFixture(std::uint32_t pages) {
    const std::uint32_t words = (pages + 31) / 32;
    taken.assign(words, 0);
    busy.assign((words + 31) / 32, 0);
    full.assign((words + 31) / 32, 0);
    h.shared = &shared;
    h.taken = taken.data();
    h.busy = busy.data();
    h.full = full.data();
    h.page_count = pages;
    h.words = words;
    h.small_words = words;  // no large-request zone (P4): these tests place runs themselves
  }
  std::uint32_t claim(std::uint64_t k, std::uint32_t start = 0, std::uint32_t place = 0) {
    return k <= 32 ? slabs::PagePool::claim_in_word(acc, h, static_cast<std::uint32_t>(k), start, place)
                   : slabs::PagePool::claim_words(acc, h, k);
  }
  // Hints agree with the bitmap once nothing is in flight.
  void expect_hints_exact() const {
    for (std::uint32_t w = 0; w < h.words; ++w) {
      const std::uint32_t valid = slabs::PagePool::valid_bits(w, h.page_count);
      EXPECT_EQ((busy[w / 32] >> (w % 32)) & 1u, taken[w] != 0u ? 1u : 0u) << "busy hint of word " << w;
      EXPECT_EQ((full[w / 32] >> (w % 32)) & 1u, (taken[w] & valid) == valid ? 1u : 0u) << "full hint of word " << w;
    }
  }
  acc::HostThread acc;
  slabs::SlabShared shared{};
  std::vector<std::uint32_t> taken, busy, full;
  slabs::SlabLayout h;
};

TEST(SlabPagePool, RunsInsideWordsAndAcrossWords) {
  PoolFixture f(1000);  // 31 full words and a partial one of 8 pages
  EXPECT_EQ(f.claim(32 * 31 + 9), slabs::no_page) << "more than the usable pages";
  const std::uint32_t a = f.claim(5);
  ASSERT_NE(a, slabs::no_page);
  const std::uint32_t b = f.claim(100);  // four whole words, tail of 28 pages given back
  ASSERT_NE(b, slabs::no_page);
  EXPECT_EQ(b % 32, 0u);
  EXPECT_EQ(slabs::PagePool::taken_pages(f.acc, f.h), 105u);
  f.expect_hints_exact();
  // The partial last word: a run of 8 fits, 9 does not.
  EXPECT_EQ(f.claim(8, 31), 31u * 32u);
  slabs::PagePool::release(f.acc, f.h, 31u * 32u, 8);
  // Fragment: take every other page of words 10..29, then ask for a long run.
  for (std::uint32_t p = 320; p < 960; p += 2) {
    f.taken[p / 32] |= 1u << (p % 32);
  }
  f.shared.taken[0].value += 320;
  for (std::uint32_t w = 10; w < 30; ++w) {
    f.busy[w / 32] |= 1u << (w % 32);
  }
  const std::uint32_t c = f.claim(64);
  EXPECT_NE(c, slabs::no_page);
  EXPECT_TRUE(c < 320 || c >= 960) << c;
  EXPECT_EQ(f.claim(32 * 20), slabs::no_page) << "no 20 free words in a row are left";
  slabs::PagePool::release(f.acc, f.h, a, 5);
  slabs::PagePool::release(f.acc, f.h, b, 100);
  slabs::PagePool::release(f.acc, f.h, c, 64);
  EXPECT_EQ(slabs::PagePool::taken_pages(f.acc, f.h), 320u);
}

TEST(SlabPagePool, StaleFullHintDoesNotHidePages) {
  PoolFixture f(64);
  // Every word claims to be full, yet all pages are free: the final pass
  // without hints must still find them.
  f.full[0] = 0x3u;
  const std::uint32_t p = f.claim(4);
  ASSERT_NE(p, slabs::no_page);
  slabs::PagePool::release(f.acc, f.h, p, 4);
  EXPECT_EQ(slabs::PagePool::taken_pages(f.acc, f.h), 0u);
}

// A run of whole words is taken several CAS at a time, from the top of the
// pool down (P4); a word taken behind its hint (a claim in flight) makes the
// batch give back what it took, and the search goes on below that word.
// Runs that span hint words set both.
TEST(SlabPagePool, WholeWordRunGivesBackABatchThatHitATakenWord) {
  PoolFixture f(96 * 32);  // 96 words, three hint words
  f.taken[90] = 1u;        // taken, but its busy hint is still clear
  f.shared.taken[0].value += 1;
  const std::uint32_t p = f.claim(40 * 32 - 7);  // words 50-89, 7 pages of the last given back
  ASSERT_EQ(p, 50u * 32u);
  for (std::uint32_t w = 91; w < 96; ++w) EXPECT_EQ(f.taken[w], 0u) << "word " << w << " not given back";
  for (std::uint32_t w = 0; w < 50; ++w) EXPECT_EQ(f.taken[w], 0u) << "word " << w;
  for (std::uint32_t w = 50; w < 89; ++w) EXPECT_EQ(f.taken[w], 0xffffffffu) << "word " << w;
  EXPECT_EQ(f.taken[89], 0x01ffffffu) << "the tail of the last word goes back";
  EXPECT_EQ(slabs::PagePool::taken_pages(f.acc, f.h), 40u * 32u - 7u + 1u);
  f.busy[90 / 32] |= 1u << (90 % 32);  // the claim in flight ends
  f.expect_hints_exact();
  slabs::PagePool::release(f.acc, f.h, p, 40 * 32 - 7);
  EXPECT_EQ(f.claim(91 * 32), slabs::no_page) << "word 90 splits the pool into runs of 90 and 5 words";
  EXPECT_EQ(f.claim(90 * 32), 0u);
}

// P4: runs of whole words come from the top of the pool, and a run longer
// than one batch of CAS (32 words) that meets a word taken behind its hint
// in its third batch gives back the two batches before it too.
TEST(SlabPagePool, WholeWordRunsComeFromTheTopAndGiveBackEveryBatch) {
  PoolFixture f(256 * 32);  // 256 words, eight hint words
  const std::uint32_t a = f.claim(32 * 32);
  EXPECT_EQ(a, 224u * 32u) << "the highest 32 words";
  f.taken[200] = 1u;  // taken behind its hint, in the third batch (188-219) of the 100-word run of words 124-223
  f.shared.taken[0].value += 1;
  const std::uint32_t b = f.claim(100 * 32);
  ASSERT_NE(b, slabs::no_page);
  EXPECT_EQ(b, 100u * 32u) << "the highest run below word 200";
  for (std::uint32_t w = 201; w < 224; ++w) EXPECT_EQ(f.taken[w], 0u) << "word " << w << " not given back";
  for (std::uint32_t w = 100; w < 200; ++w) EXPECT_EQ(f.taken[w], 0xffffffffu) << "word " << w;
  EXPECT_EQ(slabs::PagePool::taken_pages(f.acc, f.h), 132u * 32u + 1u);
  f.busy[200 / 32] |= 1u << (200 % 32);
  f.expect_hints_exact();
}

// A host thread that always claims from shard 0 (a plain HostThread's shard
// follows the CPU it runs on, which the scheduler may change between calls).
struct ShardZero : acc::HostThread {
  unsigned processor_id() const { return 0; }
};

// Counts the loads of the words in [words_begin, words_end), to bound what a
// search reads: words of the page bitmap (Word = std::uint32_t) or class
// slots (Word = std::uint64_t). Claims from shard 0.
template <class Word>
struct ReadCounter : ShardZero {
  const Word* words_begin = nullptr;
  const Word* words_end = nullptr;
  mutable std::size_t reads = 0;
  std::uint32_t load(const std::uint32_t* p) const {
    if constexpr (std::is_same_v<Word, std::uint32_t>) count(p);
    return acc::HostThread::load(p);
  }
  std::uint64_t load64(const std::uint64_t* p) const {
    if constexpr (std::is_same_v<Word, std::uint64_t>) count(p);
    return acc::HostThread::load64(p);
  }

 private:
  void count(const Word* p) const {
    if (p >= words_begin && p < words_end) ++reads;
  }
};
using BitmapReadCounter = ReadCounter<std::uint32_t>;

// The page a pointer into the heap's data lies in.
std::uint32_t page_of(const slabs::SlabLayout& h, const void* p) {
  return static_cast<std::uint32_t>((static_cast<const std::byte*>(p) - h.data) >> h.slab_shift);
}

// Sets the pages of `mask` in word w taken, keeping counters and hints exact.
void take_bits(const slabs::SlabLayout& h, std::uint32_t w, std::uint32_t mask) {
  h.taken[w] |= mask;
  h.shared->taken[0].value += bits::popcount(mask);
  const std::uint32_t valid = slabs::PagePool::valid_bits(w, h.page_count);
  if (h.taken[w] != 0u) h.busy[w / 32] |= 1u << (w % 32);
  if ((h.taken[w] & valid) == valid) h.full[w / 32] |= 1u << (w % 32);
}

// Runs of whole words against a reference search: in pools whose word
// count is no multiple of 32 (a partial top hint word), with exact hints,
// a claim takes the highest run of free words long enough, or fails only
// when there is none; hints and counters stay exact.
TEST(SlabPagePool, WholeWordRunsMatchAReferenceSearch) {
  std::uint32_t x = 2463534242u;
  const auto next = [&x] {
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    return x;
  };
  for (int round = 0; round < 1000; ++round) {
    const std::uint32_t words = 2 + next() % 150;
    PoolFixture f(words * 32);
    const std::uint32_t one_in = 1 + next() % 8;  // a taken page in one word of `one_in`
    for (std::uint32_t w = 0; w < words; ++w) {
      if (next() % one_in == 0) take_bits(f.h, w, 1u << (next() % 32));
    }
    const std::uint32_t need = 2 + next() % 40;
    std::uint32_t expect = slabs::no_page;  // first word of the highest free run of `need` words
    for (std::uint32_t top = words, run = 0; top > 0; --top) {
      run = f.taken[top - 1] == 0u ? run + 1 : 0;
      if (run == need) {
        expect = top - 1;
        break;
      }
    }
    const std::uint32_t before = slabs::PagePool::taken_pages(f.acc, f.h);
    const std::uint32_t got = f.claim(std::uint64_t{need} * 32);
    if (expect == slabs::no_page) {
      EXPECT_EQ(got, slabs::no_page) << "round " << round;
      EXPECT_EQ(slabs::PagePool::taken_pages(f.acc, f.h), before);
    } else {
      EXPECT_EQ(got, expect * 32) << "round " << round << ", " << words << " words, " << need << " needed";
      EXPECT_EQ(slabs::PagePool::taken_pages(f.acc, f.h), before + need * 32);
    }
    f.expect_hints_exact();
  }
}

// Runs of whole words trust the `busy` hints: a hint set on a free word (as
// while a claim or release of it is in flight) hides that word until the
// operation corrects it, and a search that finds no run reads no word of
// the bitmap, only each hint word once (it used to read every word in a
// final pass).
TEST(SlabPagePool, AWholeWordSearchReadsOnlyTheHints) {
  PoolFixture f(64);
  f.busy[0] = 0x2u;  // word 1 free, its hint set by an operation in flight
  EXPECT_EQ(f.claim(33), slabs::no_page) << "the only free run of two words holds word 1";
  f.busy[0] = 0u;  // the operation ends and corrects the hint
  EXPECT_EQ(f.claim(33), 0u);
  f.expect_hints_exact();

  // 8192 words (a 16 GiB pool of 64 KiB pages), one taken page in every
  // 30th word, as slot segments spread below the large-request zone leave
  // them: 29 free words at most in a row.
  PoolFixture g(8192 * 32);
  for (std::uint32_t w = 0; w < 8192; w += 30) take_bits(g.h, w, 1u << 7);
  ReadCounter<std::uint32_t> taken_reads, hint_reads;
  taken_reads.words_begin = g.taken.data();
  taken_reads.words_end = g.taken.data() + g.taken.size();
  EXPECT_EQ(slabs::PagePool::claim_words(taken_reads, g.h, 512u * 32u), slabs::no_page) << "1 GiB";
  EXPECT_EQ(taken_reads.reads, 0u) << "words of the bitmap read by a search that found no run";
  hint_reads.words_begin = g.busy.data();
  hint_reads.words_end = g.busy.data() + g.busy.size();
  EXPECT_EQ(slabs::PagePool::claim_words(hint_reads, g.h, 512u * 32u), slabs::no_page);
  EXPECT_LE(hint_reads.reads, g.busy.size()) << "each hint word is read once";
  EXPECT_EQ(slabs::PagePool::claim_words(taken_reads, g.h, 29u * 32u), 8161u * 32u)
      << "the highest run of 29 free words (8161-8189) is still found";
  g.expect_hints_exact();
}

// Host threads churn chunks up to 4 MiB (runs of two whole words) in a
// 64 MiB pool: nothing corrupted or lost (generic/slabs_run_churn.hpp).
TEST(SlabPagePool, ChurnOfWholeWordRunsLosesNothing) {
  expect_whole_word_run_churn_loses_nothing<HostRunner>(std::size_t{64} << 20, 64, 400, 22);
}

// The first try of a run of at most 32 pages is blind: an OR at the place
// its hash names, with no read of the word before it. Where that place is
// free it is taken without a read; where it is not, the bits the OR set are
// given back and the word's lowest free run is taken; the OR never sets
// bits past the usable pages (P3). Counters and hints stay exact.
TEST(SlabPagePool, FirstTryInTheStartWordIsABlindOrAtTheHashedPlace) {
  PoolFixture f(100 * 32 + 6);  // 100 full words and a last word of 6 pages
  BitmapReadCounter counter;
  counter.words_begin = f.taken.data();
  counter.words_end = f.taken.data() + f.taken.size();
  // Places of a 4-page run: 8 in a word, place p at bit 4 * p (hash 10 -> 10 % 8 = 2).
  EXPECT_EQ(slabs::PagePool::claim_in_word(counter, f.h, 4u, 3u, 10u), 3u * 32u + 8u);
  EXPECT_EQ(counter.reads, 0u) << "a free place is taken without reading the word";
  EXPECT_EQ(f.taken[3], 0xf00u);
  // The same place again: taken (the OR sets no bit), so the claim reads the
  // word once and takes its lowest free run.
  EXPECT_EQ(slabs::PagePool::claim_in_word(counter, f.h, 4u, 3u, 2u), 3u * 32u);
  EXPECT_EQ(counter.reads, 1u) << "a miss reads the word once";
  EXPECT_EQ(f.taken[3], 0xf0fu) << "the lowest free run taken, nothing else";
  // A place that overlaps a taken page: the OR's other bits go back too.
  take_bits(f.h, 3, 1u << 17);  // place 4 (bits 16..19) is partly taken
  EXPECT_EQ(slabs::PagePool::claim_in_word(counter, f.h, 4u, 3u, 4u), 3u * 32u + 4u);
  EXPECT_EQ(f.taken[3], 0x20fffu) << "the pages the blind OR set beside page 17 are given back";
  // The last word has 6 usable pages: a place past them is never ORed; the
  // claim finds the run by reading the word (P3).
  EXPECT_EQ(slabs::PagePool::claim_in_word(counter, f.h, 4u, 100u, 7u), 100u * 32u);
  EXPECT_EQ(f.taken[100], 0xfu) << "no bit past the usable pages was set";
  EXPECT_EQ(slabs::PagePool::taken_pages(f.acc, f.h), 17u);
  f.expect_hints_exact();
}

// A run of 17..32 pages needs an empty word: the busy hints find one,
// reading one hint word per 32 bitmap words, not every word before it.
TEST(SlabPagePool, LongRunsAreFoundThroughTheBusyHints) {
  PoolFixture f(1024 * 32);  // 1024 words, 32 hint words
  for (std::uint32_t w = 0; w < 1024; ++w) take_bits(f.h, w, w == 1000u ? 0u : 1u);
  BitmapReadCounter counter;
  counter.words_begin = f.taken.data();
  counter.words_end = f.taken.data() + f.taken.size();
  EXPECT_EQ(slabs::PagePool::claim_in_word(counter, f.h, 32u, 3u, 0u), 1000u * 32u);
  EXPECT_LE(counter.reads, 8u) << "words of the bitmap read to find the only empty word";
  EXPECT_EQ(slabs::PagePool::claim_in_word(counter, f.h, 32u, 3u, 0u), slabs::no_page) << "no empty word is left";
  EXPECT_EQ(slabs::PagePool::claim_in_word(counter, f.h, 31u, 3u, 0u), 3u * 32u + 1u) << "shorter runs fit beside taken pages";
  f.expect_hints_exact();
}

// With a large-request zone (P4: the top 256 of 1024 words), a long run
// looks for an empty word below the zone first, from its start word on,
// and takes a word of the zone only when none below is empty; both
// searches go through the `busy` hints, not word by word.
TEST(SlabPagePool, LongRunsPreferEmptyWordsBelowTheZoneAndFindTheZoneThroughTheHints) {
  PoolFixture f(1024 * 32);
  f.h.small_words = 768;
  for (std::uint32_t w = 0; w < 768; ++w) take_bits(f.h, w, w == 5u ? 0u : 1u);
  BitmapReadCounter counter;
  counter.words_begin = f.taken.data();
  counter.words_end = f.taken.data() + f.taken.size();
  EXPECT_EQ(slabs::PagePool::claim_in_word(counter, f.h, 32u, 767u, 0u), 5u * 32u)
      << "the empty word below the zone, though the zone's words follow the start word";
  EXPECT_LE(counter.reads, 8u) << "words of the bitmap read to find it";
  counter.reads = 0;
  EXPECT_EQ(slabs::PagePool::claim_in_word(counter, f.h, 32u, 767u, 0u), 768u * 32u) << "then the zone's lowest word";
  EXPECT_LE(counter.reads, 8u) << "words of the bitmap read to find the zone once every word below it is busy";
  f.expect_hints_exact();
}

using EmulatedHeap = SlabsHeap<HostRunner>;

// Lanes of emulated warps ask for sizes of a few classes at once (several
// lanes per class, classes interleaved), so that the leader election, the
// extents and the hand-over run as on a GPU warp.
TEST(SlabWarpPath, EmulatedWarpsGetDisjointChunks) {
  EmulatedHeap heap(std::size_t{32} << 20);
  const std::size_t fresh64 = heap.getAvailableSlots(64);
  const unsigned blocks = 2, threads = 96;  // three warps per block, the last one full
  std::vector<void*> ptrs(blocks * threads);
  std::vector<std::size_t> sizes(blocks * threads);
  for (unsigned i = 0; i < sizes.size(); ++i) {
    const std::size_t pick[] = {16, 64, 100, 4096, 8192, 40000, 24, 2000};
    sizes[i] = pick[(i * 7 + i / 5) % 8];
  }
  acc::EmulatedGrid grid;
  const auto handle = heap.handle();
  grid.run(blocks, threads, [&](const acc::EmulatedThread& a, unsigned t) {
    ptrs[t] = handle.alloc(a, sizes[t]);
    if (ptrs[t] != nullptr) std::memset(ptrs[t], static_cast<int>(t & 0xff), sizes[t]);
  });
  std::vector<std::pair<std::uintptr_t, std::size_t>> spans;
  for (unsigned t = 0; t < ptrs.size(); ++t) {
    ASSERT_NE(ptrs[t], nullptr) << "worker " << t << " size " << sizes[t];
    const auto* b = static_cast<const unsigned char*>(ptrs[t]);
    EXPECT_TRUE(b[0] == (t & 0xff) && b[sizes[t] - 1] == (t & 0xff)) << "chunk of worker " << t << " overwritten";
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(ptrs[t]) % 16, 0u);
    spans.emplace_back(reinterpret_cast<std::uintptr_t>(ptrs[t]), sizes[t]);
  }
  std::sort(spans.begin(), spans.end());
  for (std::size_t i = 1; i < spans.size(); ++i)
    EXPECT_LE(spans[i - 1].first + spans[i - 1].second, spans[i].first) << "overlap";
  // Lanes of partial groups (every third lane) free, then the rest.
  grid.run(blocks, threads, [&](const acc::EmulatedThread& a, unsigned t) { handle.dealloc(a, ptrs[t]); });
  EXPECT_EQ(heap.creation().statistics<acc::HostThreads>().misuse_reports, 0u);
  EXPECT_EQ(heap.getAvailableSlots(64), fresh64) << "memory lost";
}

// A class of at most entry_chunks chunks per page (1 KiB: 64) keeps its
// chunk bits in the page's entry, beside the count that a free updates, so
// a free touches one sector of metadata; the page's chunk bitmap stays zero.
TEST(SlabWarpPath, PagesOfAFewDozenChunksKeepTheirBitsInTheEntry) {
  EmulatedHeap heap(std::size_t{16} << 20);
  const std::size_t fresh = heap.getAvailableSlots(1024);
  acc::EmulatedGrid grid;
  const auto handle = heap.handle();
  std::vector<void*> ptrs(64);
  grid.run(1, 64, [&](const acc::EmulatedThread& a, unsigned t) { ptrs[t] = handle.alloc(a, 1024); });
  const auto& l = heap.creation().layout();
  ASSERT_LE(65536u / 1024u, slabs::entry_chunks);
  const std::uint32_t page = page_of(l, ptrs[0]);
  std::uint32_t in_page = 0;
  for (void* p : ptrs) {
    ASSERT_NE(p, nullptr);
    if (page_of(l, p) != page) continue;
    ++in_page;
    const auto index = static_cast<std::uint32_t>((static_cast<std::byte*>(p) - l.page_data(page)) / 1024);
    EXPECT_NE(l.pages[page].bits[index / 32] & (1u << (index % 32)), 0u) << "chunk " << index;
  }
  EXPECT_EQ(bits::popcount(l.pages[page].bits[0]) + bits::popcount(l.pages[page].bits[1]), in_page);
  for (std::uint32_t w = 0; w < l.bitmap_words; ++w) EXPECT_EQ(l.bits_of(page)[w], 0u) << "chunk bitmap word " << w;
  grid.run(1, 64, [&](const acc::EmulatedThread& a, unsigned t) { handle.dealloc(a, ptrs[t]); });
  EXPECT_EQ(l.pages[page].bits[0] | l.pages[page].bits[1], 0u);
  EXPECT_EQ(heap.creation().statistics<acc::HostThreads>().misuse_reports, 0u);
  EXPECT_EQ(heap.getAvailableSlots(1024), fresh) << "memory lost";
}

// RelaxedFreesConfig frees without the release (Config::ordered_frees); its
// count updates still return every emptied page.
TEST(SlabWarpPath, RelaxedFreesReturnEveryPage) {
  static_assert(!CreationPolicies::RelaxedFreesConfig::ordered_frees && CreationPolicies::SizeClassSlabsConfig::ordered_frees);
  SlabsHeap<HostRunner, CreationPolicies::RelaxedFreesConfig> heap(std::size_t{32} << 20);
  const std::size_t fresh = heap.getAvailableSlots(64);
  acc::EmulatedGrid grid;
  const auto handle = heap.handle();
  const unsigned blocks = 2, threads = 96;
  std::vector<void*> ptrs(blocks * threads);
  const std::size_t pick[] = {16, 64, 1000, 4096, 8192, 40000};
  grid.run(blocks, threads, [&](const acc::EmulatedThread& a, unsigned t) { ptrs[t] = handle.alloc(a, pick[t % 6]); });
  for (void* p : ptrs) ASSERT_NE(p, nullptr);
  grid.run(blocks, threads, [&](const acc::EmulatedThread& a, unsigned t) { handle.dealloc(a, ptrs[t]); });
  grid.run(1, 32, [&](const acc::EmulatedThread& a, unsigned) { handle.dealloc(a, ptrs[0]); });
  const auto st = heap.creation().statistics<acc::HostThreads>();
  EXPECT_EQ(st.misuse_reports, 32u) << "every lane freed a chunk already freed";
  EXPECT_EQ(heap.getAvailableSlots(64), fresh) << "memory lost";
  EXPECT_EQ(heap.creation().statistics<acc::HostThreads>().pages_in_use, 0u);
}

TEST(SlabWarpPath, DivergentSubsetsAllocateApart) {
  EmulatedHeap heap(std::size_t{16} << 20);
  std::vector<void*> ptrs(64);
  acc::EmulatedGrid grid;
  const auto handle = heap.handle();
  grid.run(1, 64, [&](const acc::EmulatedThread& a, unsigned t) {
    // Two subsets of each warp call alloc from different places.
    const std::uint32_t low = 0x0000ffffu;
    const acc::EmulatedThread b = a.diverge(a.lane_id() < 16 ? low : ~low);
    ptrs[t] = handle.alloc(b, a.lane_id() < 16 ? 48 : 48 + 64 * (t % 3));
  });
  std::vector<void*> sorted = ptrs;
  std::sort(sorted.begin(), sorted.end());
  EXPECT_EQ(std::adjacent_find(sorted.begin(), sorted.end()), sorted.end()) << "a chunk handed out twice";
  for (void* p : ptrs) EXPECT_NE(p, nullptr);
  grid.run(1, 64, [&](const acc::EmulatedThread& a, unsigned t) { handle.dealloc(a, ptrs[t]); });
  EXPECT_EQ(heap.creation().statistics<acc::HostThreads>().misuse_reports, 0u);
}

// One emulated warp allocates a 32-byte chunk per lane.
template <class Handle>
std::vector<void*> one_warp_of_32_byte_chunks(acc::EmulatedGrid& grid, const Handle& handle) {
  std::vector<void*> ptrs(32);
  grid.run(1, 32, [&](const acc::EmulatedThread& a, unsigned t) { ptrs[t] = handle.alloc(a, 32); });
  return ptrs;
}

// Frees of one page are combined per warp; a chunk freed by two lanes of
// the same warp is one free and one reported double free.
TEST(SlabWarpPath, DoubleFreeInsideOneWarpIsReportedOnce) {
  EmulatedHeap heap(std::size_t{16} << 20);
  const std::size_t fresh = heap.getAvailableSlots(32);
  acc::EmulatedGrid grid;
  const auto handle = heap.handle();
  const std::vector<void*> ptrs = one_warp_of_32_byte_chunks(grid, handle);
  for (void* p : ptrs) ASSERT_NE(p, nullptr);
  grid.run(1, 32, [&](const acc::EmulatedThread& a, unsigned t) { handle.dealloc(a, ptrs[t == 1 ? 0 : t]); });
  const auto st = heap.creation().statistics<acc::HostThreads>();
  EXPECT_EQ(st.misuse_reports, 1u);
  EXPECT_EQ(st.last_misuse, Misuse::double_free);
  acc::HostThread host;
  handle.dealloc(host, ptrs[1]);
  EXPECT_EQ(heap.getAvailableSlots(32), fresh) << "the page must go back once its last chunk is freed";
  EXPECT_EQ(heap.creation().statistics<acc::HostThreads>().pages_in_use, 0u);
}

// The lanes freeing chunks of one bitmap word clear their bits with one
// atomic of their leader: a chunk among them that was already free is
// reported once (by the leader, with the chunk's address), the others are
// freed, and the page still goes back to the pool.
TEST(SlabWarpPath, StaleChunkInACombinedFreeIsReportedAndNothingIsLost) {
  EmulatedHeap heap(std::size_t{16} << 20);
  const std::size_t fresh = heap.getAvailableSlots(32);
  acc::EmulatedGrid grid;
  const auto handle = heap.handle();
  const std::vector<void*> ptrs = one_warp_of_32_byte_chunks(grid, handle);
  for (void* p : ptrs) ASSERT_NE(p, nullptr);
  acc::HostThread host;
  handle.dealloc(host, ptrs[5]);
  EXPECT_EQ(heap.creation().statistics<acc::HostThreads>().misuse_reports, 0u);
  grid.run(1, 32, [&](const acc::EmulatedThread& a, unsigned t) { handle.dealloc(a, ptrs[t]); });
  const auto st = heap.creation().statistics<acc::HostThreads>();
  EXPECT_EQ(st.misuse_reports, 1u);
  EXPECT_EQ(st.last_misuse, Misuse::double_free);
  EXPECT_EQ(heap.getAvailableSlots(32), fresh) << "memory lost";
  EXPECT_EQ(heap.creation().statistics<acc::HostThreads>().pages_in_use, 0u);
}

// A warp's 32 requests of 8 KiB take four pages whole as one slab (S2): its
// first page's state holds a bit for each of the 32 chunks (the slab's
// count and chunk bits in one word), the others name their distance from it. A chunk on a later page freed twice is
// reported, and the warp's free returns all four pages.
TEST(SlabWarpPath, AWarpOfLargeChunksTakesOneSlabOfSeveralPages) {
  EmulatedHeap heap(std::size_t{16} << 20);
  const std::size_t fresh = heap.getAvailableSlots(8192);
  acc::EmulatedGrid grid;
  const auto handle = heap.handle();
  std::vector<void*> ptrs(32);
  grid.run(1, 32, [&](const acc::EmulatedThread& a, unsigned t) { ptrs[t] = handle.alloc(a, 8192); });
  const auto& l = heap.creation().layout();
  for (void* p : ptrs) ASSERT_NE(p, nullptr);
  const std::uint32_t first = page_of(l, ptrs[0]);
  for (unsigned t = 0; t < 32; ++t)
    ASSERT_EQ(static_cast<std::byte*>(ptrs[t]), l.page_data(first) + std::size_t{t} * 8192) << "lane " << t;
  EXPECT_EQ(l.pages[first].run, 4u);
  for (std::uint32_t p = 0; p < 4; ++p) EXPECT_EQ(l.pages[first + p].lead, p) << "page " << p << " of the slab";
  EXPECT_EQ(l.pages[first].used, 0xffffffffu) << "the state holds the bits of all 32 chunks";
  EXPECT_EQ(l.pages[first + 2].used, 0u);
  acc::HostThread host;
  handle.dealloc(host, ptrs[20]);
  EXPECT_EQ(heap.creation().statistics<acc::HostThreads>().misuse_reports, 0u);
  EXPECT_EQ(l.pages[first].used, ~(1u << 20));
  grid.run(1, 32, [&](const acc::EmulatedThread& a, unsigned t) { handle.dealloc(a, ptrs[t]); });
  const auto st = heap.creation().statistics<acc::HostThreads>();
  EXPECT_EQ(st.misuse_reports, 1u) << "the chunk on the slab's third page was freed twice";
  EXPECT_EQ(st.last_misuse, Misuse::double_free);
  EXPECT_EQ(st.pages_in_use, 0u);
  EXPECT_EQ(heap.getAvailableSlots(8192), fresh) << "memory lost";
}

// A class's first request opens a segment of 32 pages. When the slot's
// hashed word is full and every other word has one page taken, no word has
// room for the segment: the refill settles for a single page after reading
// a few words, instead of searching the whole bitmap once per segment
// length (a fresh heap's first launch of many classes spent milliseconds so).
TEST(SlabRefill, AFragmentedPoolCostsARefillFewBitmapReads) {
  EmulatedHeap heap(std::size_t{256} << 20);
  const auto& h = heap.creation().layout();
  using Slots = slabs::ClassSlots<CreationPolicies::SizeClassSlabsConfig>;
  const std::uint32_t cls = Slots::Classes::of(4096);
  ASSERT_EQ(slabs::segment_log_pages(Slots::per_page(cls), CreationPolicies::SizeClassSlabsConfig::segment_chunks), 5u);
  ASSERT_GE(h.open_budget, 32u);
  ASSERT_GT(h.words, 100u);
  const std::uint32_t hashed = Slots::hash_start(h, cls * 977u, 0u) % h.words;
  for (std::uint32_t w = 0; w < h.words; ++w) take_bits(h, w, w == hashed ? 0xffffffffu : 1u);
  BitmapReadCounter counter;
  counter.words_begin = h.taken;
  counter.words_end = h.taken + h.words;
  void* p = heap.handle().alloc(counter, 4096);
  ASSERT_NE(p, nullptr);
  EXPECT_LE(counter.reads, 16u) << "words of the bitmap read by one refill";
  const std::uint32_t page = page_of(h, p);
  EXPECT_EQ(page % 32u, 1u) << "the segment is the first free page of a word";
  EXPECT_EQ(heap.creation().statistics<acc::HostThreads>().open_pages, 1u);
  heap.handle().dealloc(counter, p);
  EXPECT_EQ(heap.creation().statistics<acc::HostThreads>().misuse_reports, 0u);
}

// C4's demand-sized segments (FineSizeClassesConfig; here with the default's
// classes, so that 1 KiB is a class of 64 chunks per page): a slot's first
// segment on a fresh heap is one page for one request, and each refill by
// one worker, with nobody else waiting, doubles it up to the full segment
// (32 pages). The default configuration opens the full segment at once.
struct DemandSizedConfig : CreationPolicies::SizeClassSlabsConfig {
  static constexpr bool demand_sized_segments = true;
};


template <class Config>
std::vector<std::uint32_t> open_pages_after_each_refill_of_1kib(std::vector<void*>& ptrs, int requests,
                                                               SlabsHeap<HostRunner, Config>& heap) {
  const auto handle = heap.handle();
  const ShardZero acc;
  std::vector<std::uint32_t> open_after;
  for (int i = 0; i < requests; ++i) {
    ptrs.push_back(handle.alloc(acc, 1024));
    if (ptrs.back() == nullptr) break;
    const std::uint32_t open = heap.creation().template statistics<acc::HostThreads>().open_pages;
    if (open_after.empty() || open != open_after.back()) open_after.push_back(open);
  }
  return open_after;
}

TEST(SlabRefill, DemandSizedSegmentsStartWithOnePageAndDoubleUnderDemand) {
  using Slots = slabs::ClassSlots<DemandSizedConfig>;
  const std::uint32_t cls = Slots::Classes::of(1024);
  ASSERT_EQ(Slots::per_page(cls), 64u);
  ASSERT_EQ(slabs::segment_log_pages(Slots::per_page(cls), DemandSizedConfig::segment_chunks), 5u);
  SlabsHeap<HostRunner, DemandSizedConfig> heap(std::size_t{256} << 20);
  std::vector<void*> ptrs;
  // Segments of 1, 2, 4, 8, 16 and 32 pages used up, one chunk of the next.
  const auto open_after = open_pages_after_each_refill_of_1kib(ptrs, 64 * (1 + 2 + 4 + 8 + 16 + 32) + 1, heap);
  EXPECT_EQ(open_after, (std::vector<std::uint32_t>{1, 2, 4, 8, 16, 32}))
      << "open pages after each refill (a used-up segment leaves the count at the next refill)";
  const auto& h = heap.creation().layout();
  std::uint32_t used_slots = 0;
  for (std::uint32_t shard = 0; shard < h.shards; ++shard) {
    const auto w = slabs::SlotWord::decode(*h.slot(cls, shard));
    if (w.generation == 0u) continue;
    ++used_slots;
    EXPECT_EQ(w.generation, 7u) << "refills of the slot";
    EXPECT_EQ(w.log_pages, 5u) << "the seventh segment is a full one again";
    EXPECT_EQ(w.cursor, 1u);
  }
  EXPECT_EQ(used_slots, 1u);
  for (void* p : ptrs) heap.handle().dealloc(ShardZero{}, p);
  EXPECT_EQ(heap.creation().statistics<acc::HostThreads>().misuse_reports, 0u);
  EXPECT_EQ(heap.creation().statistics<acc::HostThreads>().pages_in_use, 32u) << "the open segment's pages";

  SlabsHeap<HostRunner> full_at_once(std::size_t{256} << 20);
  std::vector<void*> more;
  EXPECT_EQ(open_pages_after_each_refill_of_1kib(more, 64 * 32 + 1, full_at_once), (std::vector<std::uint32_t>{32}));
  for (void* p : more) full_at_once.handle().dealloc(ShardZero{}, p);
}

// The refill reads the slot's cursor: the claims that came after the one
// that crossed the old segment's end are requests waiting for the new
// segment, which gets enough pages for them (at least twice the old one).
TEST(SlabRefill, DemandSizedRefillReadsTheRequestsWaitingOnItsSlot) {
  using Slots = slabs::ClassSlots<DemandSizedConfig>;
  const std::uint32_t cls = Slots::Classes::of(1024);
  const std::uint32_t n = Slots::per_page(cls);
  ASSERT_EQ(n, 64u);
  struct Case {
    std::uint32_t waiting;  // chunks claimed past the old end, the crossing claim's own included
    std::uint32_t log_pages;
  };
  for (const Case c : {Case{1, 1}, Case{3 * n, 2}, Case{17 * n, 5}, Case{1000 * n, 5}}) {
    SlabsHeap<HostRunner, DemandSizedConfig> heap(std::size_t{256} << 20);
    const auto& h = heap.creation().layout();
    // Shard 0 of the class holds a used-up segment of one page (page 0,
    // taken and counted open); the claim that crossed its end saw cursor n.
    take_bits(h, 0, 1u);
    h.shared->open_pages.value = 1u;
    *h.slot(cls, 0) = slabs::SlotWord{1u, 0u, 1u, n + c.waiting}.encode();
    typename Slots::Gathered g;
    g.need = 1;
    ASSERT_TRUE(Slots::refill(ShardZero{}, h, cls, 0, slabs::SlotWord{1u, 0u, 1u, n}, g));
    const auto w = slabs::SlotWord::decode(*h.slot(cls, 0));
    EXPECT_EQ(w.generation, 2u);
    EXPECT_EQ(w.log_pages, c.log_pages) << c.waiting << " chunks waiting";
    EXPECT_EQ(w.cursor, 1u) << "the refiller took its own chunk";
    EXPECT_EQ(h.shared->open_pages.value, 1u << c.log_pages) << "the old page left the count, the new ones entered";
  }
}

// The rule itself: enough pages for the waiting requests, at least twice
// the old segment, one page where the slot had none, at most the full one.
TEST(SlabRefill, DemandSizedSegmentsCoverTheWaitingRequests) {
  using Slots = slabs::ClassSlots<DemandSizedConfig>;
  const slabs::SlotWord none{0u, 0u, 0u, 0u};
  const slabs::SlotWord four_pages{3u, 2u, 100u, 0u};
  EXPECT_EQ(Slots::demand_log_pages(64, 5, none, 1), 0u) << "one request, no segment before";
  EXPECT_EQ(Slots::demand_log_pages(64, 5, none, 64), 0u);
  EXPECT_EQ(Slots::demand_log_pages(64, 5, none, 65), 1u);
  EXPECT_EQ(Slots::demand_log_pages(64, 5, none, 600), 4u) << "600 chunks of 64 per page: 16 pages";
  EXPECT_EQ(Slots::demand_log_pages(64, 5, none, 5000), 5u) << "at most the full segment";
  EXPECT_EQ(Slots::demand_log_pages(64, 5, four_pages, 4 * 64 + 1), 3u) << "twice the old segment";
  EXPECT_EQ(Slots::demand_log_pages(64, 5, four_pages, 4 * 64 + 17 * 64), 5u) << "17 pages waiting: 32";
}

// Segments opened for other classes (one chunk each, freed again) must not
// keep their untouched pages from a class that runs out: a refill that
// finds no page closes every open segment and tries again.
TEST(SlabUsableShare, OpenSegmentsOfOtherClassesGiveTheirPagesBack) {
  EmulatedHeap heap(std::size_t{16} << 20);
  const auto handle = heap.handle();
  const acc::HostThread acc;
  for (std::size_t bytes : {16, 32, 48, 64, 96, 128, 256, 512, 1024, 2048}) handle.dealloc(acc, handle.alloc(acc, bytes));
  EXPECT_GT(heap.creation().statistics<acc::HostThreads>().pages_in_use, 10u) << "segments of several pages are open";
  std::vector<void*> big;
  while (void* p = handle.alloc(acc, 8192)) big.push_back(p);
  EXPECT_EQ(big.size(), std::size_t{heap.creation().layout().page_count} * 8) << "every page serves 8 KiB chunks";
  for (void* p : big) handle.dealloc(acc, p);
  EXPECT_EQ(heap.getAvailableSlots(8192), std::size_t{heap.creation().layout().page_count} * 8);
}

// Issue 15: at least 95% of a pool is usable at every size from 16 B to
// 8 KiB, when one size fills the heap (what is left: metadata, and the
// pages of partly used segments).
TEST(SlabUsableShare, SingleSizesFillAlmostThePool) {
  const std::size_t pool = std::size_t{64} << 20;
  for (std::size_t bytes : {16, 48, 64, 100, 256, 1000, 1024, 3000, 4096, 8192}) {
    EmulatedHeap heap(pool);
    const auto handle = heap.handle();
    std::vector<std::vector<void*>> got(4);
    HostRunner::run(4, [&](const acc::HostThread& a, std::uint32_t w) {
      while (void* p = handle.alloc(a, bytes)) got[w].push_back(p);
    });
    std::size_t n = 0;
    for (auto& g : got) n += g.size();
    const double share = static_cast<double>(n * bytes) / static_cast<double>(pool);
    using Classes = slabs::SizeClasses<CreationPolicies::SizeClassSlabsConfig::classes_per_doubling>;
    const std::size_t cls = Classes::bytes(Classes::of(static_cast<std::uint32_t>(bytes)));
    const double chunk_share = static_cast<double>(n * cls) / static_cast<double>(pool);
    EXPECT_GE(chunk_share, 0.95) << bytes << "-byte chunks: " << n;
    if (cls == bytes) EXPECT_GE(share, 0.95) << bytes;
    EXPECT_EQ(heap.getAvailableSlots(bytes), 0u) << bytes;
    HostRunner::run(4, [&](const acc::HostThread& a, std::uint32_t w) {
      for (void* p : got[w]) handle.dealloc(a, p);
    });
    EXPECT_EQ(heap.creation().statistics<acc::HostThreads>().pages_in_use, 0u) << bytes;
  }
}

// C5: when the pool has no page left, a request whose class has nothing
// left takes a chunk of a larger class, and the started page of a larger
// class's segment stays in its slot instead of being dropped.
TEST(SlabUsableShare, ARequestTakesALargerClassWhenThePoolRunsOut) {
  EmulatedHeap heap(std::size_t{8} << 20);
  const auto handle = heap.handle();
  const acc::HostThread acc;
  void* big = handle.alloc(acc, 8192);  // opens a segment of the 8 KiB class
  ASSERT_NE(big, nullptr);
  const auto& l = heap.creation().layout();
  std::vector<void*> got;
  while (void* p = handle.alloc(acc, 4096)) got.push_back(p);
  std::size_t on_big_page = 0;
  for (void* p : got) on_big_page += page_of(l, p) == page_of(l, big) ? 1 : 0;
  EXPECT_EQ(on_big_page, 7u) << "the other seven 8 KiB chunks of the started page serve 4 KiB requests";
  EXPECT_GT(heap.creation().statistics<acc::HostThreads>().dry_refills, 0u);
  for (void* p : got) handle.dealloc(acc, p);
  handle.dealloc(acc, big);
  heap.creation().release_open_segments<acc::HostThreads>();
  EXPECT_EQ(heap.creation().statistics<acc::HostThreads>().pages_in_use, 0u);
}

// C5 under contention: a request of a class that has run dry, in a pool
// with no free page, claims a chunk from a larger class's open segment
// (ClassSlots::from_open_segments). One worker fills the pool with 1 KiB
// chunks until the first one comes from a larger class; then four workers,
// started together, race for the rest of the larger classes' open segments
// until each has failed once. Each chunk is handed out once; once they
// stop, one more request fails only if no larger class has room left (a
// worker may give up on a slot that another is refilling, never on room it
// can reach); the pool comes back whole. 1536 B keeps its chunk bits apart
// from the state (set_bits must set them: S3).
TEST(SlabUsableShare, WorkersRacingForLargerClassesGetEachChunkOnce) {
  using Slots = slabs::ClassSlots<CreationPolicies::SizeClassSlabsConfig>;
  EmulatedHeap heap(std::size_t{16} << 20);
  const auto handle = heap.handle();
  const auto& l = heap.creation().layout();
  const acc::HostThread acc;
  std::vector<void*> opened;  // each opens a segment of its class, kept so that its page stays started
  for (std::size_t bytes : {1536, 2048, 4096, 8192}) opened.push_back(handle.alloc(acc, bytes));
  for (void* p : opened) ASSERT_NE(p, nullptr);
  const std::uint32_t own = Slots::Classes::of(1024);
  auto from_larger = [&](const void* p) { return l.pages[page_of(l, p)].cls != own + 1u; };  // cls: class + 1 (S2)
  const std::size_t bound = (std::size_t{16} << 20) / 1024 + 1;  // more requests than the pool holds: a fault
  std::vector<void*> filled;
  while (filled.size() < bound) {
    void* p = handle.alloc(acc, 1024);
    ASSERT_NE(p, nullptr) << "the pool ran out before a larger class served a request";
    filled.push_back(p);
    if (from_larger(p)) break;
  }
  std::vector<std::vector<void*>> got(4);
  std::barrier start(4);
  HostRunner::run(4, [&](const acc::HostThread& a, std::uint32_t w) {
    start.arrive_and_wait();
    while (got[w].size() < bound)
      if (void* p = handle.alloc(a, 1024)) got[w].push_back(p);
      else break;
  });
  std::set<void*> distinct(filled.begin(), filled.end());
  std::size_t n = filled.size(), larger = 0;
  for (const auto& g : got) {
    EXPECT_LT(g.size(), bound) << "a worker never failed";
    for (void* p : g) {
      distinct.insert(p);
      ++n;
      larger += from_larger(p) ? 1 : 0;
    }
  }
  EXPECT_EQ(distinct.size(), n) << "a chunk was handed out twice";
  EXPECT_GT(larger, 0u) << "no raced request was served by a larger class (C5)";
  if (void* last = handle.alloc(acc, 1024)) {
    EXPECT_EQ(distinct.count(last), 0u) << "the last request got a live chunk";
    filled.push_back(last);
  } else {
    for (std::uint32_t c = own + 1u; c < Slots::class_count; ++c)
      for (std::uint32_t sh = 0; sh < l.shards; ++sh)
        EXPECT_EQ(Slots::segment_room(c, *l.slot(c, sh)), 0u) << "class " << c << " kept room while a request failed";
  }
  for (void* p : filled) handle.dealloc(acc, p);
  for (const auto& g : got)
    for (void* p : g) handle.dealloc(acc, p);
  for (void* p : opened) handle.dealloc(acc, p);
  heap.creation().release_open_segments<acc::HostThreads>();
  const auto st = heap.creation().statistics<acc::HostThreads>();
  EXPECT_EQ(st.misuse_reports, 0u) << "a chunk's bit was not set when it was handed out, or set twice";
  EXPECT_EQ(st.pages_in_use, 0u);
}

// C6's last resort: before a request of a class without C6 fails, it takes
// a freed chunk of a partly used slab of a larger class that has C6. The
// pool is full of 8 KiB chunks (C6 by default), every other one freed, so no
// page empties: a 48-byte request used to fail here.
TEST(SlabUsableShare, ARequestTakesAFreedChunkOfALargerClassBeforeItFails) {
  EmulatedHeap heap(std::size_t{8} << 20);
  const auto handle = heap.handle();
  const acc::HostThread a;
  std::vector<void*> live, freed;
  for (std::size_t i = 0;; ++i) {
    void* p = handle.alloc(a, 8192);
    if (p == nullptr) break;
    (i % 2 == 0 ? live : freed).push_back(p);
  }
  ASSERT_GT(freed.size(), 100u);
  for (std::size_t i = 0; i < live.size(); ++i) std::memset(live[i], static_cast<int>(i % 251), 8192);
  for (void* p : freed) handle.dealloc(a, p);
  void* small = handle.alloc(a, 48);
  ASSERT_NE(small, nullptr) << "a 48-byte request failed while freed 8 KiB chunks were left";
  const auto* s = static_cast<const std::byte*>(small);
  EXPECT_TRUE(std::any_of(freed.begin(), freed.end(), [&](void* f) {
    return s >= static_cast<const std::byte*>(f) && s < static_cast<const std::byte*>(f) + 8192;
  })) << "the request is served from a freed 8 KiB chunk";
  std::memset(small, 0xee, 48);
  for (std::size_t i = 0; i < live.size(); ++i) {
    const auto* b = static_cast<const unsigned char*>(live[i]);
    ASSERT_TRUE(b[0] == i % 251 && b[8191] == i % 251) << "live chunk " << i << " overwritten";
  }
  EXPECT_EQ(heap.creation().statistics<acc::HostThreads>().reused_chunks, 1u);
  handle.dealloc(a, small);
  for (void* p : live) handle.dealloc(a, p);
  heap.creation().release_open_segments<acc::HostThreads>();
  const auto st = heap.creation().statistics<acc::HostThreads>();
  EXPECT_EQ(st.pages_in_use, 0u) << "memory lost";
  EXPECT_EQ(st.misuse_reports, 0u);
}

// C7: in a pool that stays full, a request that fails reads few slot words.
// It used to read every slot of every larger class (C5's search) and, in its
// refill that found no page, every slot of every class (C5's shrink): here
// (22 classes, 16 shards) 351 words for one failed request.
TEST(SlabFullPool, AFailingRequestReadsFewSlotWords) {
  EmulatedHeap heap(std::size_t{256} << 20);
  const auto handle = heap.handle();
  const auto& h = heap.creation().layout();
  using Slots = slabs::ClassSlots<CreationPolicies::SizeClassSlabsConfig>;
  ASSERT_GE(h.shards, 4u);
  const acc::HostThread a;
  // A segment opened in every class (one chunk each, freed again), then the
  // pool filled with chunks of the largest class.
  for (std::uint32_t c = 0; c < Slots::class_count; ++c) handle.dealloc(a, handle.alloc(a, Slots::class_bytes(c)));
  std::vector<void*> big;
  while (void* p = handle.alloc(a, CreationPolicies::SizeClassSlabs<>::largest_class)) big.push_back(p);
  ASSERT_EQ(handle.alloc(a, 16), nullptr);
  // The counted request's refill must not be one that shrinks every class (C7).
  if (heap.creation().statistics<acc::HostThreads>().dry_refills % Slots::full_shrink_every == 0u)
    ASSERT_EQ(handle.alloc(a, 16), nullptr);
  ReadCounter<std::uint64_t> counter;  // loads of the class slots' words
  counter.words_begin = h.slots;
  counter.words_end = h.slots + std::size_t{Slots::class_count} * h.shards;
  EXPECT_EQ(handle.alloc(counter, 16), nullptr);
  EXPECT_LE(counter.reads, h.shards) << "slot words read by one request that fails in a full pool";
  for (void* p : big) handle.dealloc(a, p);
  heap.creation().release_open_segments<acc::HostThreads>();
  const auto st = heap.creation().statistics<acc::HostThreads>();
  EXPECT_EQ(st.pages_in_use, 0u) << "memory lost";
  EXPECT_EQ(st.misuse_reports, 0u);
}

// C6 (issue 18: a particle-in-cell code's frames outlive their neighbours
// on a page): once the pool has no free page, a request of a class of at
// least Config::reuse_freed_chunks_from_bytes (every class with
// ReuseFreedChunksConfig, 4 KiB and more by default) takes a freed chunk of
// a partly used slab of its class. Workers fill the heap, free every other
// chunk (so no page empties), and allocate again: every freed chunk comes
// back, none of them overlaps a live one, and the live chunks keep their
// contents. Without C6 not one freed chunk can be allocated again, which
// the default configuration's classes below 4 KiB show.
using ReuseHeap = SlabsHeap<HostRunner, CreationPolicies::ReuseFreedChunksConfig>;

template <class Heap = ReuseHeap, class Fill>
void expect_freed_chunks_reused(std::size_t bytes, unsigned workers, Fill fill) {
  // `bytes` is a class size here.
  const bool reuse = bytes >= Heap::CreationPolicy::Properties::reuse_freed_chunks_from_bytes;
  Heap heap(std::size_t{8} << 20);
  const auto handle = heap.handle();
  std::vector<std::vector<void*>> got(workers);
  fill(handle, got);
  std::vector<void*> live, freed;
  for (auto& g : got) {
    for (std::size_t i = 0; i < g.size(); ++i) (i % 2 == 0 ? live : freed).push_back(g[i]);
  }
  ASSERT_GT(freed.size(), 100u) << bytes;
  for (std::size_t i = 0; i < live.size(); ++i) std::memset(live[i], static_cast<int>(i % 251), bytes);
  const acc::HostThread host;
  for (void* p : freed) handle.dealloc(host, p);
  EXPECT_EQ(heap.getAvailableSlots(bytes), reuse ? freed.size() : 0u) << bytes << ": the freed chunks are what is available";
  std::vector<std::vector<void*>> again(workers);
  HostRunner::run(workers, [&](const acc::HostThread& a, std::uint32_t w) {
    while (void* p = handle.alloc(a, bytes)) {
      std::memset(p, 0xee, bytes);
      again[w].push_back(p);
    }
  });
  std::vector<void*> all = live;
  std::size_t reused = 0;
  for (auto& g : again) {
    reused += g.size();
    all.insert(all.end(), g.begin(), g.end());
  }
  EXPECT_EQ(reused, reuse ? freed.size() : 0u) << bytes << "-byte chunks freed and allocated again";
  EXPECT_EQ(heap.creation().template statistics<acc::HostThreads>().reused_chunks, reused) << bytes;
  std::sort(all.begin(), all.end());
  for (std::size_t i = 1; i < all.size(); ++i)
    ASSERT_LE(static_cast<std::byte*>(all[i - 1]) + bytes, all[i]) << bytes << ": a reused chunk overlaps another";
  for (std::size_t i = 0; i < live.size(); ++i) {
    const auto* b = static_cast<const unsigned char*>(live[i]);
    ASSERT_TRUE(b[0] == i % 251 && b[bytes - 1] == i % 251) << bytes << ": live chunk " << i << " overwritten";
  }
  for (void* p : all) handle.dealloc(host, p);
  heap.creation().template release_open_segments<acc::HostThreads>();
  const auto st = heap.creation().template statistics<acc::HostThreads>();
  EXPECT_EQ(st.misuse_reports, 0u) << bytes;
  EXPECT_EQ(st.pages_in_use, 0u) << bytes << ": memory lost";
}

TEST(SlabReuse, AFullPoolHandsOutTheFreedChunksOfPartlyUsedSlabs) {
  for (std::size_t bytes : {16, 48, 1024, 8192}) {
    expect_freed_chunks_reused(bytes, 4, [&](const auto& handle, std::vector<std::vector<void*>>& got) {
      HostRunner::run(4, [&](const acc::HostThread& a, std::uint32_t w) {
        while (void* p = handle.alloc(a, bytes)) got[w].push_back(p);
      });
    });
  }
}

// `workers` threads fill the heap; with one, consecutive chunks of a page
// alternate between kept and freed, so no page empties even with two chunks
// per page.
template <class Heap>
void expect_reuse_from(std::initializer_list<std::size_t> sizes, unsigned workers = 4) {
  for (std::size_t bytes : sizes) {
    expect_freed_chunks_reused<Heap>(bytes, workers, [&](const auto& handle, std::vector<std::vector<void*>>& got) {
      HostRunner::run(workers, [&](const acc::HostThread& a, std::uint32_t w) {
        while (void* p = handle.alloc(a, bytes)) got[w].push_back(p);
      });
    });
  }
}

TEST(SlabReuse, TheDefaultConfigurationReusesTheFreedChunksOfClassesFromFourKiBOn) {
  static_assert(CreationPolicies::SizeClassSlabsConfig::reuse_freed_chunks_from_bytes == 4096);
  expect_reuse_from<EmulatedHeap>({1024, 2048, 4096, 8192});
}

struct NeverReuseConfig : CreationPolicies::SizeClassSlabsConfig {
  static constexpr std::uint32_t reuse_freed_chunks_from_bytes = never_reuse;
};

TEST(SlabReuse, NeverReuseTurnsItOffForEveryClass) {
  expect_reuse_from<SlabsHeap<HostRunner, NeverReuseConfig>>({16, 1024, 8192, 32768}, 1);
}

// A page keeps the C6 hint its last slab of a class with C6 left (S1 keeps
// stale entries) when it becomes a slab of a class without C6. A search
// must drop such hints, or every later search of a full pool would visit
// those pages again.
TEST(SlabReuse, ASearchDropsTheHintsOfPagesOfClassesWithoutReuse) {
  EmulatedHeap heap(std::size_t{4} << 20);
  const auto handle = heap.handle();
  const acc::HostThread a;
  const auto& l = heap.creation().layout();
  auto hinted_pages = [&] {
    std::uint32_t n = 0;
    for (std::uint32_t w = 0; w < l.words; ++w) n += std::popcount(l.partial[w]);
    return n;
  };
  std::vector<void*> big;
  while (void* p = handle.alloc(a, 8192)) big.push_back(p);
  for (std::size_t i = 0; i < big.size(); i += 2) handle.dealloc(a, big[i]);
  ASSERT_GT(hinted_pages(), 10u) << "frees of every other 8 KiB chunk leave their slabs partly used";
  for (std::size_t i = 1; i < big.size(); i += 2) handle.dealloc(a, big[i]);
  heap.creation().release_open_segments<acc::HostThreads>();
  ASSERT_EQ(heap.creation().statistics<acc::HostThreads>().pages_in_use, 0u);
  std::vector<void*> small;
  while (void* p = handle.alloc(a, 1024)) small.push_back(p);
  for (std::size_t i = 0; i < small.size(); i += 2) handle.dealloc(a, small[i]);
  EXPECT_EQ(handle.alloc(a, 8192), nullptr) << "the pool holds 1 KiB slabs only";
  EXPECT_EQ(hinted_pages(), 0u) << "the search dropped the stale hints on the 1 KiB slabs";
  for (std::size_t i = 1; i < small.size(); i += 2) handle.dealloc(a, small[i]);
  heap.creation().release_open_segments<acc::HostThreads>();
  const auto st = heap.creation().statistics<acc::HostThreads>();
  EXPECT_EQ(st.pages_in_use, 0u);
  EXPECT_EQ(st.misuse_reports, 0u);
}

// The same with emulated warps, whose groups of 8 KiB requests take slabs
// of four pages whole (S2): a freed chunk on a slab's later page is found
// through its first page.
TEST(SlabReuse, SlabsOfSeveralPagesHandOutTheirFreedChunks) {
  expect_freed_chunks_reused(8192, 1, [&](const auto& handle, std::vector<std::vector<void*>>& got) {
    acc::EmulatedGrid grid;
    for (bool full = false; !full;) {
      std::vector<void*> ptrs(64);
      grid.run(1, 64, [&](const acc::EmulatedThread& a, unsigned t) { ptrs[t] = handle.alloc(a, 8192); });
      for (void* p : ptrs) {
        if (p == nullptr) full = true;
        else got[0].push_back(p);
      }
    }
  });
}

// Issue 15: the share of a pool that holds requested bytes when requests
// come in many sizes (uniform in 16 B-4 KiB). Padding to the size classes
// bounds it (two classes per doubling: about a sixth of the chunk bytes is
// padding; 32 per doubling: about a hundredth), and a pool that runs out
// must not strand the rest of started pages: a request whose class has
// nothing left takes a chunk of a larger class (C5). Every worker goes on
// requesting after its first failure, as the workers of a GPU launch do.
template <class Config>
double mixed_sizes_share() {
  using Heap = Allocator<CreationPolicies::SizeClassSlabs<Config>, DistributionPolicies::NoOp, OOMPolicies::ReturnNull,
                         ReservePoolPolicies::HostPool, AlignmentPolicies::Shrink<16>>;
  const std::size_t pool = std::size_t{256} << 20;
  Heap heap(pool);
  const auto handle = heap.handle();
  constexpr std::uint32_t workers = 4, after_failure = 4096;
  std::vector<std::size_t> bytes(workers, 0);
  std::vector<std::vector<void*>> got(workers);
  HostRunner::run(workers, [&](const acc::HostThread& a, std::uint32_t w) {
    std::uint32_t x = 12345u + w, failures = 0;
    while (failures < after_failure) {
      x = x * 1664525u + 1013904223u;
      const std::uint32_t size = 16u + (x >> 8) % 4081u;
      if (void* p = handle.alloc(a, size)) {
        std::memset(p, static_cast<int>(w + 1), size);
        got[w].push_back(p);
        bytes[w] += size;
      } else {
        ++failures;
      }
    }
  });
  std::size_t total = 0;
  for (std::size_t b : bytes) total += b;
  HostRunner::run(workers, [&](const acc::HostThread& a, std::uint32_t w) {
    for (void* p : got[w]) handle.dealloc(a, p);
  });
  heap.creation().template release_open_segments<acc::HostThreads>();
  EXPECT_EQ(heap.creation().template statistics<acc::HostThreads>().pages_in_use, 0u);
  return static_cast<double>(total) / static_cast<double>(pool);
}

// Slabs of at most 32 chunks keep a bit per chunk in their state word
// (slabs/invariants.hpp S2): frees clear bits and retire the slab with one
// AND, C6's reuse sets a bit with its reserving CAS, and segment ends clear
// the chunks never reached. Four threads churn 2-8 KiB chunks in a pool
// that stays full, so all of these race: every chunk a thread holds keeps
// its tag until its free, and once everything is freed every page is back.
TEST(SlabReuse, ChurnOfSlabsWithBitsInTheirStateLosesAndOverlapsNothing) {
  using Heap = SlabsHeap<HostRunner>;
  Heap heap(std::size_t{4} << 20);  // 64 pages: full after a few dozen requests per thread
  using Slots = slabs::ClassSlots<CreationPolicies::SizeClassSlabsConfig>;
  ASSERT_TRUE(Slots::bits_in_state(Slots::Classes::of(2048)));
  ASSERT_FALSE(Slots::bits_in_state(Slots::Classes::of(1024)));
  const std::size_t fresh = heap.getAvailableSlots(8192);
  const auto handle = heap.handle();
  constexpr unsigned workers = 4;
  constexpr std::size_t sizes[] = {2048, 3072, 4096, 6144, 8192};
  std::vector<std::uint64_t> bad(workers, 0), served(workers, 0);
  HostRunner::run(workers, [&](const acc::HostThread& a, std::uint32_t w) {
    struct Held {
      void* p;
      std::size_t bytes;
      std::uint64_t tag;
    };
    std::vector<Held> held;
    std::mt19937 next(w + 1);
    auto check_and_free = [&](const Held& x) {
      const auto* words = static_cast<const std::uint64_t*>(x.p);
      if (words[0] != x.tag || words[x.bytes / 8 - 1] != x.tag) ++bad[w];
      handle.dealloc(a, x.p);
    };
    for (std::uint64_t round = 0; round < 3000; ++round) {
      const std::size_t bytes = sizes[next() % 5];
      if (void* p = handle.alloc(a, bytes)) {
        const std::uint64_t tag = (std::uint64_t{w} << 56) | round;
        static_cast<std::uint64_t*>(p)[0] = tag;
        static_cast<std::uint64_t*>(p)[bytes / 8 - 1] = tag;
        held.push_back({p, bytes, tag});
        ++served[w];
      }
      // Free about as often as allocate once full, a random held chunk.
      if (!held.empty() && next() % 8 < 5) {
        const std::size_t i = next() % held.size();
        check_and_free(held[i]);
        held[i] = held.back();
        held.pop_back();
      }
    }
    for (const Held& x : held) check_and_free(x);
  });
  std::uint64_t served_all = 0;
  for (unsigned w = 0; w < workers; ++w) {
    EXPECT_EQ(bad[w], 0u) << "thread " << w << ": a held chunk was overwritten (handed out twice)";
    served_all += served[w];  // (one thread may find the pool full nearly every time)
  }
  EXPECT_GT(served_all, 1000u);
  heap.creation().release_open_segments<acc::HostThreads>();
  const auto st = heap.creation().statistics<acc::HostThreads>();
  EXPECT_EQ(st.misuse_reports, 0u);
  EXPECT_GT(st.reused_chunks, 0u) << "the churn never reached C6's reuse";
  EXPECT_EQ(st.pages_in_use, 0u) << "memory lost";
  EXPECT_EQ(heap.getAvailableSlots(8192), fresh) << "memory lost";
}

// White-box races of C6's reservation in the bit form (S2), with a worker
// whose first load of a slab's `run` returns the page's previous shape (its
// 16-byte entry store seen half done on a back end without 16-byte stores),
// and optionally another worker's free between the reservation and the
// second load.
struct StaleRunThread : acc::HostThread {
  const std::uint32_t* run = nullptr;
  std::uint32_t stale_run = 0;
  std::function<void()> between;  // runs at the second load of `run`
  mutable int loads = 0;
  std::uint32_t load(const std::uint32_t* p) const {
    if (p == run) {
      if (loads++ == 0) return stale_run;
      if (between) between();
    }
    return acc::HostThread::load(p);
  }
};

struct WhiteBoxSlabs {
  using Creation = CreationPolicies::SizeClassSlabs<>;
  using Slots = slabs::ClassSlots<CreationPolicies::SizeClassSlabsConfig>;
  static constexpr std::size_t bytes = std::size_t{16} << 20;
  void* pool = std::aligned_alloc(65536, bytes);
  Creation heap = Creation::init_heap<acc::HostThreads>(pool, bytes);
  ~WhiteBoxSlabs() { std::free(pool); }
};

// A full slab of 32 chunks (a warp's two private pages of 4 KiB) read with
// the 4-page shape of a slab of 8 KiB chunks that held the page before: the
// reservation must find no clear bit among the slab's chunks. (It took bit
// 31, a chunk in use, through an undefined shift.)
TEST(SlabReuse, AReservationOfAFullSlabReadWithAStaleShapeTakesNothing) {
  WhiteBoxSlabs w;
  const auto& h = w.heap.layout();
  const std::uint32_t cls = WhiteBoxSlabs::Slots::Classes::of(4096);
  ASSERT_TRUE(WhiteBoxSlabs::Slots::bits_in_state(cls) && WhiteBoxSlabs::Slots::reuses(cls));
  const acc::HostThread host;
  WhiteBoxSlabs::Slots::init_pages(host, h, cls, 0, 2, WhiteBoxSlabs::Slots::SlabShape::one_slab);
  StaleRunThread a;
  a.run = &h.pages[0].run;
  a.stale_run = 4;
  EXPECT_EQ(WhiteBoxSlabs::Slots::take_freed_chunk(a, h, cls, 0), nullptr) << "a chunk of a full slab handed out";
  EXPECT_EQ(h.pages[0].used, 0xffffffffu);
}

// A reservation takes a bit beyond the slab's chunks (stale shape) while
// another worker frees chunk 0 of the full slab: that free finds a bit set
// that names no chunk, and the give-back must set the slab's C6 hint, or
// its free chunk stays invisible to C6 until the slab empties.
TEST(SlabReuse, AFreeBesideAReservationThatNamesNoChunkLeavesTheHintSet) {
  WhiteBoxSlabs w;
  const auto& h = w.heap.layout();
  const std::uint32_t cls = WhiteBoxSlabs::Slots::Classes::of(8192);
  const acc::HostThread host;
  h.taken[0] = 1u;  // page 0 belongs to a segment
  WhiteBoxSlabs::Slots::init_pages(host, h, cls, 0, 1, WhiteBoxSlabs::Slots::SlabShape::page_each);
  StaleRunThread a;
  a.run = &h.pages[0].run;
  a.stale_run = 4;
  a.between = [&] { w.heap.destroy(acc::HostThread{}, h.page_data(0)); };
  EXPECT_EQ(WhiteBoxSlabs::Slots::take_freed_chunk(a, h, cls, 0), nullptr);
  EXPECT_EQ(h.pages[0].used, 0xfeu) << "chunk 0 free, the others in use, the reserved bit given back";
  EXPECT_NE(h.partial[0] & 1u, 0u) << "the slab's free chunk has no C6 hint";
  EXPECT_EQ(h.shared->misuse, 0u);
}

// The same race seen by a third worker: while the bit beyond the chunks is
// held, a search of the slab must count chunk 0 as free (a clear bit among
// the slab's chunks), not the set bits as chunks in use, which would drop
// the slab's hint with a free chunk on it.
TEST(SlabReuse, ASearchBesideAReservationThatNamesNoChunkFindsTheFreedChunk) {
  WhiteBoxSlabs w;
  const auto& h = w.heap.layout();
  const std::uint32_t cls = WhiteBoxSlabs::Slots::Classes::of(8192);
  const acc::HostThread host;
  h.taken[0] = 1u;
  WhiteBoxSlabs::Slots::init_pages(host, h, cls, 0, 1, WhiteBoxSlabs::Slots::SlabShape::page_each);
  std::byte* found = nullptr;
  StaleRunThread a;
  a.run = &h.pages[0].run;
  a.stale_run = 4;
  a.between = [&] {
    w.heap.destroy(acc::HostThread{}, h.page_data(0));
    found = WhiteBoxSlabs::Slots::take_freed_chunk(acc::HostThread{}, h, cls, 0);
  };
  EXPECT_EQ(WhiteBoxSlabs::Slots::take_freed_chunk(a, h, cls, 0), nullptr);
  EXPECT_EQ(found, h.page_data(0)) << "the freed chunk beside the reserved bit was not found";
  EXPECT_EQ(h.pages[0].used, 0xffu);
  EXPECT_EQ(h.shared->misuse, 0u);
}

// A free through a stale pointer whose page now lies in a slab of another
// class whose bits are in its state (S1, a misuse no pointer check can
// tell in general): when the state the free's AND returns names another
// class than the free read, it is reported.
TEST(SlabWarpPath, AFreeWhoseSlabStateNamesAnotherClassIsReported) {
  WhiteBoxSlabs w;
  const auto& h = w.heap.layout();
  using Slots = WhiteBoxSlabs::Slots;
  const std::uint32_t big = Slots::Classes::of(8192), other = Slots::Classes::of(4096);
  const acc::HostThread host;
  h.taken[0] = 3u;
  Slots::init_pages(host, h, other, 0, 1, Slots::SlabShape::page_each);  // page 0: a slab of 4 KiB chunks
  // Page 1 still says it is the second page of a slab of 8 KiB chunks that began on page 0.
  h.pages[1].cls = big + 1u;
  h.pages[1].lead = 1u;
  w.heap.destroy(host, h.page_data(1));
  EXPECT_EQ(h.shared->misuse, 1u) << "the free hit a slab of another class unreported";
  EXPECT_EQ(h.shared->last_misuse, static_cast<std::uint32_t>(Misuse::double_free));
}

TEST(SlabUsableShare, MixedSizesFillThePoolUpToTheirPadding) {
  EXPECT_GE(mixed_sizes_share<CreationPolicies::SizeClassSlabsConfig>(), 0.82) << "two classes per doubling";
  EXPECT_GE(mixed_sizes_share<CreationPolicies::FineSizeClassesConfig>(), 0.95) << "32 classes per doubling";
}

// Issue 15: a pool that grows. HostVirtualMemory leaves the unmapped part
// of the reservation inaccessible, so a heap that touched it would crash.
using GrowingHeap = Allocator<CreationPolicies::SizeClassSlabs<>, DistributionPolicies::NoOp, OOMPolicies::ReturnNull,
                              ReservePoolPolicies::HostVirtualMemory, AlignmentPolicies::Shrink<16>>;

TEST(SlabGrowingPool, GrowsBetweenLaunchesWithoutMovingChunks) {
  const std::size_t mib = std::size_t{1} << 20;
  GrowingHeap heap(256 * mib, 4 * mib);
  EXPECT_LT(heap.mapped_bytes(), 8 * mib);
  const auto handle = heap.handle();
  const acc::HostThread acc;
  auto fill = [&](std::size_t bytes, std::vector<void*>& out) {
    while (void* p = handle.alloc(acc, bytes)) {
      std::memset(p, 0x5a, bytes);
      out.push_back(p);
    }
  };
  std::vector<void*> small, later;
  fill(4096, small);
  ASSERT_FALSE(small.empty());
  EXPECT_LE(small.size() * 4096, 4 * mib) << "the heap used memory it was not given";
  EXPECT_EQ(heap.getAvailableSlots(4096), 0u);
  EXPECT_EQ(handle.alloc(acc, 2 * mib), nullptr) << "a large request must not reach unmapped pages";

  EXPECT_GE(heap.grow(64 * mib), 64 * mib);
  EXPECT_GT(heap.getAvailableSlots(4096), 14000u);
  void* big = handle.alloc(acc, 16 * mib);
  ASSERT_NE(big, nullptr) << "a run of pages in the grown part";
  std::memset(big, 0x33, 16 * mib);
  fill(4096, later);
  EXPECT_GT(later.size(), 10 * small.size());
  for (void* p : small) EXPECT_EQ(*static_cast<unsigned char*>(p), 0x5a) << "a chunk from before the growth changed";

  heap.grow(512 * mib);  // capped at the reservation
  EXPECT_EQ(heap.mapped_bytes(), 256 * mib);
  for (void* p : small) handle.dealloc(acc, p);
  for (void* p : later) handle.dealloc(acc, p);
  handle.dealloc(acc, big);
  EXPECT_EQ(heap.creation().statistics<acc::HostThreads>().misuse_reports, 0u);
  EXPECT_EQ(heap.creation().statistics<acc::HostThreads>().pages_in_use, 0u);
  const std::size_t pages = heap.creation().layout().page_count;
  EXPECT_EQ(heap.getAvailableSlots(65536), pages) << "after growing to the whole reservation, every page";
}

TEST(SlabGrowingPool, ScatterUsesAGrowablePoolWhole) {
  using Heap = Allocator<CreationPolicies::Scatter<>, DistributionPolicies::NoOp, OOMPolicies::ReturnNull,
                         ReservePoolPolicies::HostVirtualMemory, AlignmentPolicies::Shrink<16>>;
  Heap heap(std::size_t{8} << 20);  // mapped whole: Scatter cannot grow
  const acc::HostThread acc;
  void* p = heap.handle().alloc(acc, 100);
  ASSERT_NE(p, nullptr);
  std::memset(p, 1, 100);
  heap.handle().dealloc(acc, p);
  EXPECT_EQ(heap.mapped_bytes(), std::size_t{8} << 20);
}

}  // namespace
}  // namespace manyalloc::heap::testing
