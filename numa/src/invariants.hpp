// Core data structures of the node allocator and their invariants.
//
// This is the one place that says what every field means and which thread may
// touch it; the .cpp files implement the transitions. Design after the MPC
// allocator ([Valat2014] part III "Allocator for HPC applications"):
//
//   OS  <-- macro-blocks (segments, >= 2 MiB) -->  memory sources (one per
//   NUMA node + one common)  <-- segments -->  per-thread local heaps, which
//   split segments into runs of equal-size chunks.
//
// Memory layout. All user memory lives in *segments*: mappings that start on
// a 2 MiB boundary and whose length is a multiple of 2 MiB. Because of that
// alignment, every 2 MiB "slot" of the address space belongs to at most one
// segment, and the registry (a page table with 2 MiB leaves, see registry.hpp)
// maps a slot to its segment descriptor without locks ([Valat2014]: "Tracking
// ownership with a lockfree register", "one macro-block can cover one entry").
//
// Metadata is kept apart from user data: descriptors (Segment, Run, Heap)
// live in a separate metadata area (meta_pool.hpp) that is never handed to
// users, free chunks are tracked in bitmaps inside the descriptors, and there
// are no chunk headers. A user who writes one byte past the end of a chunk
// damages at most the neighbouring chunk's data, never the allocator.
//
// Two kinds of segments:
//  * small segments (exactly 2 MiB) are owned by one local heap and cut into
//    64 pages of 32 KiB; a run is 1..64 aligned contiguous pages holding
//    chunks of one size class (size_class.hpp);
//  * large segments hold one allocation above max_small, placed at a varied
//    "colour" offset (large.hpp) so that big arrays do not all share the
//    same address modulo 4 KiB ([Valat2014] part II and backup "4K aliasing").
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "manyalloc/common/bits.hpp"
#include "manyalloc/common/mpsc_queue.hpp"
#include "manyalloc/common/spin_lock.hpp"
#include "size_class.hpp"

namespace manyalloc::numa {

struct Heap;
struct Source;

enum class SegKind : std::uint8_t { small = 1, large = 2 };

// Common header of both descriptor kinds; what the registry points to.
// Invariants: base % segment_bytes == 0, bytes % segment_bytes == 0, and the registry
// maps every slot of [base, base + bytes) to this descriptor while the range
// is mapped (whether in use or cached by a source). `source` is the source
// the memory returns to. `next`/`prev` link the descriptor into exactly one
// list at a time (a heap's segment lists or a source's cache), guarded by the
// owner of that list. `heap` is the owner of a small segment (see
// SmallSegment) and nullptr in a large one, which no heap owns: comparing
// it with a heap tells both the kind and the owner at once (heap.hpp,
// owned_small, which the free fast path calls with t_owner, runtime.hpp). A small segment's bytes are
// segment_bytes, so that the offset of p in it is p % segment_bytes.
struct Segment {
  SegKind kind;
  std::atomic<Heap*> heap;
  std::uint8_t* base;
  std::size_t bytes;
  Source* source;
  Segment* next;
  Segment* prev;
  std::uint64_t cached_at;  // OsOps::now() when it entered its source's cache
};

enum class RunState : std::uint8_t { unused, current, partial, full };

// A run: chunks of one class in pages [first_page, first_page + npages).
// Owner-side fields are touched only by the thread owning the segment's heap.
// Invariants (owner side, outside a transition):
//  * bit i of the free bitmap (words free_word(w): the first inline_words
//    in the descriptor, the others in the segment, see SmallSegment) is 1
//    iff chunk i is free and merged; bits >= nchunks are 0; free_count ==
//    its popcount;
//  * every free bit is in a word >= cursor;
//  * state == current iff the run is its bin's current run; partial iff it is
//    in the bin's partial list (then 0 < free_count); full iff it is in no
//    list (free_count == 0 when it became full; remote frees may since have
//    been queued);
//  * a run whose chunks are all free and merged is released (unused) unless
//    it is its bin's current run or was pinned (pins) when it became free.
//  * only words 0 .. hw + 1 of the free bitmap are stored; every chunk of a
//    word above them is free (free_word_or_all), and run_pop stores word
//    hw + 2 when hw grows. A thread that hands out fewer than 512 chunks of
//    a 16-48 B class thus never writes the run's overflow row, a descriptor
//    page of its own (cache-scratch, lowmem, 16 threads on the 2-core VM:
//    4 KiB less resident per thread);
//  * pages of the run past the chunks of words > hw were never written since
//    run_init (or were decommitted by the last purge, heap_purge.cpp): the purge
//    only looks at [0, words hw] and only at runs with `dirty` set.
// Remote side: remote_bits[w] bit i is 1 iff chunk i was freed by another
// thread and not yet merged. A bit is only ever set for a chunk that is
// allocated, so a run with pending remote bits is never released. `queued`
// is 1 iff the run is in the owner heap's remote-free queue (RFQ). `pins`
// counts the remote threads inside a publish (remote_free.cpp): their bits
// may be merged before they have queued the run, so the owner does not
// release a run with pins != 0 (it stays a partial run with every chunk
// free, which the next allocations of its class use).
struct alignas(64) Run {
  // Header: everything the fast paths read, in the first cache line.
  std::uint8_t* base;
  struct SmallSegment* seg;
  Run* next;            // bin's partial list
  Run* prev;
  std::uint32_t chunk_size;
  std::uint32_t nchunks;
  std::uint32_t free_count;
  std::uint32_t cursor;
  std::uint16_t cls;
  std::uint8_t first_page;
  std::uint8_t npages;
  RunState state;
  std::uint8_t dirty;  // chunks were merged into the free bitmap since the last purge
  std::uint8_t hw;     // highest bitmap word handed out since run_init or the last purge
  std::uint8_t popped;  // a chunk was handed out since run_init or the last purge
  // The first words of the free bitmap (all of it for classes from 64 B).
  alignas(64) std::uint64_t free_inline[inline_words];
  // Shared with remote threads, on their own cache line.
  alignas(64) std::atomic<std::uint64_t>* remote_bits;  // seg->remote_rows[first_page]
  std::atomic<std::uint64_t> remote_words;  // bit w: remote_bits[w] may be non-zero
  std::atomic<std::uint32_t> queued;
  std::atomic<std::uint32_t> pins;
  Run* qnext;  // RFQ link (owned by the queue while queued == 1)

