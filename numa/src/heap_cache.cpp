// Local heaps: writing the free caches back to the run bitmaps (heap.hpp,
// heap_cache_flush) and sizing them (heap_set_cache).
#include <bit>
#include <cstddef>
#include <cstdint>

#include "heap.hpp"

namespace manyalloc::numa {

void heap_set_cache(Heap& h, bool on) {
  OwnerLock hold(h);
  h.cache_on = on;
  h.rfq_poll = 1;  // the next allocation from a run merges the RFQ
  const std::uint32_t* caps =
      h.ctx->opts.profile == Profile::lowmem ? cache_capacities.lowmem : cache_capacities.normal;
  for (unsigned c = 0; c < num_classes; ++c) {
    h.cache[c].cap = on ? caps[c] : 0;
    if (h.cache[c].count.load(std::memory_order_relaxed) > h.cache[c].cap) heap_cache_flush(h, c, false);
  }
}

namespace {

// The run of class cls of h whose pages hold p, or nullptr (p lies in no
// small segment of h, or in a page of no run or of a run of another class).
Run* owned_run_of(Heap& h, const void* p, unsigned cls) {
  SmallSegment* seg = owned_small(h.ctx->registry.lookup(p), owner_key(h));
  if (seg == nullptr) return nullptr;
  const auto off = static_cast<std::size_t>(static_cast<const std::uint8_t*>(p) - seg->base);
  const std::uint16_t info = seg->page_info[off >> page_shift].load(std::memory_order_relaxed);
  if (info == 0 || page_info_cls(info) != cls) return nullptr;
  return &seg->runs[page_info_first(info)];
}

// One write-back of a free cache (heap_cache_flush): the entries are taken
// in order and gathered per bitmap word of their run, so that each word is
// read and stored once, and each run's header written once, per group of
// consecutive entries in it instead of once per entry.
//
// State between entries: `run` is the run of the last entry that passed
// the checks (nullptr: none, the next entry is looked up), [lo, lo + span)
// the addresses of its chunks; `w` is the bitmap word of the pending group,
// [wlo, wlo + wspan) the addresses of that word's chunks (wspan == 0: no
// word, the next entry is placed again), `word` its value: the stored word
// with the group's chunks set, and `stored` the word as it was read.
// Invariant: while a word is open, run is live and owned by h, and nothing
// but this write-back changed word w since it was read, so that storing
// `word` loses no bit and word & ~stored are the group's chunks.
class WriteBack {
 public:
  WriteBack(Heap& h, unsigned cls)
      : h_(h), cls_(cls), size_(class_table.info[cls].size), recip_(class_table.info[cls].recip),
        chunks_(class_table.info[cls].chunks) {}

  // Returns chunk p to its run, or reports it (not a chunk start of a run
  // of cls of h, or already free: a double free that reached the cache).
  void add(void* p) {
    const auto a = reinterpret_cast<std::uintptr_t>(p);
    std::uintptr_t d = a - wlo_;
    if (d >= wspan_) [[unlikely]] {
      if (!open_word(p)) return;
      d = a - wlo_;
    }
    const std::uint32_t i = divide(d, recip_);  // < 64
    if (static_cast<std::size_t>(i) * size_ != d) [[unlikely]] {
      misuse(*h_.ctx, "free", Misuse::not_a_chunk_start, p);
      return;
    }
    const std::uint64_t bit = std::uint64_t{1} << i;
    if (word_ & bit) [[unlikely]] {
      misuse(*h_.ctx, "free", Misuse::double_free, p);
      return;
    }
    word_ |= bit;
    ++added_;
  }

  // Stores what is pending; the byte counters are up to date afterwards.
  void finish() {
    close_word();
    heap_count_freed(h_, freed_);
    freed_ = 0;
  }

