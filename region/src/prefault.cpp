#include "prefault.hpp"

#include <sys/mman.h>

#include <cerrno>

namespace manyalloc::region::detail {

std::pair<std::uint64_t, std::uint64_t> Prefaulter::pages(const Extent& e) const {
  return {(e.addr - base_) >> slab_shift, (e.addr - base_ + e.bytes + slab_bytes - 1) >> slab_shift};
}

void Prefaulter::note_mapped(const std::vector<Extent>& extents) {
  if (!enabled_) return;
  for (const Extent& e : extents)
    if (e.bytes != 0) {
      const auto [first, end] = pages(e);
      mapped_.add(first, end);
    }
}

void Prefaulter::populate(const std::vector<Extent>& extents) {
  for (const Extent& e : extents) {
    if (!enabled_) break;
    if (e.bytes == 0) continue;
    const auto [first, end] = pages(e);
    mapped_.gaps(first, end, [&](std::uint64_t a, std::uint64_t b) {
      if (!enabled_) return;
      void* p = reinterpret_cast<void*>(base_ + (a << slab_shift));
      const std::uint64_t len = (b - a) << slab_shift;
      if (madvise(p, len, populate_read) != 0 && errno == EINVAL) enabled_ = false;
    });
    // Recorded even when madvise failed for other reasons: those pages are
    // then faulted on touch, and retrying every receive would cost a
    // syscall per receive for nothing.
    if (enabled_) mapped_.add(first, end);
  }
}

}  // namespace manyalloc::region::detail