  std::uint32_t nwords() const { return (nchunks + 63) / 64; }
  // Word w of the free bitmap (w <= hw + 1: stored).
  std::uint64_t& free_word(std::uint32_t w);
  std::uint64_t free_word(std::uint32_t w) const { return const_cast<Run*>(this)->free_word(w); }
  // The bits of word w when every chunk of it is free.
  std::uint64_t full_word(std::uint32_t w) const { return bits::low_mask64(nchunks - w * 64); }
  // Word w for any w < nwords(): the stored word or, above hw + 1, all free.
  std::uint64_t free_word_or_all(std::uint32_t w) const {
    return w <= hw + 1u ? free_word(w) : full_word(w);
  }
};
static_assert(sizeof(Run) == 192, "a run descriptor: owner's header, inline bitmap, remote line");

// Entry of SmallSegment::page_info for a page of a run of class cls that
// starts at page `first` (0 means: no run).
constexpr std::uint16_t page_info_of(unsigned cls, unsigned first) {
  return static_cast<std::uint16_t>((cls + 1) | (first << 8));
}
constexpr unsigned page_info_cls(std::uint16_t v) { return (v & 0xffu) - 1; }
constexpr unsigned page_info_first(std::uint16_t v) { return v >> 8; }

// A 2 MiB segment owned by one heap. Invariants: `heap` is set when a heap
// takes the segment from a source and cleared when it gives it back; it
// never changes in between (an exiting thread's heap is adopted as a whole,
// see runtime.hpp). Bit p of used_pages is 1 iff page p belongs to a run;
// then page_info[p] == page_info_of(cls, first) where runs[first] is that
// run (first == its first_page) and cls its class; page_info[p] == 0 iff
// page p belongs to no run, so that the owner's free reads one 16-bit entry
// to find both the class and the run start of a pointer (heap.hpp).
// used_pages and page_info are written by the owner and read (relaxed) by
// any thread that frees into the segment. Bit p of idle_pages (owner only)
// is 1 iff page p belongs to no run but may still be resident (a released
// run that was not decommitted); idle_pages & used_pages == 0. A segment in
// a source's cache keeps the idle pages it had when it was given back
// resident, with idle_old == 0, only while they are counted in
// Context::shared_idle_used and its source's idle_resident (the shared
// allowance pays for them, heap_runs.cpp, segment_release); the source
// gives them back to the allowance when a heap takes the segment (and
// counts them as its own idle pages), when the segment is unmapped, and
// decommitted when the allowance has aged below the shares or a heap finds
// no room on it (source.cpp, trim_resident_idle). Bit p
// of idle_old (owner only) is 1 iff page p was idle at the heap's last
// purge and has been since (heap_runs.cpp, "retained empty runs": the next purge
// decommits it); idle_old is a subset of idle_pages. Bit o of free_seen
// (owner only) is 1 iff OS page o of the segment held only free chunks of
// its run at that run's last purge and was left committed then
// (heap_purge.cpp, "aging"); the run's next purge decommits it if it is
// still free. A new run's pages start with their bits clear (run_new).
//
// Bitmaps. A run's descriptor holds the first inline_words words of its
// free bitmap (every class from 64 B needs no more in a 32 KiB run); the
// words after them, used by the 16, 32 and 48-byte classes only, are in
// free_overflow[first page], and the remote bitmap in remote_rows[first
// page] (row-major: remote threads freeing into two runs never share a
// line), which only remote frees touch. With the whole bitmap in the
// descriptor (32 words of each for 16-byte chunks, 640 bytes a run), a
// segment cut into one-page runs kept 11 descriptor pages resident (now 4); with every word outside (transposed), a thread allocating only
// 16-byte chunks made four bitmap pages resident for one run.
struct SmallSegment : Segment {
  std::atomic<PageMask> used_pages;
  std::atomic<std::uint16_t> page_info[pages_per_segment];
  bool in_full_list;
  PageMask idle_pages;
  PageMask idle_old;
  std::uint64_t free_seen[segment_bytes / os_page / 64];
  Run runs[pages_per_segment];
  std::uint64_t free_overflow[pages_per_segment][bitmap_words - inline_words];
  alignas(64) std::atomic<std::uint64_t> remote_rows[pages_per_segment][bitmap_words];
};

inline std::uint64_t& Run::free_word(std::uint32_t w) {
  return w < inline_words ? free_inline[w] : seg->free_overflow[first_page][w - inline_words];
}

// A large segment holding one allocation at base + offset. Owned by no heap:
// any thread frees it to `source` (under the source lock).
// Invariants while in use: offset + usable <= bytes; size <= usable;
// `touched` bounds the bytes of the mapping that may have been written
// (every byte past it reads as zero), so calloc clears only [0, touched).
struct LargeSegment : Segment {
  std::size_t offset;
  std::size_t size;
  std::size_t usable;
  std::size_t touched;
  std::atomic<std::uint32_t> in_use;  // 1 while handed to the user
  std::int32_t bound_node;           // node the pages are bound to, or -1
};

// Per-size-class bin of a heap.
struct Bin {
  Run* current;
  Run* partial;  // doubly linked through Run::next/prev
};

// Free cache of a bin: a stack of chunks of this heap freed by the owner and
// not yet written back to their runs' bitmaps (like the thread caches of
// jemalloc/tcmalloc, but outside user memory and only for the heap's own
// chunks, so memory never moves between heaps or NUMA sources through it).
// `cap` is the class's capacity (size_class.hpp, cache_capacity, or
// lowmem_cache_capacity; 0 above 8 KiB), 0 in the check mode, where every
// free goes to the bitmap and is verified at once. Invariants: count <= cap <=
// cache_capacity(class); each cached pointer is 16-byte aligned and
// lay, when it was pushed, in a page of a run of this class of this heap.
// When the program frees correctly it is the start of a chunk whose bitmap
// bit is 0 (allocated from the run's point of view); anything else (a double
// free, a pointer inside a chunk) is refused when the cache is written back
// (heap_cache_flush), which checks the pointer again in full. `count` is
// written by the owner only; it is atomic so that statistics can read it.
// The stack itself is stack[0 .. count), stack == Heap::cache_slots +
// cache_layout.first[class] from heap_init on (a pointer, so that the fast
// paths reach it without the layout table).
struct FreeCache {
  std::atomic<std::uint32_t> count;
  std::uint32_t cap;
  void** stack;
};

// Remote frees that the owner of a heap (the freeing thread) has gathered
// for one bitmap word of one run of another heap and not yet published
// (remote_free.cpp). Invariants: run == nullptr iff bits == 0; the bits are
// chunks of `run` that are allocated from its owner's point of view, so the
// run is not released while they wait; a batch waits at most until the
// freeing thread frees a chunk of another word of that class, takes an
// allocation slow path, trims or exits.
struct RemoteBatch {
  Run* run = nullptr;
  std::uint32_t word = 0;
  std::uint64_t bits = 0;
};

// A memory source: trades segments with the OS and caches them ([Valat2014]:
// "Memory source: manages requests to the OS, exchanges per macro-blocs
// larger than 2 MB, acts as a cache"). One common source (index 0) for
// threads that are not bound to a node and one per NUMA node ("memory sources
// with confidence levels"); sources never exchange memory with each other.
// Invariants: the cache lists, large_count and cached_bytes change only
// under `lock` (cached_bytes is atomic so that statistics read it without
// the lock); large_count is the length of large_cache; cached_bytes ==
// segment_bytes * (length of small_cache) + sum of cached large segments'
// bytes <= the cache budget (source.cpp, cache_budget: cache_max, in lowmem
// at least large_in_use_bytes / lowmem_large_live_share), but for the newest
// large segment freed, kept beyond it until the source maps or grows (the
// budget follows the live bytes: a shrinking realloc can leave the cache
// above it until the next give, split, map, grow or decay); every
// cached descriptor stays registered (a stale free finds a segment that is
// not in use and is reported). The lock is never held across a call that can
// allocate (hwloc, stats printing) or across a syscall that maps memory.
// Decay: a cached segment is unmapped once it has been cached for the
// decay delay of its kind (options, decay_ms, large_decay_ms) at the next
// source_decay (source.hpp);
// decay_next is the earliest time one expires (0: nothing cached). Both
// cache lists are ordered by cached_at, newest first (segments are pushed
// at the head).
// A source stores no node number: sources[i] of a context serves node i - 1
// (Context::source_node), so that setting up a context writes no source and
// a process that uses only the common one keeps one page of them resident.
struct Source {
  SpinLock lock;
  Segment* small_cache = nullptr;
  Segment* large_cache = nullptr;  // LargeSegment descriptors
  std::size_t large_count = 0;
  std::atomic<std::uint64_t> cached_bytes{0};
  std::atomic<std::uint64_t> decay_next{0};  // written under the lock
  // Resident idle pages of the cached small segments (their idle_pages),
  // held on Context::shared_idle_used; written under the lock.
  std::atomic<std::uint64_t> idle_resident{0};
  // Statistics, updated with relaxed atomics.
  std::atomic<std::uint64_t> mapped_bytes{0};
  std::atomic<std::uint64_t> large_in_use_bytes{0};
  std::atomic<std::uint64_t> os_maps{0};
  std::atomic<std::uint64_t> os_unmaps{0};
  std::atomic<std::uint64_t> remaps{0};
  std::atomic<std::uint64_t> reuses{0};
  std::atomic<std::uint64_t> faults_avoided{0};  // 4 KiB pages reused already touched
};

// Per-thread local heap ([Valat2014]: "Per thread local heap: lock free, manages
// small chunks, splits macro-blocs"). Everything except `rfq`, the statistics
// and the `orphan` flag is touched only by the owning thread (in lowmem, by
// the thread holding `merge_lock`, see below). A heap outlives
// its thread: at thread exit it gives its empty segments back and becomes an
// orphan; the next new thread adopts it whole (segments, bins, queued remote
// frees), so segment ownership never has to change piecewise.
//
// Idle-owner merge (lowmem only, `merge_for_owner`): a heap whose thread
// stops allocating (a main thread waiting in join while workers free what it
// allocated) never merges its RFQ, and the freed chunks stay resident until
// it wakes. In lowmem, another thread that queues a run on such a heap merges
// the queue and purges for the owner (heap_purge.cpp, heap_merge_for_owner). The
// owner then holds `merge_lock` during every operation on its runs, bins and
// segments (heap.hpp, OwnerLock: everything but the free cache fast paths,
// which touch only the cache), and the other thread only takes it with
// try_lock, once idle_merge_runs runs were queued since the queue was last
// taken (`rfq_pushes`; at every later free into the heap until then), so an
// owner that allocates keeps merging its own queue. Outside lowmem merge_for_owner is false and the lock is never used.
//
// Invariants: `avail` lists the owned small segments with a free page, `full`
// the others; each owned segment is in exactly one of them; at most
// keep_empty (1, heap_internal.hpp) segment without any run is kept (lowmem gives it
// back at its next purge); `idle_pages` is the sum of popcount(idle_pages)
// over the owned segments; bit c of `kept_empty` may be 1 only if
// bins[c].current was empty when it was last set (a run kept empty, which
// heap_runs.cpp's kept_pages counts while it stays empty); the idle pages plus
// the pages of the kept empty runs stay within the allowance (heap_runs.cpp,
// idle_allowance) plus `idle_borrowed` after every run release, apart from
// the run kept last ("retained empty runs"); `idle_borrowed` is the heap's
// share of Context::shared_idle_used (the shares of all heaps and the
// sources' resident idle pages, each taken only within shared_idle_cap; the
// cap may age below the sum until the holders look again: heap_runs.cpp,
// shared_idle_hold); an orphan keeps its share with its idle pages for the
// thread that adopts it, takes no more, and gives back what a live heap
// that finds no room lacks (reclaim_orphan_shares) and, in lowmem, what a
// merge for it finds unneeded (Context::orphan_shares counts it).
// Layout: the owner's fields first (fast paths: cache, bins), then the RFQ
// and the cache stacks (see there).
struct alignas(64) Heap {
  Bin bins[num_classes];
  // The entry the free fast path finds for a page of no run (page_info 0,
  // heap.hpp heap_free_cached): capacity 0, so the capacity check sends such
  // a pointer to the slow path without a test of its own. Never written.
  FreeCache cache_none{};
  FreeCache cache[num_classes];
  bool cache_on = false;  // !check option
  bool merge_for_owner = false;  // lowmem: see "Idle-owner merge" above (set at heap_init)
  SpinLock merge_lock;           // idle-owner merge: the owner's runs, bins and segments
  SmallSegment* avail = nullptr;
  SmallSegment* full = nullptr;
  unsigned empty_segments = 0;
  unsigned idle_pages = 0;  // run pages of no run that may be resident (SmallSegment)
  unsigned idle_cap = 0;    // allowance of idle pages (heap_runs.cpp, idle_allowance)
  bool idle_decommitted = false;  // the budget decommitted idle pages since idle_cap grew
  unsigned idle_borrowed = 0;     // idle pages kept beyond idle_cap on the process's shared allowance
  std::uint64_t kept_empty = 0;   // classes whose current run was kept empty (see above)
  std::uint8_t rfq_poll = 1;      // allocations from runs until the RFQ is checked (heap.hpp)
  Source* source = nullptr;
  struct Context* ctx = nullptr;
  // Statistics (written by the owner with relaxed stores, read by anyone).
  // Bytes of chunks taken out of run bitmaps (chunks in the free caches
  // included; stats.cpp subtracts those).
  std::atomic<std::uint64_t> small_in_use{0};
  std::atomic<std::uint64_t> remote_frees{0};
  std::atomic<std::uint64_t> purged_bytes{0};  // bytes decommitted by purges
  std::atomic<std::uint64_t> idle_merges{0};   // RFQ merges by other threads (lowmem)
  // Purge of free pages inside runs (heap_purge.cpp, heap_purge): bytes merged into
  // run bitmaps since the last purge, and the amount that triggers the next
  // (raised by a step when heap_purge_due defers it).
  std::uint64_t purge_credit = 0;
  std::uint64_t purge_at = 0;
  std::uint64_t purge_step = 0;  // purge_at right after a purge (set_purge_threshold)
  std::uint64_t purged_at = 0;  // OsOps::now() of the last purge (heap_purge)
  // Frees of other heaps' chunks waiting to be published, per class
  // (RemoteBatch); bit c of remote_batch_classes is 1 iff remote_batch[c]
  // holds a batch.
  std::uint64_t remote_batch_classes = 0;
  static_assert(num_classes <= 64, "remote_batch_classes has one bit per class");
  RemoteBatch remote_batch[num_classes];
  std::atomic<bool> orphan{false};
  Heap* all_next = nullptr;     // list of every heap (under Context::heaps_lock)
  Heap* orphan_next = nullptr;  // orphan list (under Context::heaps_lock)
  // Remote free queue (RFQ): runs that received remote frees, flushed by
  // the owner at its next allocation from a run ([Valat2014]: "RFQ flush on next
  // memory operation"; not on those served by the free cache, see heap.hpp),
  // at thread exit and on trim. On its own cache line: other threads write
  // it, and it used to share one with small_in_use, which the owner writes
  // at every allocation from a run.
  alignas(64) MpscQueue<Run, &Run::qnext> rfq;
  std::atomic<std::uint32_t> rfq_pushes{0};  // runs queued since the RFQ was taken (lowmem)
  // Bytes freed into this heap by other threads and not merged yet: chunk
  // sizes of the bits published into its runs' remote bitmaps and not yet
  // taken by a merge (remote_free.cpp). Part of small_in_use until merged.
  // Written by the freeing threads and the merge, on the RFQ's line.
  std::atomic<std::uint64_t> remote_pending{0};
  // The free cache stacks (FreeCache), last and line-aligned: a stack is
  // only written (made resident) once its class is used.
  alignas(64) void* cache_slots[cache_slot_count];

  void** cache_stack(unsigned cls) { return cache[cls].stack; }
};

}  // namespace manyalloc::numa
