// The C allocator interface (numa.h): malloc and friends, exported both
// under their standard names (so that linking or LD_PRELOAD replaces the C
// library's allocator) and as manyalloc_numa_*.
//
// Bad input follows glibc: sizes above PTRDIFF_MAX (which includes SIZE_MAX
// and everything near it) fail with ENOMEM in every entry point, products
// that overflow (calloc, reallocarray) too; posix_memalign returns EINVAL
// for an alignment that is not a power of two multiple of sizeof(void*),
// leaving *out untouched; aligned_alloc fails with EINVAL for a
// non-power-of-two alignment; memalign rounds it up (as glibc does).
// malloc(0) returns a unique minimal chunk; realloc(p, 0) with p != NULL
// frees p and returns NULL (glibc's behaviour, documented in numa.h);
// free(NULL) does nothing; free never changes errno.
#include <cerrno>
#include <cstdint>
#include <cstring>

#include "heap.hpp"
#include "large.hpp"
#include "manyalloc/numa/numa.h"
#include "runtime.hpp"
#include "source.hpp"
#include "stats.hpp"
#include "topology.hpp"

#define MA_EXPORT extern "C" __attribute__((visibility("default")))

using namespace manyalloc::numa;
using manyalloc::Misuse;

namespace {

constexpr std::size_t max_request = PTRDIFF_MAX;

[[gnu::noinline]] void* fail(int err) {
  errno = err;
  return nullptr;
}

// align: a power of two; align <= 16 means "default".
[[gnu::noinline]] void* alloc_slow(std::size_t size, std::size_t align, bool zero, int node = -1) {
  if (size > max_request) return fail(ENOMEM);
  if (size <= max_small && node < 0) {
    const unsigned cls = align <= 16     ? size_to_class(size)
                         : align <= page_bytes ? class_for_aligned(size == 0 ? 1 : size, align)
                                          : num_classes;
    if (cls < num_classes) {
      Heap* h = thread_heap();
      if (h == nullptr) return fail(ENOMEM);
      void* p = heap_alloc(*h, cls);
      if (p == nullptr) return fail(ENOMEM);
      if (zero) std::memset(p, 0, size);
      return p;
    }
  }
  // A large block needs the thread's source, not a heap: a thread that only
  // allocates large arrays makes no heap resident (16 such threads kept 64
  // KiB more than glibc in the alias4k workload). Only the numa profile
  // makes the heap, which chooses the source from the thread's binding.
  ensure_init();
  Context& c = global();
  Source* s = node >= 0 ? c.node_source(node) : &c.common();
  if (node < 0 && (t_heap != nullptr || c.opts.profile == Profile::numa)) {
    Heap* h = thread_heap();
    if (h == nullptr) return fail(ENOMEM);
    s = h->source;
  }
  void* p = large_alloc(c, *s, size == 0 ? 1 : size, align < 16 ? 16 : align, zero, node);
  if (p == nullptr) {
    c.failed_allocs.fetch_add(1, std::memory_order_relaxed);
    return fail(ENOMEM);
  }
  return p;
}

void* aligned_impl(std::size_t align, std::size_t size) {
  return alloc_slow(size, align, false);
}

// Usable bytes of a live allocation, 0 (and a report) for anything else.
std::size_t usable_of(Context& c, void* p, const char* where, Segment** out = nullptr) {
  Segment* s = c.registry.lookup(p);
  if (out) *out = s;
  if (s == nullptr) {
    ensure_init();
    misuse(c, where, Misuse::foreign_pointer, p);
    return 0;
  }
  if (s->kind == SegKind::small) {
    const ChunkRef ch = small_chunk_of(c, *static_cast<SmallSegment*>(s), p, where);
    return ch.run ? class_size(ch.cls) : 0;
  }
  auto* l = static_cast<LargeSegment*>(s);
  if (!large_is_start(*l, p)) {
    misuse(c, where, Misuse::not_a_chunk_start, p);
    return 0;
  }
  return l->usable;
}

}  // namespace

namespace {

// Every malloc but one served from the free cache (not inlined, so that the
// fast path below needs no stack frame).
[[gnu::noinline]] void* malloc_slow(std::size_t size) {
  Heap* h = t_heap;
  if (size <= max_small && h != nullptr) [[likely]] {
    if (void* p = heap_alloc(*h, class_of(size))) [[likely]]
      return p;
    return fail(ENOMEM);
  }
  return alloc_slow(size, 16, false);
}

}  // namespace

MA_EXPORT void* manyalloc_numa_malloc(std::size_t size) noexcept {
  Heap* h = t_heap;
  if (size <= table_max && h != nullptr) [[likely]] {
    FreeCache& fc = *cache_entry(*h, small_classes.cls[(size + 15) >> 4]);
    if (const std::uint32_t n = fc.count.load(std::memory_order_relaxed); n != 0) [[likely]]
      return cache_pop(fc, n);
  }
  return malloc_slow(size);
}

