// Per-thread local heaps (invariants.hpp, struct Heap and struct Run, for the
// invariants). The fast paths are inline: allocation pops the lowest free bit
// of the current run of the class; a local free sets a bit. No lock and no
// atomic read-modify-write on either path; a free by another thread goes to
// the owner's remote free queue (remote_free).
#pragma once

#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>

#include "context.hpp"

namespace manyalloc::numa {

// A chunk of a small segment, as found from a pointer (small_chunk_of).
struct ChunkRef {
  Run* run;
  std::uint32_t idx;
  unsigned cls;
};

void heap_init(Heap& h, Context& c, Source& s);

// The owner's hold of h.merge_lock for one operation on its runs, bins or
// segments (lowmem; invariants.hpp, "Idle-owner merge"); nothing outside lowmem.
// Taken at the owner's entry points only (heap_alloc_run's locked path,
// small_free_slow, trim, abandon, set_cache, migrate, owns): the functions
// they call expect it held and never take it again.
class OwnerLock {
 public:
  explicit OwnerLock(Heap& h) noexcept : lock_(h.merge_for_owner ? &h.merge_lock : nullptr) {
    if (lock_ != nullptr) lock_->lock();
  }
  ~OwnerLock() {
    if (lock_ != nullptr) lock_->unlock();
  }
  OwnerLock(const OwnerLock&) = delete;
  OwnerLock& operator=(const OwnerLock&) = delete;