 private:
  // Opens the bitmap word of p's chunk after closing the open one; p may
  // lie in another run, which is looked up then. False (and p reported)
  // when p lies in no run of cls of h.
  bool open_word(void* p) {
    close_word();
    const auto a = reinterpret_cast<std::uintptr_t>(p);
    if (run_ == nullptr || a - lo_ >= span_) {
      run_ = owned_run_of(h_, p, cls_);
      if (run_ == nullptr) {
        misuse(*h_.ctx, "free", Misuse::not_a_chunk_start, p);
        return false;
      }
      lo_ = reinterpret_cast<std::uintptr_t>(run_->base);
      span_ = std::uintptr_t{chunks_} * size_;
    }
    w_ = divide(a - lo_, recip_) >> 6;
    const std::uint32_t in_word = chunks_ - w_ * 64 < 64 ? chunks_ - w_ * 64 : 64;
    wlo_ = lo_ + std::uintptr_t{w_} * 64 * size_;
    wspan_ = std::uintptr_t{in_word} * size_;
    stored_ = word_ = run_->free_word_or_all(w_);
    return true;
  }

  // Stores the open word's group in its run (as heap_free_local does for
  // one chunk) and closes the word. When that hands the run to
  // heap_after_free, which may release it, the run is forgotten too.
  void close_word() {
    if (wspan_ == 0) return;
    wspan_ = 0;
    wlo_ = 0;
    const std::uint64_t group = word_ & ~stored_;
    // The bits add() set, counted there: without a popcount instruction in
    // the target (x86-64's baseline has none) std::popcount is a call.
    const std::uint32_t added = added_;
    added_ = 0;
    if (group == 0) return;  // also every word above hw + 1 (all free: nothing added)
    Run& r = *run_;
    run_merge_bits(r, w_, group);
    freed_ += std::uint64_t{added} * size_;
    r.free_count += added;
    if (r.free_count == r.nchunks || r.state == RunState::full) [[unlikely]] {
      // heap_after_free reads the byte counters.
      heap_count_freed(h_, freed_);
      freed_ = 0;
      heap_after_free(h_, r);
      run_ = nullptr;
    }
  }

  Heap& h_;
  const unsigned cls_;
  const std::size_t size_;
  const std::uint64_t recip_;
  const std::uint32_t chunks_;
  Run* run_ = nullptr;
  std::uintptr_t lo_ = 0, span_ = 0;
  std::uintptr_t wlo_ = 0, wspan_ = 0;
  std::uint32_t w_ = 0;
  std::uint64_t word_ = 0, stored_ = 0;
  std::uint32_t added_ = 0;  // bits of word_ set since open_word: popcount(word_ & ~stored_)
  std::uint64_t freed_ = 0;
};

}  // namespace

void heap_cache_flush(Heap& h, unsigned cls, bool half) {
  FreeCache& fc = h.cache[cls];
  void** items = h.cache_stack(cls);
  const std::uint32_t count = fc.count.load(std::memory_order_relaxed);
  const std::uint32_t n = half ? (count + 1) / 2 : count;
  if (n == 0) return;
  // The oldest entries (bottom of the stack) go back to their runs. The
  // free fast path only checked that p's page belonged to a run of class
  // cls of this heap (heap.hpp). A pointer that was not a chunk start
  // holds no chunk, so its run, even its segment, may have been released
  // and reused since: p must still lie in a small segment of this heap and
  // be a chunk start of a run of cls (same class, same chunk grid: runs of
  // a class start at multiples of their size), and its bit must be clear
  // (a double free that reached the cache). Each entry is checked and
  // reported in stack order; what passes is stored per bitmap word
  // (WriteBack).
  WriteBack wb(h, cls);
  for (std::uint32_t k = 0; k < n; ++k) wb.add(items[k]);
  wb.finish();
  for (std::uint32_t k = n; k < count; ++k) items[k - n] = items[k];
  fc.count.store(count - n, std::memory_order_relaxed);
}

// A thread's heap is drained when the thread ends, and most of its classes'
// caches are empty: they are skipped here without a call (heap_cache_flush
// itself does nothing for an empty cache either).
void heap_cache_flush_all(Heap& h) {
  for (unsigned c = 0; c < num_classes; ++c)
    if (h.cache[c].count.load(std::memory_order_relaxed) != 0) heap_cache_flush(h, c, false);
}

}  // namespace manyalloc::numa
