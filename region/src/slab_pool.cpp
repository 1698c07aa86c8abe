// SLAB allocator ([Lyberis2012] section 3.2): constant-time alloc and free of
// 64-B-aligned slots, slab headers kept apart from the data.
#include "slab_pool.hpp"

#include "manyalloc/common/math.hpp"

namespace manyalloc::region::detail {

SlabPool::~SlabPool() { clear(); }

void SlabPool::clear() {
  used_.for_each([](std::uint64_t, Slab* s) { delete s; });
  used_.clear();
  ++used_epoch_;
  partial_.clear();
  free_.clear();
  stats_ = {};
}

std::uint64_t SlabPool::slot_size(std::uint64_t size) {
  if (size > max_object_bytes) return 0;
  if (size == 0) size = 1;
  return round_up_or_zero(size, slot_align);
}

std::uint64_t SlabPool::slabs_for_slot(std::uint64_t slot) {
  return slot <= slab_bytes ? 1 : ceil_div(slot, slab_bytes);
}

void SlabPool::list_push(Slab* s) {
  Slab** head = partial_.find(s->slot / slot_align);
  s->prev = nullptr;
  if (head == nullptr) {
    s->next = nullptr;
    partial_.insert(s->slot / slot_align, s);
    return;
  }
  s->next = *head;
  (*head)->prev = s;
  *head = s;
}

void SlabPool::list_remove(Slab* s) {
  if (s->prev != nullptr) {
    s->prev->next = s->next;
  } else {
    // s is the head.
    if (s->next == nullptr)
      partial_.erase(s->slot / slot_align);
    else
      *partial_.find(s->slot / slot_align) = s->next;
  }
  if (s->next != nullptr) s->next->prev = s->prev;
  s->prev = s->next = nullptr;
}

std::uint64_t SlabPool::alloc(std::uint64_t size) {
  const std::uint64_t slot = slot_size(size);
  if (slot == 0) return 0;
  Slab* s = nullptr;
  if (Slab** head = partial_.find(slot / slot_align); head != nullptr) {
    s = *head;
  } else {
    // A new slab: lowest free slabs first, to keep the region compact.
    const std::uint64_t pages = slabs_for_slot(slot);
    const std::uint64_t first = free_.take(pages, 0);
    if (first == decltype(free_)::npos) return 0;
    s = new Slab();
    s->first = first;
    s->pages = static_cast<std::uint32_t>(pages);
    s->slot = static_cast<std::uint32_t>(slot);
    s->nslots = slot <= slab_bytes ? static_cast<std::uint32_t>(slab_bytes / slot) : 1;
    used_.insert(first, s);
    ++used_epoch_;
    stats_.used_pages += pages;
    if (s->nslots > 1) {
      list_push(s);
      ++stats_.partial_slabs;
    }
  }
  const std::uint64_t free_bits = ~s->bitmap & (s->nslots == 64 ? ~std::uint64_t{0}
                                                                : (std::uint64_t{1} << s->nslots) - 1);
  const unsigned i = static_cast<unsigned>(__builtin_ctzll(free_bits));
  s->bitmap |= std::uint64_t{1} << i;
  ++s->used;
  if (s->used == s->nslots) {
    if (s->nslots > 1) {
      list_remove(s);
      --stats_.partial_slabs;
    }
    ++stats_.full_slabs;
  }
  ++stats_.live_objects;
  stats_.live_bytes += slot;
  return base_ + (s->first << slab_shift) + std::uint64_t{i} * slot;
}

SlabPool::Slab* SlabPool::slab_of(std::uint64_t addr) const {
  if (addr < base_) return nullptr;
  const std::uint64_t idx = (addr - base_) >> slab_shift;
  auto e = used_.floor(idx);
  if (!e) return nullptr;
  Slab* s = *e.value;
  return idx < s->first + s->pages ? s : nullptr;
}

FreeStatus SlabPool::free(std::uint64_t addr, std::uint64_t* slot_bytes) {
  Slab* s = slab_of(addr);
  if (s == nullptr) return FreeStatus::not_found;
  const std::uint64_t off = addr - base_ - (s->first << slab_shift);
  if (off % s->slot != 0 || off / s->slot >= s->nslots) return FreeStatus::not_slot_start;
  const unsigned i = static_cast<unsigned>(off / s->slot);
  if (!((s->bitmap >> i) & 1u)) return FreeStatus::double_free;
  if (slot_bytes != nullptr) *slot_bytes = s->slot;
  const bool was_full = s->used == s->nslots;
  s->bitmap &= ~(std::uint64_t{1} << i);
  --s->used;
  --stats_.live_objects;
  stats_.live_bytes -= s->slot;
  if (was_full) {
    --stats_.full_slabs;
    if (s->used > 0) {
      list_push(s);
      ++stats_.partial_slabs;
    }
  }
  if (s->used == 0) {
    if (!was_full) {
      list_remove(s);
      --stats_.partial_slabs;
    }
    used_.erase(s->first);
    ++used_epoch_;
    stats_.used_pages -= s->pages;
    free_.insert(s->first, s->pages, {});
    delete s;
  }
  return FreeStatus::ok;
}

std::uint64_t SlabPool::object_size(std::uint64_t addr) const {
  const Slab* s = slab_of(addr);
  if (s == nullptr) return 0;
  const std::uint64_t off = addr - base_ - (s->first << slab_shift);
  if (off % s->slot != 0 || off / s->slot >= s->nslots) return 0;
  return ((s->bitmap >> (off / s->slot)) & 1u) ? s->slot : 0;
}

bool SlabPool::check_invariants() const {
  bool ok = true;
  std::uint64_t full = 0, partial = 0, pages = 0, objects = 0, bytes = 0;
  std::uint64_t prev_end = 0;
  used_.for_each([&](std::uint64_t k, Slab* s) {
    if (s->first != k || s->used == 0 || s->used != static_cast<std::uint32_t>(__builtin_popcountll(s->bitmap)) ||
        s->nslots > 64 || k < prev_end)
      ok = false;
    if (free_.find(k) || free_.find(k + s->pages - 1)) ok = false;  // P4
    prev_end = k + s->pages;
    (s->used == s->nslots ? full : partial) += 1;
    pages += s->pages;
    objects += s->used;
    bytes += std::uint64_t{s->used} * s->slot;
  });
  std::uint64_t listed = 0;
  partial_.for_each([&](std::uint64_t key, Slab* head) {
    for (Slab* s = head; s != nullptr; s = s->next) {
      if (s->slot / slot_align != key || s->used == 0 || s->used >= s->nslots) ok = false;
      ++listed;
    }
  });
  // P6: a valid cache equals a fresh walk.
  if (runs_epoch_ == used_epoch_) {
    std::vector<std::pair<std::uint64_t, std::uint64_t>> fresh;
    for_each_used_run([&](std::uint64_t a, std::uint64_t b) { fresh.emplace_back(a, b); });
    if (fresh != runs_) ok = false;
  }
  return ok && listed == partial && full == stats_.full_slabs && partial == stats_.partial_slabs &&
         pages == stats_.used_pages && objects == stats_.live_objects && bytes == stats_.live_bytes;
}

}  // namespace manyalloc::region::detail