namespace {

[[gnu::noinline]] void free_foreign(void* p) {
  ensure_init();  // the options (check) may not be read yet
  misuse(global(), "free", Misuse::foreign_pointer, p);
}

[[gnu::noinline]] void free_large(Context& c, LargeSegment& s, void* p) {
  const int saved = errno;
  large_free(c, s, p);
  errno = saved;
}

// Every free but the owner's cached one (not inlined, so that the fast path
// below needs no stack frame; the rare cases out of line, so that a free of
// another thread's chunk reaches small_free_slow without one either).
[[gnu::noinline]] void free_slow(void* p, Segment* s) {
  if (s == nullptr) [[unlikely]] {
    if (p != nullptr) free_foreign(p);
    return;
  }
  Context& c = global();
  if (s->kind == SegKind::small) [[likely]]
    return small_free_slow(c, heap_for_free(c), *static_cast<SmallSegment*>(s), p);
  free_large(c, *static_cast<LargeSegment*>(s), p);
}

}  // namespace

MA_EXPORT void manyalloc_numa_free(void* p) noexcept {
  // The registry maps nullptr to no segment: free(NULL) takes the slow path.
  Segment* s = global().registry.lookup(p);
  // One compare: the thread has a heap and it owns s (runtime.hpp, t_owner).
  const std::uintptr_t owner = t_owner;
  if (SmallSegment* seg = owned_small(s, owner); seg != nullptr && heap_free_cached(*reinterpret_cast<Heap*>(owner), *seg, p))
      [[likely]]
    return;
  free_slow(p, s);
}

MA_EXPORT void* manyalloc_numa_calloc(std::size_t n, std::size_t size) noexcept {
  std::size_t total;
  if (__builtin_mul_overflow(n, size, &total)) return fail(ENOMEM);
  return alloc_slow(total, 16, true);
}

MA_EXPORT void* manyalloc_numa_realloc(void* p, std::size_t size) noexcept {
  if (p == nullptr) return manyalloc_numa_malloc(size);
  if (size == 0) {
    manyalloc_numa_free(p);
    return nullptr;
  }
  if (size > max_request) return fail(ENOMEM);
  Context& c = global();
  Segment* s = nullptr;
  const std::size_t old = usable_of(c, p, "realloc", &s);
  if (old == 0) return fail(EINVAL);
  if (s->kind == SegKind::small) {
    // Keep the chunk when the new size still fits and wastes under half.
    if (size <= old && (old <= 64 || size >= old / 2)) return p;
    // Small to small: straight to the heap and the owner's free fast path
    // (p's segment is known already).
    Heap* h = t_heap;
    if (size <= max_small && h != nullptr) {
      void* q = heap_alloc(*h, class_of(size));
      if (q == nullptr) return fail(ENOMEM);  // p is left intact
      std::memcpy(q, p, old < size ? old : size);
      small_free(c, h, *static_cast<SmallSegment*>(s), p);
      return q;
    }
  } else if (size > max_small) {
    if (void* q = large_realloc(c, *static_cast<LargeSegment*>(s), size)) return q;
    // mremap refused: fall back to copying into a new allocation.
  }
  void* q = alloc_slow(size, 16, false);
  if (q == nullptr) return nullptr;  // p is left intact
  std::memcpy(q, p, old < size ? old : size);
  manyalloc_numa_free(p);
  return q;
}

MA_EXPORT void* manyalloc_numa_reallocarray(void* p, std::size_t n, std::size_t size) noexcept {
  std::size_t total;
  if (__builtin_mul_overflow(n, size, &total)) return fail(ENOMEM);
  return manyalloc_numa_realloc(p, total);
}

MA_EXPORT void* manyalloc_numa_memalign(std::size_t align, std::size_t size) noexcept {
  if (align <= 16) return alloc_slow(size, 16, false);
  if (align > (SIZE_MAX >> 1) + 1) return fail(ENOMEM);
  if (align & (align - 1)) align = std::size_t{1} << (64 - __builtin_clzll(align));  // glibc rounds up
  return aligned_impl(align, size);
}

MA_EXPORT void* manyalloc_numa_aligned_alloc(std::size_t align, std::size_t size) noexcept {
  if (align == 0 || (align & (align - 1)) != 0) return fail(EINVAL);
  return aligned_impl(align, size);
}

MA_EXPORT int manyalloc_numa_posix_memalign(void** out, std::size_t align, std::size_t size) noexcept {
  if (align < sizeof(void*) || (align & (align - 1)) != 0) return EINVAL;
  const int saved = errno;
  void* p = aligned_impl(align, size);
  errno = saved;
  if (p == nullptr) return ENOMEM;
  *out = p;
  return 0;
}

MA_EXPORT void* manyalloc_numa_valloc(std::size_t size) noexcept {
  return aligned_impl(os_page, size);
}

MA_EXPORT void* manyalloc_numa_pvalloc(std::size_t size) noexcept {
  if (size > max_request) return fail(ENOMEM);
  size = size == 0 ? os_page : (size + os_page - 1) & ~(os_page - 1);
  return aligned_impl(os_page, size);
}

MA_EXPORT std::size_t manyalloc_numa_usable_size(void* p) noexcept {
  if (p == nullptr) return 0;
  return usable_of(global(), p, "malloc_usable_size");
}

