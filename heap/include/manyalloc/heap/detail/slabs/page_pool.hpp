// The page pool of the SizeClassSlabs heap: claiming and releasing runs of
// whole pages in the page bitmap and keeping its two hint levels (P1-P3 and
// the hint rules of slabs/invariants.hpp).
//
// Runs of up to 32 pages lie inside one bitmap word: a claim first ORs the
// run blind into a hashed place of its start word (try_word_at), else finds
// a word whose free bits hold the run, and one atomic OR takes it (runs of more
// than 16 pages look for an empty word through the `busy` hints first, as
// such runs are rare beside taken pages); their searches start at a hashed
// word below the large-request zone and reach the zone last (P4). Longer
// runs take whole words: a search from the top of the pool down over the
// `busy` hints alone (one bit per word, a word every 32 pages; eight hint
// words per round of loads) finds consecutive words with no taken page, and
// a CAS from 0 claims each. Neither search looks at the pages themselves.
#pragma once

#include <cstdint>

#include "manyalloc/common/bits.hpp"
#include "manyalloc/heap/detail/slabs/invariants.hpp"

namespace manyalloc::heap::detail::slabs {

inline constexpr std::uint32_t no_page = 0xffffffffu;

struct PagePool {
  // Pages usable now (P3).
  template <class Acc>
  MANYALLOC_FN static std::uint32_t usable(const Acc& acc, const SlabLayout& h) {
    return h.page_count - acc.load(&h.shared->unmapped_pages);
  }

  // P2's counters.
  template <class Acc>
  MANYALLOC_FN static void count_taken(const Acc& acc, const SlabLayout& h, std::uint32_t w, std::uint32_t k) {
    acc.atomic_add(&h.shared->taken[w % taken_shards].value, k);
  }
  template <class Acc>
  MANYALLOC_FN static void count_released(const Acc& acc, const SlabLayout& h, std::uint32_t w, std::uint32_t k) {
    acc.atomic_sub(&h.shared->taken[w % taken_shards].value, k);
  }
  template <class Acc>
  MANYALLOC_FN static std::uint32_t taken_pages(const Acc& acc, const SlabLayout& h) {
    std::uint32_t sum = 0;
    for (std::uint32_t i = 0; i < taken_shards; ++i) sum += acc.load(&h.shared->taken[i].value);
    return sum;
  }

  // Bits of word w that name usable pages.
  MANYALLOC_FN static std::uint32_t valid_bits(std::uint32_t w, std::uint32_t limit) {
    const std::uint32_t first = w * 32u;
    if (first >= limit) return 0u;
    return bits::low_mask(limit - first);
  }

  // Start positions of runs of k (1..32) set bits in `free_bits`.
  MANYALLOC_FN static std::uint32_t run_starts(std::uint32_t free_bits, std::uint32_t k) {
    std::uint32_t starts = free_bits;
    for (std::uint32_t have = 1; have < k && starts != 0u;) {
      const std::uint32_t step = have < k - have ? have : k - have;
      starts &= starts >> step;
      have += step;
    }
    return starts;
  }

  // ---- hints -------------------------------------------------------------------
  // Word w of `taken` read with an atomic, so that it is ordered after the
  // caller's hint update, whose result the caller waited for.
  template <class Acc>
  MANYALLOC_FN static std::uint32_t reread(const Acc& acc, const SlabLayout& h, std::uint32_t w) {
    return acc.atomic_or(&h.taken[w], 0u);
  }

  template <class Acc>
  MANYALLOC_FN static void after_claim(const Acc& acc, const SlabLayout& h, std::uint32_t w, std::uint32_t old,
                                       std::uint32_t claimed, std::uint32_t valid) {
    const std::uint32_t bit = 1u << (w % 32u);
    if (old == 0u) acc.atomic_or(&h.busy[w / 32u], bit);
    if (((old | claimed) & valid) == valid) {
      // A release may have slipped in before the bit was set: read the word
      // again once the OR is done (its old value is waited for, so the
      // read is issued after it took effect).
      if ((acc.atomic_or(&h.full[w / 32u], bit) & bit) == 0u && (reread(acc, h, w) & valid) != valid)
        acc.atomic_and(&h.full[w / 32u], ~bit);
    }
  }

