// Large allocations (large.hpp).
#include "large.hpp"

#include <cstring>

#include "source.hpp"
#include "topology.hpp"

namespace manyalloc::numa {

namespace {

constexpr std::size_t round_up(std::size_t x, std::size_t a) { return (x + a - 1) & ~(a - 1); }

// Records the new extent [offset, offset + size) of the allocation.
void set_extent(LargeSegment& seg, std::size_t size) {
  std::size_t end = round_up(seg.offset + size, os_page);
  if (end > seg.bytes) end = seg.bytes;
  seg.size = size;
  seg.usable = end - seg.offset;
  // The user may write up to usable (malloc_usable_size); one more page is
  // counted so that even a small overflow keeps `touched` an upper bound.
  const std::size_t t = end + os_page < seg.bytes ? end + os_page : seg.bytes;
  if (t > seg.touched) seg.touched = t;
}

}  // namespace

void* large_alloc(Context& c, Source& s, std::size_t size, std::size_t align, bool zero,
                  int node) {
  std::size_t offset = c.opts.colour
                           ? colour_offset(c.colour_next.fetch_add(1, std::memory_order_relaxed))
                           : 0;
  std::size_t slack = 0;
  if (align > segment_bytes) {
    slack = align - segment_bytes;  // the base is only 2 MiB aligned
    offset = 0;
  } else if (align > 64) {
    offset = round_up(offset, align) % segment_bytes;
  }
  const std::size_t limit = SIZE_MAX / 2;
  if (size > limit || slack > limit - size || offset > limit - size - slack) return nullptr;
  LargeSegment* seg = source_take_large(c, s, offset + size + slack);
  if (seg == nullptr) return nullptr;
  if (align > segment_bytes) {
    const auto b = reinterpret_cast<std::uintptr_t>(seg->base);
    offset = round_up(b, align) - b;
  }
  if (node >= 0 && seg->bound_node != node) {
    topology_bind(c, seg->base, seg->bytes, node, seg->touched != 0);
    seg->bound_node = node;
  }
  seg->offset = offset;
  // Only the part that may have been written before needs clearing: pages
  // past `touched` were never written since the OS mapped them.
  if (zero && seg->touched > offset) {
    const std::size_t dirty = seg->touched - offset;
    std::memset(seg->base + offset, 0, dirty < size ? dirty : size);
  }
  set_extent(*seg, size);
  seg->in_use.store(1, std::memory_order_relaxed);
  s.large_in_use_bytes.fetch_add(seg->usable, std::memory_order_relaxed);
  return seg->base + offset;
}

void large_free(Context& c, LargeSegment& seg, void* p) {
  if (p != seg.base + seg.offset || seg.in_use.exchange(0, std::memory_order_relaxed) == 0) {
    misuse(c, "free", seg.in_use.load(std::memory_order_relaxed) ? Misuse::not_a_chunk_start
                                                                 : Misuse::double_free,
           p);
    return;
  }
  seg.source->large_in_use_bytes.fetch_sub(seg.usable, std::memory_order_relaxed);
  source_give_large(c, &seg);
}

void* large_realloc(Context& c, LargeSegment& seg, std::size_t new_size) {
  Source& s = *seg.source;
  const std::size_t old_usable = seg.usable;
  if (new_size > SIZE_MAX / 2 - seg.offset) return nullptr;
  const std::size_t need = seg.offset + new_size;
  const std::size_t need_bytes = round_up(need, segment_bytes);
  if (need <= seg.bytes) {
    // Shrinking a lot, or any shrink in lowmem: give the tail back.
    if (need_bytes < seg.bytes &&
        (c.opts.profile == Profile::lowmem || need_bytes <= seg.bytes / 2))
      source_resize_large(c, &seg, need_bytes);  // failure keeps the larger mapping
  } else {
    // Grow by mremap: no copy, no fragmentation. Outside lowmem a little
    // headroom (1/8) absorbs the next small growths of a growing array.
    std::size_t want = need_bytes;
    if (c.opts.profile != Profile::lowmem && need_bytes <= SIZE_MAX / 4)
      want = round_up(need + need / 8, segment_bytes);
    if (!source_resize_large(c, &seg, want) &&
        (want == need_bytes || !source_resize_large(c, &seg, need_bytes)))
      return nullptr;
  }
  set_extent(seg, new_size);
  s.large_in_use_bytes.fetch_add(seg.usable - old_usable, std::memory_order_relaxed);
  return seg.base + seg.offset;
}

}  // namespace manyalloc::numa
