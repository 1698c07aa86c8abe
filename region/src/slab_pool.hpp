// A slab pool: the SLAB allocator of Myrmics ([Lyberis2012] section 3) for one
// region. Invariants P1-P5 are in invariants.hpp.
//
// The pool hands out addresses but never reads or writes them: all metadata
// (slab headers, tries) lives in the scheduler's own heap, so a region's data
// is a set of slabs that can be shipped as a few (address, size) pairs.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "invariants.hpp"
#include "manyalloc/common/radix_trie.hpp"
#include "manyalloc/common/range_map.hpp"

namespace manyalloc::region::detail {

enum class FreeStatus { ok, not_found, not_slot_start, double_free };

struct SlabStats {
  std::uint64_t full_slabs = 0;     // slabs with every slot used
  std::uint64_t partial_slabs = 0;  // slabs with some slots used
  std::uint64_t used_pages = 0;     // 4 KiB slabs inside full or partial slabs
  std::uint64_t live_objects = 0;
  std::uint64_t live_bytes = 0;     // sum of slot sizes of live objects
};

class SlabPool {
 public:
  // gas_base: address of slab index 0.
  explicit SlabPool(std::uint64_t gas_base) : base_(gas_base) {}
  SlabPool(const SlabPool&) = delete;
  SlabPool& operator=(const SlabPool&) = delete;
  ~SlabPool();

  // Section 3.2: requests are rounded up to a 64-B slot; 0 for 0 < size that
  // is too large. size 0 is treated as 1.
  static std::uint64_t slot_size(std::uint64_t size);
  // Slabs one slab of this slot size spans (1 for slots <= 4 KiB).
  static std::uint64_t slabs_for_slot(std::uint64_t slot);

  // Address of a new slot of `size` bytes, or 0 when the pool has no free
  // slabs for it: the caller then adds slabs_for_slot(slot_size(size)) or
  // more with add_free() and retries. Pre: slot_size(size) != 0.
  std::uint64_t alloc(std::uint64_t size);
  FreeStatus free(std::uint64_t addr, std::uint64_t* slot_bytes = nullptr);
  // Slot size of the live object starting at addr, or 0.
  std::uint64_t object_size(std::uint64_t addr) const;

  // Gives the pool slabs [first, first + n) (slab indices).
  void add_free(std::uint64_t first, std::uint64_t n) { free_.insert(first, n, {}); }
  std::uint64_t free_slabs() const { return free_.total(); }
  std::uint64_t owned_slabs() const { return free_.total() + stats_.used_pages; }
  const SlabStats& stats() const { return stats_; }

  // Section 4.2 watermarks: hands free slabs beyond `keep` to sink(first, n),
  // highest addresses first so the region stays compact. Returns the count.
  template <class Sink>
  std::uint64_t trim(std::uint64_t keep, Sink&& sink) {
    std::uint64_t given = 0;
    while (free_.total() > keep) {
      const std::uint64_t excess = free_.total() - keep;
      // Highest range: walk to the last entry.
      std::uint64_t s = 0, len = 0;
      free_.for_each([&](std::uint64_t a, std::uint64_t l, const auto&) { s = a; len = l; });
      const std::uint64_t n = len < excess ? len : excess;
      free_.erase(s + len - n, n);
      sink(s + len - n, n);
      given += n;
    }
    return given;
  }

  // Region free (4.3): every slab (used and free) goes to sink(first, n);
  // metadata is dropped. The pool is empty afterwards.
  template <class Sink>
  void release_all(Sink&& sink) {
    used_.for_each([&](std::uint64_t k, Slab* s) { sink(k, std::uint64_t{s->pages}); });
    free_.for_each([&](std::uint64_t a, std::uint64_t l, const auto&) { sink(a, l); });
    clear();
  }

  // Region packing (4.3): walks used slabs in address order and reports runs
  // of adjacent slabs as f(address, bytes).
  template <class F>
  void for_each_used_run(F&& f) const {
    std::uint64_t run_start = 0, run_end = 0;  // slab indices, run_end exclusive
    bool open = false;
    used_.for_each([&](std::uint64_t k, Slab* s) {
      if (open && k == run_end) {
        run_end += s->pages;
        return;
      }
      if (open) f(base_ + (run_start << slab_shift), (run_end - run_start) << slab_shift);
      run_start = k;
      run_end = k + s->pages;
      open = true;
    });
    if (open) f(base_ + (run_start << slab_shift), (run_end - run_start) << slab_shift);
  }

  // The pool's free slabs as runs f(address, bytes), in address order.
  template <class F>
  void for_each_free_run(F&& f) const {
    free_.for_each([&](std::uint64_t a, std::uint64_t l, const auto&) { f(base_ + (a << slab_shift), l << slab_shift); });
  }

  // The same runs as for_each_used_run, as (address, bytes) pairs, cached
  // until the set of used slabs changes (P6): packing a region that was not
  // modified since its last send costs no walk.
  const std::vector<std::pair<std::uint64_t, std::uint64_t>>& used_runs() const {
    if (runs_epoch_ != used_epoch_) {
      runs_.clear();
      for_each_used_run([&](std::uint64_t a, std::uint64_t b) { runs_.emplace_back(a, b); });
      runs_epoch_ = used_epoch_;
    }
    return runs_;
  }

  // Checked builds: verifies P1-P5; returns false on the first violation.
  bool check_invariants() const;

 private:
  struct Slab {
    std::uint64_t first = 0;  // slab index
    std::uint32_t pages = 1;
    std::uint32_t slot = 0;
    std::uint32_t nslots = 0;
    std::uint32_t used = 0;
    std::uint64_t bitmap = 0;
    Slab* prev = nullptr;
    Slab* next = nullptr;
  };

  void clear();
  void list_push(Slab* s);
  void list_remove(Slab* s);
  Slab* slab_of(std::uint64_t addr) const;

  std::uint64_t base_;
  RadixTrie<Slab*, slab_key_bits> used_;                 // P1
  RadixTrie<Slab*, 26> partial_;                         // P2, key slot / 64
  RangeSet<slab_key_bits> free_;                         // P3
  SlabStats stats_;
  std::uint64_t used_epoch_ = 0;  // bumped whenever a slab enters or leaves used_
  mutable std::uint64_t runs_epoch_ = ~std::uint64_t{0};
  mutable std::vector<std::pair<std::uint64_t, std::uint64_t>> runs_;  // P6
};

}  // namespace manyalloc::region::detail