MA_EXPORT int manyalloc_numa_owns(const void* p) noexcept {
  Segment* s = global().registry.lookup(p);
  if (s == nullptr) return 0;
  if (s->kind == SegKind::large) return large_is_start(*static_cast<LargeSegment*>(s), p);
  auto& seg = *static_cast<SmallSegment*>(s);
  const ChunkRef ch = find_chunk(seg, p);
  if (ch.run == nullptr) return 0;
  // Only the owner can read the free bitmap; for other threads the answer
  // is "p is a chunk start in a live run".
  if (seg.heap.load(std::memory_order_relaxed) != t_heap) return 1;
  OwnerLock hold(*t_heap);
  const Run& r = *ch.run;
  const std::uint32_t w = ch.idx >> 6;
  const std::uint64_t bit = std::uint64_t{1} << (ch.idx & 63);
  if ((r.free_word_or_all(w) & bit) || (r.remote_bits[w].load(std::memory_order_relaxed) & bit)) return 0;
  const FreeCache& fc = t_heap->cache[ch.cls];
  for (std::uint32_t k = 0, n = fc.count.load(std::memory_order_relaxed); k < n; ++k)
    if (t_heap->cache_stack(ch.cls)[k] == p) return 0;
  return 1;
}

// ---- NUMA -------------------------------------------------------------------

MA_EXPORT int manyalloc_numa_node_count(void) noexcept {
  ensure_init();
  const int n = topology_load(global());
  return n > 0 ? n : global().nodes.load(std::memory_order_relaxed);
}

MA_EXPORT void* manyalloc_numa_malloc_onnode(std::size_t size, int node) noexcept {
  if (node < 0 || node >= manyalloc_numa_node_count()) return fail(EINVAL);
  return alloc_slow(size, 16, false, node);
}

MA_EXPORT int manyalloc_numa_thread_node(void) noexcept {
  Heap* h = thread_heap();
  return h ? global().source_node(*h->source) : -1;
}

MA_EXPORT int manyalloc_numa_thread_migrate(int node) noexcept {
  if (!thread_heap_migrate(node)) {
    errno = EINVAL;
    return -1;
  }
  return 0;
}

MA_EXPORT int manyalloc_numa_thread_rebind(void) noexcept {
  ensure_init();
  const int node = topology_thread_node(global());
  thread_heap_migrate(node);
  return node;
}

// ---- statistics -------------------------------------------------------------

MA_EXPORT void manyalloc_numa_get_stats(manyalloc_numa_stats* out) noexcept {
  ensure_init();  // the options (profile, ...) are read at the first call of any kind
  if (out != nullptr) stats_gather(global(), *out);
}

MA_EXPORT void manyalloc_numa_print_stats(int fd) noexcept {
  ensure_init();
  stats_print(global(), fd);
}

MA_EXPORT void manyalloc_numa_trim(void) noexcept {
  Context& c = global();
  if (Heap* h = t_heap) heap_trim(*h);
  heap_trim_orphans(c);
  for (Source& s : c.sources) source_release_cache(c, s);
}

// ---- the standard names -----------------------------------------------------

#define MA_ALIAS(name, target) __attribute__((alias(#target), visibility("default"))) 
MA_EXPORT void* malloc(std::size_t) noexcept MA_ALIAS(malloc, manyalloc_numa_malloc);
MA_EXPORT void free(void*) noexcept MA_ALIAS(free, manyalloc_numa_free);
MA_EXPORT void* calloc(std::size_t, std::size_t) noexcept MA_ALIAS(calloc, manyalloc_numa_calloc);
MA_EXPORT void* realloc(void*, std::size_t) noexcept MA_ALIAS(realloc, manyalloc_numa_realloc);
MA_EXPORT void* reallocarray(void*, std::size_t, std::size_t) noexcept
    MA_ALIAS(reallocarray, manyalloc_numa_reallocarray);
MA_EXPORT void* memalign(std::size_t, std::size_t) noexcept MA_ALIAS(memalign, manyalloc_numa_memalign);
MA_EXPORT void* aligned_alloc(std::size_t, std::size_t) noexcept
    MA_ALIAS(aligned_alloc, manyalloc_numa_aligned_alloc);
MA_EXPORT int posix_memalign(void**, std::size_t, std::size_t) noexcept
    MA_ALIAS(posix_memalign, manyalloc_numa_posix_memalign);
MA_EXPORT void* valloc(std::size_t) noexcept MA_ALIAS(valloc, manyalloc_numa_valloc);
MA_EXPORT void* pvalloc(std::size_t) noexcept MA_ALIAS(pvalloc, manyalloc_numa_pvalloc);
MA_EXPORT std::size_t malloc_usable_size(void*) noexcept
    MA_ALIAS(malloc_usable_size, manyalloc_numa_usable_size);

// malloc_trim(3): returns 1 when memory was given back.
MA_EXPORT int malloc_trim(std::size_t) noexcept {
  manyalloc_numa_stats before;
  stats_gather(global(), before);
  manyalloc_numa_trim();
  manyalloc_numa_stats after;
  stats_gather(global(), after);
  return after.mapped_bytes < before.mapped_bytes ? 1 : 0;
}
