// The local region layer of one scheduler (Myrmics, [Lyberis2012] section 4):
// regions as slab pools, and the four tries of section 4.2 (used/free ranges,
// used/free region ids). Invariants L1-L5 are in invariants.hpp. No MPI here.
#pragma once

#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "invariants.hpp"
#include "manyalloc/common/radix_trie.hpp"
#include "manyalloc/common/range_map.hpp"
#include "slab_pool.hpp"

namespace manyalloc::region::detail {

// Section 4.2 watermarks, in slabs.
struct RegionWatermarks {
  std::uint64_t region_hi = 64;  // free slabs a new region gets when memory is plentiful
  std::uint64_t region_lo = 4;   // free slabs a region keeps when others are trimmed
  std::uint64_t pressure = 4096; // below this many free slabs, grants shrink to region_lo
};

struct Region {
  Region(std::uint64_t id_, std::uint64_t parent_, std::uint64_t base) : id(id_), parent(parent_), pool(base) {}
  std::uint64_t id;
  std::uint64_t parent;
  SlabPool pool;
  std::vector<std::uint64_t> children;  // local or remote (L5)
  std::uint64_t last_slab = 0;          // nearest-free-slabs hint (4.2)
};

struct Extent {
  std::uint64_t addr;
  std::uint64_t bytes;
};

enum class LocalStatus { ok, no_region, no_memory, no_ids, bad_argument };

struct LocalStats {
  std::uint64_t regions = 0;
  std::uint64_t free_slabs = 0;    // L3
  std::uint64_t pool_slabs = 0;    // owned by region pools (used + free)
  std::uint64_t used_slabs = 0;    // in full or partial slabs
  std::uint64_t live_objects = 0;
  std::uint64_t live_bytes = 0;
  std::uint64_t free_ids = 0;
};

class LocalRegions {
 public:
  LocalRegions(std::uint64_t gas_base, RegionWatermarks wm) : base_(gas_base), wm_(wm) {}
  ~LocalRegions();

  std::uint64_t base() const { return base_; }
  std::uint64_t slab_of(std::uint64_t addr) const { return (addr - base_) >> slab_shift; }

  // Resources handed to this scheduler.
  void add_free_slabs(std::uint64_t first, std::uint64_t n) { free_slabs_.insert(first, n, {}); }
  void add_free_ids(std::uint64_t first, std::uint64_t n) { free_ids_.insert(first, n, {}); }
  std::uint64_t free_slab_count() const { return free_slabs_.total(); }
  std::uint64_t free_id_count() const { return free_ids_.total() + recycled_ids_.size(); }
  // Slots whose generation ran out (never handed out again).
  std::uint64_t retired_id_count() const { return retired_ids_; }
  // Tests: a lower last generation than max_id_generation, so that slots
  // retire after a few cycles.
  void set_max_generation(std::uint64_t g) { max_generation_ = g < max_id_generation ? g : max_id_generation; }

  // Section 5.2: whole 1-MiB pages for a child scheduler, at most `pages`,
  // as page-aligned ranges (slab indices) appended to `out`; trims region
  // pools first when the free ranges alone do not have them.
  std::uint64_t take_pages(std::uint64_t pages, std::vector<std::pair<std::uint64_t, std::uint64_t>>& out,
                           std::size_t max_ranges);
  // Flow-back (section 5.2 watermarks, upward): at most `pages` whole 1-MiB
  // pages that lie entirely in the free ranges (L3), as page-aligned ranges
  // appended to `out` (at most max_ranges of them, counting those already in
  // out) and removed from L3; the highest pages first, so that the low ones
  // stay near the regions that came before. Region pools are not trimmed and
  // no slab of any region is ever taken. Returns the pages taken.
  std::uint64_t take_free_pages(std::uint64_t pages, std::vector<std::pair<std::uint64_t, std::uint64_t>>& out,
                                std::size_t max_ranges);
  // Whole free pages in L3 (what take_free_pages could give).
  std::uint64_t free_page_count() const;
  // A chunk of at most n contiguous never-used ids (generation 0, so that a
  // child scheduler needs no generations); {first, count}, count 0 when none.
  std::pair<std::uint64_t, std::uint64_t> take_ids(std::uint64_t n);