  template <class Acc>
  MANYALLOC_FN static void release_bits(const Acc& acc, const SlabLayout& h, std::uint32_t w, std::uint32_t mask) {
    const std::uint32_t bit = 1u << (w % 32u);
    const std::uint32_t old = acc.atomic_and(&h.taken[w], ~mask);
    if ((old & mask) != mask) return;  // not ours to release: caller's bug, counted there
    // Only a word that was full can carry a `full` hint that its claimer
    // left set (after_claim); a full word's `old` has the form 2^j - 1 (all
    // 32 bits, or the usable bits of the last word, P3). Other words of that
    // form only cost a needless clear.
    if ((old & (old + 1u)) == 0u) acc.atomic_and(&h.full[w / 32u], ~bit);
    if ((old & ~mask) == 0u) {
      // A claim may have slipped in before our clear took effect: read the
      // word again once the AND is done (as in after_claim).
      if ((acc.atomic_and(&h.busy[w / 32u], ~bit) & bit) != 0u && reread(acc, h, w) != 0u)
        acc.atomic_or(&h.busy[w / 32u], bit);
    }
  }

  // ---- runs inside one word (1..32 pages) -------------------------------------
  // Tries to take k consecutive free pages of word w; returns the first page
  // or no_page.
  template <class Acc>
  MANYALLOC_FN static std::uint32_t try_word(const Acc& acc, const SlabLayout& h, std::uint32_t w, std::uint32_t k,
                                             std::uint32_t limit) {
    const std::uint32_t valid = valid_bits(w, limit);
    for (int attempt = 0; attempt < 4; ++attempt) {
      const std::uint32_t free_bits = ~acc.load(&h.taken[w]) & valid;
      const std::uint32_t starts = run_starts(free_bits, k);
      if (starts == 0u) return no_page;
      const std::uint32_t pos = bits::find_first_set(starts) - 1u;
      const std::uint32_t mask = bits::low_mask(k) << pos;
      const std::uint32_t old = acc.atomic_or(&h.taken[w], mask);
      if ((old & mask) == 0u) {
        count_taken(acc, h, w, k);
        after_claim(acc, h, w, old, mask, valid);
        return w * 32u + pos;
      }
      // Lost some pages to another claim: give back the ones we set.
      const std::uint32_t ours = mask & ~old;
      if (ours != 0u) release_bits(acc, h, w, ours);
    }
    return no_page;
  }

  // Tries to take k (1..32) pages of word w at `pos` without reading the
  // word first: the OR's old value tells whether they were free. Where a
  // search's start word is hashed (P4) it is mostly empty or holds room at
  // a hashed position, so the claim waits for one atomic instead of a read
  // and an atomic; a miss gives back the bits it set (as try_word's lost
  // race does) and costs one more atomic. Returns the first page or no_page.
  // The OR and its give-back are written out here and in try_word, not
  // moved into a shared helper: that raised the allocating kernels'
  // registers, which decide how many blocks an SM runs at once
  // (docs/results/heap/peers/alloc_roofline).
  template <class Acc>
  MANYALLOC_FN static std::uint32_t try_word_at(const Acc& acc, const SlabLayout& h, std::uint32_t w, std::uint32_t k,
                                                std::uint32_t pos, std::uint32_t limit) {
    const std::uint32_t valid = valid_bits(w, limit);
    const std::uint32_t mask = bits::low_mask(k) << pos;
    if ((mask & ~valid) != 0u) return no_page;  // P3: never set bits past the usable pages
    const std::uint32_t old = acc.atomic_or(&h.taken[w], mask);
    if ((old & mask) == 0u) {
      count_taken(acc, h, w, k);
      after_claim(acc, h, w, old, mask, valid);
      return w * 32u + pos;
    }
    const std::uint32_t ours = mask & ~old;
    if (ours != 0u) release_bits(acc, h, w, ours);
    return no_page;
  }

  // The position a blind claim of k pages tries, from a hash: one of the
  // word's 32 / k places for such a run, so that runs of one size pack.
  MANYALLOC_FN static std::uint32_t blind_pos(std::uint32_t k, std::uint32_t place_hash) {
    return place_hash % (32u / k) * k;
  }

