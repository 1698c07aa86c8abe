// Counting what a SizeClassSlabs heap can still hand out (getAvailableSlots),
// over ranges of the page bitmap, with summaries that combine in order so
// that ranges can be counted in parallel. The counts follow the claim rules
// of page_pool.hpp exactly: a run of k <= 32 pages lies inside one bitmap
// word, a longer run takes whole free words.
#pragma once

#include <cstdint>

#include "manyalloc/common/bits.hpp"
#include "manyalloc/heap/detail/slabs/page_pool.hpp"

namespace manyalloc::heap::detail::slabs {

struct RunSummary {
  std::uint64_t free_pages = 0;   // free usable pages
  std::uint64_t runs = 0;         // k-page runs inside the range (k <= 32: in-word; else whole words)
  std::uint64_t words = 0;        // words in the range
  std::uint64_t head_words = 0;   // whole free words at the start of the range
  std::uint64_t tail_words = 0;   // whole free words at the end (not counted in runs)
};

// Disjoint runs of k (1..32) set bits in one word, taken from the bottom up.
MANYALLOC_FN inline std::uint32_t runs_in_word(std::uint32_t free_bits, std::uint32_t k) {
  std::uint32_t count = 0;
  while (free_bits != 0u) {
    const std::uint32_t starts = PagePool::run_starts(free_bits, k);
    if (starts == 0u) break;
    const std::uint32_t pos = bits::find_first_set(starts) - 1u;
    ++count;
    free_bits &= ~(bits::low_mask(pos + k < 32u ? pos + k : 32u));
  }
  return count;
}

// Summary of words [begin, end) for runs of `k` pages.
template <class Load>
MANYALLOC_FN RunSummary summarize_words(const Load& load_word, std::uint64_t begin, std::uint64_t end,
                                        std::uint32_t limit, std::uint64_t k) {
  RunSummary s;
  s.words = end - begin;
  const std::uint64_t per_run_words = (k + 31u) / 32u;
  bool leading = true;
  std::uint64_t open = 0;  // free whole words since the last taken one
  for (std::uint64_t w = begin; w < end; ++w) {
    const std::uint32_t valid = PagePool::valid_bits(static_cast<std::uint32_t>(w), limit);
    const std::uint32_t free_bits = ~load_word(w) & valid;
    s.free_pages += bits::popcount(free_bits);
    const bool whole = valid == 0xffffffffu && free_bits == 0xffffffffu;
    if (k <= 32u) s.runs += runs_in_word(free_bits, static_cast<std::uint32_t>(k));
    if (whole) {
      ++open;
    } else {
      if (leading) s.head_words = open;
      else if (k > 32u) s.runs += open / per_run_words;
      leading = false;
      open = 0;
    }
  }
  if (leading) s.head_words = open;  // the whole range is free words
  s.tail_words = open;
  return s;
}

// Joins the summaries of two adjacent ranges (a before b).
MANYALLOC_FN inline RunSummary join(const RunSummary& a, const RunSummary& b, std::uint64_t k) {
  if (a.words == 0) return b;
  if (b.words == 0) return a;
  const std::uint64_t per_run_words = (k + 31u) / 32u;
  RunSummary s;
  s.free_pages = a.free_pages + b.free_pages;
  s.runs = a.runs + b.runs;
  s.words = a.words + b.words;
  const bool a_all = a.head_words == a.words;
  const bool b_all = b.head_words == b.words;
  s.head_words = a_all ? a.words + b.head_words : a.head_words;
  s.tail_words = b_all ? b.words + a.tail_words : b.tail_words;
  if (!a_all && !b_all && k > 32u) s.runs += (a.tail_words + b.head_words) / per_run_words;
  return s;
}

// Runs of k pages in a whole bitmap from its summary.
MANYALLOC_FN inline std::uint64_t finish_runs(const RunSummary& s, std::uint64_t k) {
  if (k <= 32u) return s.runs;
  const std::uint64_t per_run_words = (k + 31u) / 32u;
  if (s.head_words == s.words) return s.words / per_run_words;
  return s.runs + s.head_words / per_run_words + s.tail_words / per_run_words;
}

}  // namespace manyalloc::heap::detail::slabs