  // Region management (4.1, 4.3).
  // The region with exactly this id (slot and generation), else nullptr.
  Region* find(std::uint64_t id) const {
    Region* const* r = used_ids_.find(id_slot(id));
    return r && (*r)->id == id ? *r : nullptr;
  }
  bool owns_region(std::uint64_t id) const { return find(id) != nullptr; }
  // Creates a region under `parent` (local or remote). Needs one free id and
  // some free slabs: no_ids / no_memory when missing.
  LocalStatus create(std::uint64_t parent, std::uint64_t* out_id);
  // Region 0 on the top scheduler.
  void create_root();
  // Frees region `id` and its local descendants; remote children are
  // appended to `remote` as (child id, its parent id).
  LocalStatus destroy(std::uint64_t id, std::vector<std::pair<std::uint64_t, std::uint64_t>>& remote);

  // Objects (4.1): n objects of `size` in region r, appended to `out`.
  // no_memory: nothing allocated; the caller gets more memory and retries.
  LocalStatus alloc(Region* r, std::uint64_t size, std::uint64_t n, std::vector<std::uint64_t>& out);
  // The local region holding addr (one lookup in used ranges), or nullptr.
  Region* region_of(std::uint64_t addr) const;
  FreeStatus free(std::uint64_t addr);

  // Region packing (4.3): extents of r and its local descendants (not
  // coalesced across regions); remote children appended to `remote`. The
  // slabs in use, or with whole_pools every slab of their pools (the free
  // ones too: what a free of r gives back).
  void pack(Region* r, std::vector<Extent>& out, std::vector<std::pair<std::uint64_t, std::uint64_t>>& remote,
            bool whole_pools = false) const;

  // Checked builds with a shared GAS (Scheduler): the slabs of a destroyed
  // region are filled with a poison byte and checked when the first object
  // is handed out in them again (in any region); a byte that changed means
  // a stale pointer into the freed region was written through: reported
  // (naming the address) and aborted.
  // Needs base() to be this process's mapping of the memory: off by default
  // (unit tests use a fake base).
  void enable_poison(int scheduler_rank) {
    poison_ = true;
    poison_rank_ = scheduler_rank;
  }
  static constexpr unsigned char poison_byte = 0xDB;

  LocalStats stats() const;
  std::uint64_t region_count() const { return used_ids_.size(); }
  bool check_invariants() const;

 private:
  // Gives region r at least `need` more free slabs (watermark policy, 4.2).
  bool grow(Region* r, std::uint64_t need);
  // Trims other regions' free slabs down to region_lo, round robin from the
  // last region visited (4.3). Returns slabs reclaimed.
  std::uint64_t trim_regions(std::uint64_t want, const Region* except);
  void give_to_region(Region* r, std::uint64_t first, std::uint64_t n);
  void take_from_region(std::uint64_t first, std::uint64_t n);

  std::uint64_t base_;
  RegionWatermarks wm_;
  RadixTrie<Region*, id_key_bits> used_ids_;                   // L1
  RangeMap<std::uint64_t, slab_key_bits> used_ranges_;         // L2: value = region id
  RangeSet<slab_key_bits> free_slabs_;                         // L3
  RangeSet<id_key_bits> free_ids_;                             // L4: never used
  RadixTrie<std::uint32_t, id_key_bits> recycled_ids_;         // L4: freed slot -> next generation
  std::uint64_t recycle_cursor_ = 0;
  std::uint64_t retired_ids_ = 0;
  std::uint64_t max_generation_ = max_id_generation;
  void poison(std::uint64_t first, std::uint64_t n);
  void check_poison(std::uint64_t first, std::uint64_t n);
  void forget_poison(std::uint64_t first, std::uint64_t n);

  bool poison_ = false;
  int poison_rank_ = -1;
  RangeSet<slab_key_bits> poisoned_;  // slabs of destroyed regions, poisoned, no object handed out since
  std::uint64_t trim_cursor_ = 0;
  std::uint64_t id_cursor_ = 0;
};

}  // namespace manyalloc::region::detail
