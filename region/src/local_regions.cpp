// Local regions ([Lyberis2012] section 4): one slab pool per region, slab ranges
// traded between the scheduler and its regions under the watermarks of 4.2.
#include "local_regions.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "manyalloc/common/build_config.hpp"
#include "manyalloc/common/math.hpp"

namespace manyalloc::region::detail {

LocalRegions::~LocalRegions() {
  used_ids_.for_each([](std::uint64_t, Region* r) { delete r; });
}

void LocalRegions::poison(std::uint64_t first, std::uint64_t n) {
  std::memset(reinterpret_cast<void*>(base_ + first * slab_bytes), poison_byte, n * slab_bytes);
  forget_poison(first, n);
  poisoned_.insert(first, n, {});
}

// Slab by slab (checked builds only): the poisoned ones must still hold
// nothing but the poison byte.
void LocalRegions::check_poison(std::uint64_t first, std::uint64_t n) {
  for (std::uint64_t s = first; s < first + n; ++s) {
    if (!poisoned_.find(s)) continue;
    const auto* p = reinterpret_cast<const unsigned char*>(base_ + s * slab_bytes);
    for (std::uint64_t i = 0; i < slab_bytes; ++i) {
      if (p[i] == poison_byte) continue;
      std::fprintf(stderr,
                   "manyalloc region (checked build): scheduler rank %d: address %#llx, in memory of a freed "
                   "region, was written after the region was freed (byte 0x%02x, poison 0x%02x): a stale pointer "
                   "into a freed region was used; aborting\n",
                   poison_rank_, static_cast<unsigned long long>(base_ + s * slab_bytes + i), p[i], poison_byte);
      std::abort();
    }
    poisoned_.erase(s, 1);
  }
}

void LocalRegions::forget_poison(std::uint64_t first, std::uint64_t n) {
  for (std::uint64_t s = first; s < first + n; ++s)
    if (poisoned_.find(s)) poisoned_.erase(s, 1);
}

void LocalRegions::give_to_region(Region* r, std::uint64_t first, std::uint64_t n) {
  used_ranges_.insert(first, n, r->id);
  r->pool.add_free(first, n);
  r->last_slab = first + n;
}

void LocalRegions::take_from_region(std::uint64_t first, std::uint64_t n) {
  used_ranges_.erase(first, n);
  free_slabs_.insert(first, n, {});
}

std::uint64_t LocalRegions::trim_regions(std::uint64_t want, const Region* except) {
  std::uint64_t got = 0;
  const std::size_t nregions = used_ids_.size();
  auto e = used_ids_.ceil(trim_cursor_);
  for (std::size_t visited = 0; visited < nregions && got < want; ++visited) {
    if (!e) e = used_ids_.first();
    if (!e) break;
    Region* r = *e.value;
    if (r != except)
      got += r->pool.trim(wm_.region_lo, [&](std::uint64_t f, std::uint64_t n) { take_from_region(f, n); });
    trim_cursor_ = e.key + 1;
    e = used_ids_.next(e.key);
  }
  return got;
}

bool LocalRegions::grow(Region* r, std::uint64_t need) {
  // 4.2: a generous grant (high watermark) while memory is plentiful, the
  // bare need (at least the low watermark) under pressure.
  const std::uint64_t want =
      std::max(need, free_slabs_.total() >= wm_.pressure ? wm_.region_hi : wm_.region_lo);
  for (std::uint64_t amount : {want, need}) {
    const std::uint64_t first = free_slabs_.take(amount, r->last_slab);
    if (first != decltype(free_slabs_)::npos) {
      give_to_region(r, first, amount);
      return true;
    }
  }
  // Reclaim free slabs from other regions, then try once more.
  trim_regions(need, r);
  const std::uint64_t first = free_slabs_.take(need, r->last_slab);
  if (first == decltype(free_slabs_)::npos) return false;
  give_to_region(r, first, need);
  return true;
}

std::uint64_t LocalRegions::take_pages(std::uint64_t pages,
                                       std::vector<std::pair<std::uint64_t, std::uint64_t>>& out,
                                       std::size_t max_ranges) {
  auto gather = [&]() {
    std::uint64_t got = 0;
    std::vector<std::pair<std::uint64_t, std::uint64_t>> cand;
    free_slabs_.for_each([&](std::uint64_t s, std::uint64_t n, const auto&) {
      if (got >= pages || cand.size() + out.size() >= max_ranges) return;
      const std::uint64_t a = (s + slabs_per_page - 1) / slabs_per_page * slabs_per_page;
      const std::uint64_t b = (s + n) / slabs_per_page * slabs_per_page;
      if (b <= a) return;
      const std::uint64_t p = std::min((b - a) / slabs_per_page, pages - got);
      cand.emplace_back(a, p * slabs_per_page);
      got += p;
    });
    for (auto [a, n] : cand) {
      free_slabs_.erase(a, n);
      if constexpr (build::checked_build)
        if (poison_) forget_poison(a, n);  // the child scheduler does not know them
      out.emplace_back(a, n);
    }
    return got;
  };
  std::uint64_t got = gather();
  if (got < pages) {
    trim_regions(~std::uint64_t{0}, nullptr);
    pages -= got;
    got += gather();
  }
  return got;
}

namespace {
// The whole pages inside free range [s, s + n): page-aligned [a, b), empty
// when b <= a.
std::pair<std::uint64_t, std::uint64_t> whole_pages(std::uint64_t s, std::uint64_t n) {
  const std::uint64_t a = ceil_div(s, slabs_per_page) * slabs_per_page;
  const std::uint64_t b = round_down(s + n, slabs_per_page);
  return {a, b > a ? b : a};
}
}  // namespace

std::uint64_t LocalRegions::free_page_count() const {
  std::uint64_t pages = 0;
  free_slabs_.for_each([&](std::uint64_t s, std::uint64_t n, const auto&) {
    const auto [a, b] = whole_pages(s, n);
    pages += (b - a) / slabs_per_page;
  });
  return pages;
}

std::uint64_t LocalRegions::take_free_pages(std::uint64_t pages,
                                            std::vector<std::pair<std::uint64_t, std::uint64_t>>& out,
                                            std::size_t max_ranges) {
  // Collect the candidates from the top of the space down, then carve them
  // out of L3 (not while walking it).
  std::vector<std::pair<std::uint64_t, std::uint64_t>> runs;
  free_slabs_.for_each([&](std::uint64_t s, std::uint64_t n, const auto&) {
    const auto [a, b] = whole_pages(s, n);
    if (b > a) runs.emplace_back(a, b);
  });
  std::uint64_t got = 0;
  for (auto it = runs.rbegin(); it != runs.rend() && got < pages && out.size() < max_ranges; ++it) {
    const std::uint64_t p = std::min((it->second - it->first) / slabs_per_page, pages - got);
    const std::uint64_t first = it->second - p * slabs_per_page, n = p * slabs_per_page;
    free_slabs_.erase(first, n);
    if constexpr (build::checked_build)
      if (poison_) forget_poison(first, n);  // the parent scheduler does not know them
    out.emplace_back(first, n);
    got += p;
  }
  return got;
}

std::pair<std::uint64_t, std::uint64_t> LocalRegions::take_ids(std::uint64_t n) {
  if (free_ids_.empty() || n == 0) return {0, 0};
  auto first = free_ids_.take(n, 0);
  if (first != decltype(free_ids_)::npos) return {first, n};
  // Not one range that large: give the first range.
  auto sp = free_ids_.pop_first();
  return {sp.start, sp.length};
}

void LocalRegions::create_root() {
  auto* r = new Region(0, 0, base_);
  used_ids_.insert(0, r);
}

LocalStatus LocalRegions::create(std::uint64_t parent, std::uint64_t* out_id) {
  if (free_ids_.empty() && recycled_ids_.empty()) return LocalStatus::no_ids;
  if (free_slabs_.total() == 0 && trim_regions(wm_.region_lo, nullptr) == 0) return LocalStatus::no_memory;
  // Never-used slots first (generation 0); then freed slots, rotating
  // (next slot after the last one reused), each with its next generation:
  // a stale id of the slot never names the new region.
  std::uint64_t id = 0;
  if (!free_ids_.empty()) {
    id = free_ids_.take(1, id_cursor_);
    id_cursor_ = id + 1;
  } else {
    auto e = recycled_ids_.ceil(recycle_cursor_);
    if (!e) e = recycled_ids_.first();
    const std::uint64_t slot = e.key, generation = *e.value;
    recycled_ids_.erase(slot);
    recycle_cursor_ = slot + 1;
    id = make_region_id(slot, generation);
  }
  auto* r = new Region(id, parent, base_);
  used_ids_.insert(id_slot(id), r);
  if (Region* p = find(parent); p != nullptr && parent != id) p->children.push_back(id);
  // Seed the new pool near its parent's memory for locality (4.2).
  if (Region* p = find(parent); p != nullptr) r->last_slab = p->last_slab;
  grow(r, 1);  // cannot fail: at least one free slab was checked above
  *out_id = id;
  return LocalStatus::ok;
}

LocalStatus LocalRegions::destroy(std::uint64_t id, std::vector<std::pair<std::uint64_t, std::uint64_t>>& remote) {
  Region* r = find(id);
  if (r == nullptr) return LocalStatus::no_region;
  if (id == 0) return LocalStatus::bad_argument;
  if (Region* p = find(r->parent); p != nullptr) {
    auto it = std::find(p->children.begin(), p->children.end(), id);
    if (it != p->children.end()) {
      *it = p->children.back();
      p->children.pop_back();
    }
  }
  // 4.3: destroy pools wholesale, cost linear in the number of regions.
  std::vector<Region*> stack{r};
  while (!stack.empty()) {
    Region* x = stack.back();
    stack.pop_back();
    for (std::uint64_t c : x->children) {
      if (Region* cr = find(c); cr != nullptr && cr->parent == x->id)
        stack.push_back(cr);
      else if (cr == nullptr)
        remote.emplace_back(c, x->id);
    }
    x->pool.release_all([&](std::uint64_t f, std::uint64_t n) {
      take_from_region(f, n);
      if constexpr (build::checked_build)
        if (poison_) poison(f, n);
    });
    used_ids_.erase(id_slot(x->id));
    // The slot's next use gets the next generation; at the last one the
    // slot is retired instead of wrapping.
    if (const std::uint64_t next = id_generation(x->id) + 1; next <= max_generation_)
      recycled_ids_.insert(id_slot(x->id), static_cast<std::uint32_t>(next));
    else
      ++retired_ids_;
    delete x;
  }
  return LocalStatus::ok;
}

LocalStatus LocalRegions::alloc(Region* r, std::uint64_t size, std::uint64_t n, std::vector<std::uint64_t>& out) {
  const std::uint64_t slot = SlabPool::slot_size(size);
  if (slot == 0 || n == 0) return LocalStatus::bad_argument;
  const std::size_t mark = out.size();
  for (std::uint64_t i = 0; i < n; ++i) {
    std::uint64_t a = r->pool.alloc(size);
    if (a == 0) {
      // Enough for the rest of the batch in one grant.
      const std::uint64_t per_slab = slot <= slab_bytes ? slab_bytes / slot : 1;
      const std::uint64_t need = SlabPool::slabs_for_slot(slot) * ceil_div(n - i, per_slab);
      if (!grow(r, need) && !grow(r, SlabPool::slabs_for_slot(slot))) {
        for (std::size_t j = mark; j < out.size(); ++j) r->pool.free(out[j]);
        out.resize(mark);
        return LocalStatus::no_memory;
      }
      a = r->pool.alloc(size);
      if (a == 0) {
        for (std::size_t j = mark; j < out.size(); ++j) r->pool.free(out[j]);
        out.resize(mark);
        return LocalStatus::no_memory;
      }
    }
    out.push_back(a);
  }
  if constexpr (build::checked_build)
    if (poison_)
      for (std::size_t j = mark; j < out.size(); ++j)
        check_poison(slab_of(out[j]), SlabPool::slabs_for_slot(slot));
  return LocalStatus::ok;
}

Region* LocalRegions::region_of(std::uint64_t addr) const {
  if (addr < base_) return nullptr;
  auto f = used_ranges_.find(slab_of(addr));
  return f ? find(*f.value) : nullptr;
}

FreeStatus LocalRegions::free(std::uint64_t addr) {
  Region* r = region_of(addr);
  if (r == nullptr) return FreeStatus::not_found;
  return r->pool.free(addr);
}

void LocalRegions::pack(Region* r, std::vector<Extent>& out,
                        std::vector<std::pair<std::uint64_t, std::uint64_t>>& remote, bool whole_pools) const {
  std::vector<const Region*> stack{r};
  while (!stack.empty()) {
    const Region* x = stack.back();
    stack.pop_back();
    for (const auto& [a, b] : x->pool.used_runs()) out.push_back({a, b});
    if (whole_pools) x->pool.for_each_free_run([&](std::uint64_t a, std::uint64_t b) { out.push_back({a, b}); });
    for (std::uint64_t c : x->children) {
      if (const Region* cr = find(c); cr != nullptr)
        stack.push_back(cr);
      else
        remote.emplace_back(c, x->id);
    }
  }
}

LocalStats LocalRegions::stats() const {
  LocalStats s;
  s.regions = used_ids_.size();
  s.free_slabs = free_slabs_.total();
  s.free_ids = free_id_count();
  used_ids_.for_each([&](std::uint64_t, Region* r) {
    s.pool_slabs += r->pool.owned_slabs();
    s.used_slabs += r->pool.stats().used_pages;
    s.live_objects += r->pool.stats().live_objects;
    s.live_bytes += r->pool.stats().live_bytes;
  });
  return s;
}

bool LocalRegions::check_invariants() const {
  bool ok = true;
  std::uint64_t pool_total = 0;
  used_ids_.for_each([&](std::uint64_t id, Region* r) {
    if (id_slot(r->id) != id || recycled_ids_.contains(id) || !r->pool.check_invariants()) ok = false;
    pool_total += r->pool.owned_slabs();
  });
  // L2: used ranges cover exactly the pools' slabs and name live regions.
  used_ranges_.for_each([&](std::uint64_t s, std::uint64_t n, std::uint64_t id) {
    if (!owns_region(id)) ok = false;
    if (free_slabs_.find(s) || free_slabs_.find(s + n - 1)) ok = false;  // L3 disjoint
  });
  return ok && pool_total == used_ranges_.total();
}

}  // namespace manyalloc::region::detail