 private:
  SpinLock* lock_;
};

// Idle-owner merge (lowmem): another thread, which has just published frees
// to h while idle_merge_runs or more runs wait in h's RFQ (remote_free.cpp),
// merges the RFQ and purges if due, unless h's merge lock is taken (the
// owner is busy and merges itself). Never touches the free caches.
void heap_merge_for_owner(Heap& h);

// Turns the free caches on (capacities of size_class.hpp) or off (check
// mode: every free goes to the bitmap); owner only.
void heap_set_cache(Heap& h, bool on);

// Slow path of heap_alloc: current run exhausted or missing.
void* heap_alloc_slow(Heap& h, unsigned cls);

// Merges the frees queued by other threads (owner only).
void heap_flush_remote(Heap& h);

// State change after chunks of r were freed and merged (owner only).
void heap_after_free(Heap& h, Run& r);

// Another thread (or one without a heap) frees chunk `idx` of run r at
// once (remote_free.cpp).
void heap_free_remote(Context& c, Run& r, std::uint32_t idx);
// The thread of heap `self` frees chunk `idx` of run r of another heap: the
// free joins self's batch for r's class (RemoteBatch, invariants.hpp) and is
// published with it. Only with the free cache on (the check mode reports
// a double free at once).
void heap_free_remote_batched(Heap& self, ChunkRef chunk);
// Publishes self's pending batches (owner of self only): at every
// allocation slow path, trim and thread exit.
void heap_remote_batch_flush(Heap& self);

// Thread exit: flush, give back empty segments, keep the rest for adoption.
void heap_abandon(Heap& h);

// Gives back every empty segment the heap keeps (malloc_trim).
void heap_trim(Heap& h);
// Decommits the idle pages of the heaps of exited threads (orphans) and
// gives their shares of the shared idle allowance back (malloc_trim: they
// stay resident for the threads that adopt the heaps otherwise). Under
// heaps_lock, as reclaim_orphan_shares (heap_runs.cpp); an orphan whose
// merge lock is busy (lowmem) is skipped.
void heap_trim_orphans(Context& c) noexcept;

// Purge: decommits (madvise(MADV_DONTNEED)) the OS pages of the heap's runs
// that hold only free chunks, so that the resident memory follows the bytes
// in use instead of the high-water mark of every size class. Triggered when
// the bytes merged into run bitmaps since the last purge reach `purge_at`
// (a small amount in the lowmem profile, a large one otherwise); lowmem
// also writes the free caches back first. The bins' current runs are left
// alone unless `all` (thread exit in lowmem, malloc_trim) or nothing was
// allocated from them since the last purge. Unless `all`, a free range
// between live chunks is kept when it is shorter than 16 KiB
// (heap_purge.cpp, min_purge_range), and a free page goes back only at the
// second purge that finds it free (heap_purge.cpp, "aging"). Owner only.
void heap_purge(Heap& h, bool all = false);
// Whether the purge that purge_at asks for may run now: purges it triggers
// are at least the purge_ms option apart (numa/README.md, "Options"), so
// that the pages a purge leaves for the next one (aging, heap_purge.cpp)
// have been free that long however fast the program frees. One asked for
// earlier is asked again after another purge step of frees, and granted
// anyway once the heap has freed a few steps since its last purge
// (heap_internal.hpp, max_purge_steps). Records the time when it says yes.
bool heap_purge_due(Heap& h);
inline void heap_maybe_purge(Heap& h) {
  if (h.purge_credit >= h.purge_at) [[unlikely]]
    if (heap_purge_due(h)) heap_purge(h);
}

// Finds the run, chunk index and class of p inside a small segment, or
// {nullptr} when p is not the start of a chunk of a live run. Reads the
// page's entry and the constant class table, never the run descriptor: its
// first cache line is the owner's (run_pop writes it at every allocation),
// and a remote free that read it made the producer and the consumer of
// xmalloc fight over that line.
inline ChunkRef find_chunk(SmallSegment& seg, const void* p) {
  const std::size_t off = static_cast<std::size_t>(static_cast<const std::uint8_t*>(p) - seg.base);
  const std::uint16_t info = seg.page_info[off >> page_shift].load(std::memory_order_relaxed);
  if (seg.heap.load(std::memory_order_relaxed) == nullptr || info == 0) [[unlikely]]
    return ChunkRef{nullptr, 0, 0};
  const unsigned cls = page_info_cls(info);
  const ClassInfo& ci = class_table.info[cls];
  const std::size_t roff = off - static_cast<std::size_t>(page_info_first(info)) * page_bytes;
  const std::uint32_t i = divide(roff, ci.recip);
  if (i >= ci.chunks || static_cast<std::size_t>(i) * ci.size != roff) [[unlikely]]
    return ChunkRef{nullptr, 0, 0};
  return ChunkRef{&seg.runs[page_info_first(info)], i, cls};
}

// find_chunk that reports a pointer which is no chunk start as a misuse of
// `where`.
inline ChunkRef small_chunk_of(Context& c, SmallSegment& seg, const void* p, const char* where) {
  const ChunkRef ch = find_chunk(seg, p);
  if (ch.run == nullptr) [[unlikely]]
    misuse(c, where, Misuse::not_a_chunk_start, p);
  return ch;
}

// Marks chunks `bits` of bitmap word w of r free (the owner; every bit of
// `bits` clear in the word): the word, the cursor (every free bit lies at
// or after it) and the dirty flag. The caller counts them in free_count.
inline void run_merge_bits(Run& r, std::uint32_t w, std::uint64_t bits) {
  r.free_word(w) |= bits;
  if (w < r.cursor) r.cursor = w;
  r.dirty = 1;
}

// Counts `bytes` of chunks freed into run bitmaps in the heap's byte
// counters (before heap_after_free, which reads them).
inline void heap_count_freed(Heap& h, std::uint64_t bytes) {
  h.purge_credit += bytes;
  h.small_in_use.store(h.small_in_use.load(std::memory_order_relaxed) - bytes, std::memory_order_relaxed);
}

// Owner frees chunk `idx` of run r.
inline void heap_free_local(Heap& h, Run& r, std::uint32_t idx) {
  const std::uint32_t w = idx >> 6;
  const std::uint64_t bit = std::uint64_t{1} << (idx & 63);
  if (r.free_word_or_all(w) & bit) [[unlikely]] {
    misuse(*h.ctx, "free", Misuse::double_free, r.base + static_cast<std::size_t>(idx) * r.chunk_size);
    return;
  }
  run_merge_bits(r, w, bit);
  heap_count_freed(h, r.chunk_size);
  if (++r.free_count == r.nchunks || r.state == RunState::full) [[unlikely]]
    heap_after_free(h, r);
}

inline void* run_pop(Heap& h, Run& r) {
  std::uint32_t w = r.cursor;
  std::uint64_t bits;
  while ((bits = r.free_word(w)) == 0) ++w;  // free_count > 0: a bit is set at >= cursor
  const unsigned b = static_cast<unsigned>(__builtin_ctzll(bits));
  r.free_word(w) = bits & (bits - 1);
  r.cursor = w;
  if (w > r.hw) [[unlikely]] {  // w == hw + 1: store the next word (invariants.hpp, Run)
    r.hw = static_cast<std::uint8_t>(w);
    if (w + 1 < r.nwords()) r.free_word(w + 1) = r.full_word(w + 1);
  }
  --r.free_count;
  r.popped = 1;
  h.small_in_use.store(h.small_in_use.load(std::memory_order_relaxed) + r.chunk_size,
                       std::memory_order_relaxed);
  return r.base + (static_cast<std::size_t>(w) * 64 + b) * r.chunk_size;
}

// Takes up to `want` (>= 1) free chunks of r (free_count != 0), all from
// the first bitmap word that has one, lowest address first, and writes
// them to out[want - 1], out[want - 2], ... (so that a stack ending at
// out[want - 1] hands the lowest out first). Returns how many: fewer than
// `want` when the word holds fewer free chunks.
inline std::uint32_t run_take(Heap& h, Run& r, void** out, std::uint32_t want) {
  std::uint32_t w = r.cursor;
  std::uint64_t bits;
  while ((bits = r.free_word(w)) == 0) ++w;  // free_count > 0: a bit is set at >= cursor
  const std::size_t size = r.chunk_size;
  const std::uintptr_t first =
      reinterpret_cast<std::uintptr_t>(r.base) + static_cast<std::size_t>(w) * 64 * size;
  void** const end = out + want;
  void** o = end;  // out[want - 1] first, downwards
  do {
    const auto b = static_cast<unsigned>(std::countr_zero(bits));
    *--o = reinterpret_cast<void*>(first + b * size);
    bits &= bits - 1;
  } while (o != out && bits != 0);
  const auto k = static_cast<std::uint32_t>(end - o);
  r.free_word(w) = bits;
  r.cursor = w;
  if (w > r.hw) [[unlikely]] {  // w == hw + 1: store the next word (invariants.hpp, Run)
    r.hw = static_cast<std::uint8_t>(w);
    if (w + 1 < r.nwords()) r.free_word(w + 1) = r.full_word(w + 1);
  }
  r.free_count -= k;
  r.popped = 1;
  h.small_in_use.store(h.small_in_use.load(std::memory_order_relaxed) + k * size,
                       std::memory_order_relaxed);
  return k;
}

// Writes the cached chunks of class cls back to their runs (all, or the
// older half, at least one, when `half`).
void heap_cache_flush(Heap& h, unsigned cls, bool half);
void heap_cache_flush_all(Heap& h);

// Most chunks one refill takes: a bitmap word's (run_take reads one word).
inline constexpr std::uint32_t refill_max = 64;

// An allocation of class cls from r, a run of that class with a free chunk,
// when the free cache of cls is empty (owner only): the cache is refilled
// with up to half its capacity, at most refill_max, from one bitmap word of
// r and its top chunk handed out, so that the next allocations of the
// class take the cache's fast path (a program holding more live chunks of
// a class than the cache takes would otherwise come to the run at every
// allocation). Without a cache (check mode) or with one of under four
// chunks, one chunk.
inline void* heap_refill(Heap& h, Run& r, unsigned cls) {
  const std::uint32_t want = std::min(h.cache[cls].cap / 2, refill_max);
  if (want <= 1) return run_pop(h, r);
  void** stack = h.cache_stack(cls);
  const std::uint32_t k = run_take(h, r, stack, want);
  if (k < want) [[unlikely]]  // the chunks are at stack[want - k, want): move them down
    for (std::uint32_t i = 0; i < k; ++i) stack[i] = stack[want - k + i];
  h.cache[cls].count.store(k - 1, std::memory_order_relaxed);
  return stack[k - 1];
}

// Allocations from runs between two merges of the RFQ.
inline std::uint8_t rfq_poll_every(const Heap& h) { return h.cache_on ? rfq_poll_interval : 1; }

// Allocation from the bin's current run (the free cache is empty), with
// the merge lock held if the heap uses it.
inline void* heap_alloc_run_owned(Heap& h, unsigned cls) {
  // Remote frees are merged every rfq_poll_interval-th allocation from a run
  // (a refill of the free cache, below, is one) and whenever a run is exhausted (heap_alloc_slow); never before those
  // served by the free cache. Reading the queue's line more often makes
  // producer/consumer pairs ping-pong it (numa/DESIGN.md, "Figures moved out
  // of the code"). In check mode (no cache) it is every
  // operation, so that a double free across threads is reported at once
  // (rfq_poll_every, heap_set_cache).
  if (--h.rfq_poll == 0) [[unlikely]] {
    h.rfq_poll = rfq_poll_every(h);
    if (!h.rfq.maybe_empty()) heap_flush_remote(h);
  }
  Run* r = h.bins[cls].current;
  if (r != nullptr && r->free_count != 0) [[likely]]
    return heap_refill(h, *r, cls);
  return heap_alloc_slow(h, cls);
}
void* heap_alloc_run_locked(Heap& h, unsigned cls);  // OwnerLock + heap_alloc_run_owned

inline void* heap_alloc_run(Heap& h, unsigned cls) {
  if (h.merge_for_owner) [[unlikely]]
    return heap_alloc_run_locked(h, cls);
  return heap_alloc_run_owned(h, cls);
}

// &h.cache[index - shift], computed from the array's address as an
// integer: the compiler then folds the array's offset in the Heap (and the
// shift) into the loads' displacement, a shift and an add on the fast paths
// where indexing the array cost four to six instructions with GCC 12.
// index - shift must name an entry, or be -1, which names Heap::cache_none
// (no pointer past either is formed).
template <std::size_t shift = 0>
inline FreeCache* cache_entry(Heap& h, std::size_t index) {
  return reinterpret_cast<FreeCache*>(reinterpret_cast<std::uintptr_t>(h.cache) + index * sizeof(FreeCache) -
                                      shift * sizeof(FreeCache));
}

// Takes the latest chunk of fc, which holds n != 0 (a separate step, so
// that malloc's fast path tests n once instead of n and the chunk).
inline void* cache_pop(FreeCache& fc, std::uint32_t n) {
  fc.count.store(n - 1, std::memory_order_relaxed);
  return fc.stack[n - 1];
}

// The latest freed chunk of class cls from the free cache, or nullptr.
inline void* heap_alloc_cached(Heap& h, unsigned cls) {
  FreeCache& fc = h.cache[cls];
  const std::uint32_t n = fc.count.load(std::memory_order_relaxed);
  return n == 0 ? nullptr : cache_pop(fc, n);
}

inline void* heap_alloc(Heap& h, unsigned cls) {
  if (void* p = heap_alloc_cached(h, cls)) [[likely]]
    return p;
  return heap_alloc_run(h, cls);
}

// Owner's free fast path: p lies in seg, which belongs to h. Pushes p on
// the free cache of the class of its page. Only what costs no extra load
// is checked here: the page belongs to a run and p is 16-byte aligned (every
// chunk is). Whether p is a chunk start, and not a chunk freed twice, is
// checked when the cache is written back to the runs (heap_cache_flush),
// as in the thread caches of jemalloc or tcmalloc: until then a bad
// pointer may be handed out again (user data, never metadata, is at stake;
// the check mode has no cache and verifies every free at once). Checking
// both here costs the fast path too much (numa/DESIGN.md, "Figures moved
// out of the code"). False when p needs
// the slow path: full or disabled cache, or p fails those checks
// (small_free_slow reports it).
inline bool heap_free_cached(Heap& h, SmallSegment& seg, void* p) {
  // seg.base is p rounded down to segment_bytes (invariants.hpp, Segment).
  const auto a = reinterpret_cast<std::uintptr_t>(p);
  const std::atomic<std::uint16_t>* slot = seg.page_info + ((a >> page_shift) & (pages_per_segment - 1));
  const std::uint16_t info = slot->load(std::memory_order_relaxed);
  if ((a & 15) != 0) [[unlikely]]
    return false;
  // The entry of page_info_cls(info) == (info & 0xff) - 1, whose - 1
  // becomes part of the displacement instead of an instruction; for
  // info == 0 (no run: the low byte of a run page's info is its class + 1)
  // that is Heap::cache_none, whose capacity 0 fails the check below.
  static_assert(offsetof(Heap, cache) == offsetof(Heap, cache_none) + sizeof(FreeCache),
                "cache_none is the entry just before cache[0]");
  FreeCache& fc = *cache_entry<1>(h, std::size_t{info & 0xffu});
  const std::uint32_t n = fc.count.load(std::memory_order_relaxed);
  if (n >= fc.cap) [[unlikely]]
    return false;
  fc.stack[n] = p;
  fc.count.store(n + 1, std::memory_order_relaxed);
  return true;
}

// Frees p, a pointer into small segment seg, after the fast path declined
// (or for another thread's chunk); self is the calling thread's heap or
// nullptr.
void small_free_slow(Context& c, Heap* self, SmallSegment& seg, void* p);

// A heap's owner key: its address as an integer (what owned_small compares).
inline std::uintptr_t owner_key(const Heap& h) { return reinterpret_cast<std::uintptr_t>(&h); }

// s as a small segment owned by the heap whose owner key is `owner`, or
// nullptr (s null, a large segment, another heap's or no heap's segment).
// `owner` is owner_key of a heap or a value no heap's address takes (the
// free fast path passes t_owner, runtime.hpp, which is no_owner while the
// thread has no heap), never 0: Segment::heap is a heap or nullptr (a large
// or unowned segment, invariants.hpp), so one compare checks kind and owner.
inline SmallSegment* owned_small(Segment* s, std::uintptr_t owner) {
  if (s == nullptr || reinterpret_cast<std::uintptr_t>(s->heap.load(std::memory_order_relaxed)) != owner)
    return nullptr;
  return static_cast<SmallSegment*>(s);
}

inline void small_free(Context& c, Heap* self, SmallSegment& seg, void* p) {
  if (self != nullptr && owned_small(&seg, owner_key(*self)) != nullptr && heap_free_cached(*self, seg, p)) [[likely]]
    return;
  small_free_slow(c, self, seg, p);
}

// Bytes in use in small chunks of h (owner only, or a racy estimate).
std::uint64_t heap_small_in_use(const Heap& h);

}  // namespace manyalloc::numa