  // k (1..32) pages at the start of a word with no taken page among the
  // words [first, end) (below the large-request zone, or the zone: P4),
  // found through the `busy` hints from word `start` on, wrapping within
  // the range: one load per 32 words. Reads at most `hint_words` hint
  // words; no_page when none was found (hints may be stale: this is no
  // proof that no such word exists).
  template <class Acc>
  MANYALLOC_FN static std::uint32_t claim_in_empty_word(const Acc& acc, const SlabLayout& h, std::uint32_t k,
                                                        std::uint32_t first, std::uint32_t end, std::uint32_t start,
                                                        std::uint32_t hint_words) {
    const std::uint32_t limit = usable(acc, h);
    const std::uint32_t usable_words = (limit + 31u) / 32u;  // words with a usable page (P3)
    if (end > usable_words) end = usable_words;
    if (first >= end) return no_page;
    const std::uint32_t lo = first / 32u, hi = (end - 1u) / 32u;  // the range's hint words
    std::uint32_t hw = start >= first && start < end ? start / 32u : lo;
    for (std::uint32_t i = 0; i <= hi - lo && i < hint_words; ++i) {
      std::uint32_t in_range = 0xffffffffu;
      if (hw == lo) in_range &= ~bits::low_mask(first % 32u);
      if (hw == hi) in_range &= bits::low_mask(end - hw * 32u);
      for (std::uint32_t empty = ~acc.load(&h.busy[hw]) & in_range; empty != 0u; empty &= empty - 1u) {
        const std::uint32_t page = try_word(acc, h, hw * 32u + bits::find_first_set(empty) - 1u, k, limit);
        if (page != no_page) return page;
      }
      hw = hw < hi ? hw + 1u : lo;
    }
    return no_page;
  }

  // k (1..32) consecutive pages, searching from word `start` (first at the
  // place `place_hash` names, blind: try_word_at); no_page when
  // no word holds such a run. The words are visited in P4's order: those
  // below the large-request zone from `start` on, wrapping to word 0 at the
  // zone's bottom, then the zone from its bottom up, so that a small run
  // enters the zone only once every word below it is full.
  template <class Acc>
  MANYALLOC_FN static std::uint32_t claim_in_word(const Acc& acc, const SlabLayout& h, std::uint32_t k,
                                                  std::uint32_t start, std::uint32_t place_hash) {
    const std::uint32_t limit = usable(acc, h);
    const std::uint32_t words = h.words, small = h.small_words;
    start %= small;
    // Fast path: the start word (spread by the caller's hash) has room, at
    // the hashed place or else where a read of the word finds it.
    std::uint32_t first = try_word_at(acc, h, start, k, blind_pos(k, place_hash), limit);
    if (first != no_page) return first;
    first = try_word(acc, h, start, k, limit);
    if (first != no_page) return first;
    // Slow path. Fast fail on a full pool (P2), then pass 0 skips the words
    // whose `full` hint is set, pass 1 trusts no hint.
    if (taken_pages(acc, h) + k > limit) return no_page;
    // Long runs are rare in words that have taken pages: look for an empty
    // word through the `busy` hints (one load per 32 words) instead of
    // reading every word, then run only the pass that trusts no hint.
    // Below the zone first, then the zone (P4).
    const bool long_run = k > 16u;
    if (long_run) {
      std::uint32_t page = claim_in_empty_word(acc, h, k, 0u, small, start, words);
      if (page == no_page) page = claim_in_empty_word(acc, h, k, small, words, small, words);
      if (page != no_page) return page;
    }
    const std::uint32_t to_wrap = small - start;  // words visited before the wrap to word 0
    // Words from here on have no usable page (P3): in a pool that grows,
    // most of the reservation while it is small.
    const std::uint32_t usable_words = (limit + 31u) / 32u;
    for (int pass = long_run ? 1 : 0; pass < 2; ++pass) {
      // The i-th word visited is w, and the words up to `end` follow it in
      // the order (one stretch of [start, small), [0, start) or the zone).
      for (std::uint32_t i = 0; i < words;) {
        const std::uint32_t w = i < to_wrap ? start + i : i < small ? i - to_wrap : i;
        const std::uint32_t end = i < to_wrap ? small : i < small ? start : words;
        if (w >= usable_words) {  // the rest of this stretch is unusable too: the next stretch
          i = i < to_wrap ? to_wrap : i < small ? small : words;
          continue;
        }
        if (pass == 0 && w % 32u == 0u && w + 32u <= end) {
          // A whole hint word: jump over the words marked full.
          if (~acc.load(&h.full[w / 32u]) == 0u) {
            i += 32u;
            continue;
          }
        } else if (pass == 0 && ((acc.load(&h.full[w / 32u]) >> (w % 32u)) & 1u) != 0u) {
          ++i;
          continue;
        }
        const std::uint32_t page = try_word(acc, h, w, k, limit);
        if (page != no_page) return page;
        ++i;
      }
    }
    return no_page;
  }

  // ---- runs of whole words (more than 32 pages) --------------------------------
  // Hint words of `busy` a search of whole words loads in one round (256
  // words of the bitmap, 8192 pages): a search that finds no run waits for
  // words / 256 rounds of loads, not for one load per hint word. Sixteen or
  // more raise the register count of every kernel that allocates (ptxas),
  // as take_words' batch would.
  static constexpr std::uint32_t hint_batch = 8;

  // Takes words [first, first + need) whole, `batch` CAS in flight at a time
  // (one thread issues them all: the rounds of waiting for their results are
  // what a long run costs, so the batch is the largest that does not raise
  // the register count of a kernel that allocates).
  // Returns need, or the index of the first word it could not take, after
  // giving back what it took (P1, P2). A word taken whole is full and busy
  // until its owner releases pages of it, so its hints need no re-check.
  // The pages of a batch are counted with one atomic (P2 needs only the sum).
  template <class Acc>
  MANYALLOC_FN static std::uint32_t take_words(const Acc& acc, const SlabLayout& h, std::uint32_t first,
                                               std::uint32_t need) {
    constexpr std::uint32_t batch = 32;
    std::uint32_t got = 0;
    while (got < need) {
      const std::uint32_t base = first + got;
      const std::uint32_t n = need - got < batch ? need - got : batch;
      std::uint32_t old[batch];
#if defined(__CUDA_ARCH__)
#pragma unroll
#endif
      for (std::uint32_t i = 0; i < batch; ++i) old[i] = i < n ? acc.atomic_cas(&h.taken[base + i], 0u, 0xffffffffu) : 1u;
      static_assert(batch <= 32u, "a batch's outcome is one bit per word of a 32-bit mask");
      std::uint32_t won = 0;  // bit i: word base + i taken here
#if defined(__CUDA_ARCH__)
#pragma unroll
#endif
      for (std::uint32_t i = 0; i < batch; ++i) won |= (old[i] == 0u ? 1u : 0u) << i;
      if (won != bits::low_mask(n)) {
        for (std::uint32_t i = 0; i < n; ++i) {
          if (((won >> i) & 1u) != 0u) release_bits(acc, h, base + i, 0xffffffffu);  // not counted yet
        }
        if (got != 0u) release(acc, h, first * 32u, std::uint64_t{got} * 32u);
        return got + static_cast<std::uint32_t>(bits::find_first_set(~won) - 1);
      }
      count_taken(acc, h, base, 32u * n);
      for (std::uint32_t i = 0; i < n;) {  // the hint words the batch spans
        const std::uint32_t w = base + i;
        const std::uint32_t span = 32u - w % 32u < n - i ? 32u - w % 32u : n - i;
        const std::uint32_t mask = bits::low_mask(span) << (w % 32u);
        acc.atomic_or(&h.busy[w / 32u], mask);
        acc.atomic_or(&h.full[w / 32u], mask);
        i += span;
      }
      got += n;
    }
    return need;
  }

  // k > 32 pages as ceil(k/32) whole words; the pages past k in the last word
  // go back at once. Returns the first page or no_page. The search runs from
  // the top of the pool down (P4) over the `busy` hints alone, hint_batch
  // hint words per round of loads, and claims the highest run long enough;
  // it reads no word of the bitmap before its CAS. Trusting the hints is
  // what keeps a request that finds no run at O(pool / 8192 pages) rounds
  // of loads instead of a pass over every word
  // (docs/results/heap/peers/placement_probe): a busy hint is set on a free
  // word only while an operation on that word is in flight (the hint rules
  // in slabs/invariants.hpp), so a run is missed only when a claim or
  // release of one of its words overlaps the search, as any search that
  // reads the words one by one would miss a release that lands behind it.
  template <class Acc>
  MANYALLOC_FN static std::uint32_t claim_words(const Acc& acc, const SlabLayout& h, std::uint64_t k) {
    const std::uint32_t limit = usable(acc, h);
    if (k > limit || taken_pages(acc, h) + k > limit) return no_page;
    const auto need = static_cast<std::uint32_t>((k + 31u) / 32u);
    const std::uint32_t whole = limit / 32u;  // words whose pages are all usable (P3)
    std::uint32_t top = whole;  // words below `top` are still to be searched
    std::uint32_t carry = 0;    // words [top, top + carry) are free (a run that may go on below top)
    std::uint32_t lowest = no_page;  // hint words [lowest, lowest + hint_batch) are in `hints`
    std::uint32_t hints[hint_batch];
    // One step per hint word, its 32 words at once: a step per busy word
    // would make a search through a fragmented pool a long serial loop of
    // one thread.
    while (top > 0u) {
      const std::uint32_t hw = (top - 1u) / 32u;
      if (lowest == no_page || hw < lowest) {
        lowest = hw + 1u > hint_batch ? hw + 1u - hint_batch : 0u;
#if defined(__CUDA_ARCH__)
#pragma unroll
#endif
        for (std::uint32_t i = 0; i < hint_batch; ++i) hints[i] = lowest + i <= hw ? acc.load(&h.busy[lowest + i]) : ~0u;
      }
      std::uint32_t busy = 0;  // hints[hw - lowest], picked without indexing registers at run time
#if defined(__CUDA_ARCH__)
#pragma unroll
#endif
      for (std::uint32_t i = 0; i < hint_batch; ++i) busy = lowest + i == hw ? hints[i] : busy;
      const std::uint32_t base = hw * 32u;
      const std::uint32_t span = top - base;  // words [base, top) of this hint word
      const std::uint32_t free = ~busy & bits::low_mask(span);
      // Free words from top - 1 down: they extend the run from above.
      const std::uint32_t ones = bits::count_leading_ones(free << (32u - span));
      std::uint32_t first = no_page;
      if (carry + ones >= need) {
        first = top + carry - need;  // the highest `need` words of the run
      } else if (ones == span) {
        carry += span;
        top = base;
        continue;
      } else {
        // Below word top - 1 - ones (taken): a run inside this hint word
        // (need <= 32 only), the highest first; else the free words at its
        // bottom start the run the next hint word extends.
        const std::uint32_t below = free & bits::low_mask(span - ones - 1u);
        const std::uint32_t starts = need <= 32u ? run_starts(below, need) : 0u;
        if (starts == 0u) {
          carry = bits::find_first_set(~below) - 1u;
          top = base;
          continue;
        }
        first = base + 31u - bits::count_leading_ones(~starts);
      }
      const std::uint32_t got = take_words(acc, h, first, need);
      if (got == need) {
        const std::uint32_t last = first + need - 1u;
        const auto tail = static_cast<std::uint32_t>(std::uint64_t{need} * 32u - k);
        if (tail != 0u) release_in_word(acc, h, last, ~bits::low_mask(32u - tail));
        return first * 32u;
      }
      top = first + got;  // the search goes on below the word that could not be taken
      carry = 0;
      lowest = no_page;  // its hint was stale: read again
    }
    return no_page;
  }

  // Gives the pages of word w named by `pages` back (P1, P2).
  template <class Acc>
  MANYALLOC_FN static void release_in_word(const Acc& acc, const SlabLayout& h, std::uint32_t w, std::uint32_t pages) {
    count_released(acc, h, w, bits::popcount(pages));
    release_bits(acc, h, w, pages);
  }

  // Gives whole words [first, first + n) back (the caller owns every page of
  // them). Their hints are cleared first, one atomic per hint word: while the
  // words are still ours no claim can set them again, so no re-check is
  // needed (a search that meanwhile trusts a cleared hint fails its CAS and
  // moves on); then the words themselves, their atomics all in flight.
  template <class Acc>
  MANYALLOC_FN static void release_words(const Acc& acc, const SlabLayout& h, std::uint32_t first, std::uint32_t n) {
    for (std::uint32_t i = 0; i < n;) {
      const std::uint32_t w = first + i;
      const std::uint32_t span = 32u - w % 32u < n - i ? 32u - w % 32u : n - i;
      const std::uint32_t mask = bits::low_mask(span) << (w % 32u);
      acc.atomic_and(&h.full[w / 32u], ~mask);
      acc.atomic_and(&h.busy[w / 32u], ~mask);
      i += span;
    }
    count_released(acc, h, first, 32u * n);
    for (std::uint32_t i = 0; i < n; ++i) (void)acc.atomic_and(&h.taken[first + i], 0u);
  }

  // Gives pages [first, first + k) back (P1, P2): partial words one by one,
  // whole words 32 at a time (one hint word's worth).
  template <class Acc>
  MANYALLOC_FN static void release(const Acc& acc, const SlabLayout& h, std::uint32_t first, std::uint64_t k) {
    std::uint64_t page = first;
    const std::uint64_t end = first + k;
    while (page < end) {
      const auto w = static_cast<std::uint32_t>(page / 32u);
      const auto pos = static_cast<std::uint32_t>(page % 32u);
      const std::uint64_t whole = pos == 0u ? (end - page) / 32u : 0u;
      if (whole != 0u) {
        const auto n = static_cast<std::uint32_t>(whole < 32u ? whole : 32u);
        release_words(acc, h, w, n);
        page += std::uint64_t{n} * 32u;
        continue;
      }
      const std::uint64_t n64 = end - page < 32u - pos ? end - page : 32u - pos;
      const auto n = static_cast<std::uint32_t>(n64);
      release_in_word(acc, h, w, bits::low_mask(n) << pos);
      page += n;
    }
  }
};

}  // namespace manyalloc::heap::detail::slabs
