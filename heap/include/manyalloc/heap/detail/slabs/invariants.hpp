// The data structures of the SizeClassSlabs heap and the invariants every
// operation keeps. Everything else in detail/slabs/ is algorithms over these.
//
// Pool layout (one contiguous pool from the ReservePoolPolicy; every
// metadata word starts at zero, which is the state of an empty heap):
//
//   [ SlabShared | class slots | page table | chunk bitmaps | page bitmap |
//     busy hints | full hints | partial hints | pad ][ page 0 | page 1 | ... ]
//
// The data area is split into pages of `slab_bytes` (a power of two), the
// pages start at a `slab_bytes`-aligned address, so the page of a pointer is
// one subtraction and one shift away. A page is either free, a slab of one
// size class (split into equal chunks), or part of a run of whole pages that
// one large request owns.
//
// Page bitmap `taken` (one bit per page, 1 = not free) -- invariants:
//  P1 A page is handed to one owner (a slot's segment, a warp's private slab
//     pages, or a large run) by an atomic OR of its run's mask that found
//     every bit of the mask clear; it returns to the pool by the atomic AND
//     that clears it. An OR that found some bit of its mask set hands out
//     nothing and gives back the bits it set (a lost race of
//     PagePool::try_word, a miss of a blind try_word_at); until then those
//     pages look taken to other claimers.
//  P2 The sum of `taken` counters in SlabShared equals the number of set
//     bits once the claims and releases in flight have finished (claimers
//     add after their OR succeeded, releasers subtract before their AND).
//     A claim or release of pages of word w updates counter
//     w % taken_shards (a run of whole words: the counter of its first word
//     per batch), so that concurrent claims do not all update one word. Only
//     the sum means anything: a counter alone may wrap below zero.
//  P3 Bits at or above the usable page count (page_count - unmapped_pages)
//     are treated as set by every search and are never set in memory.
//  P4 (placement, a rule for speed and room, not for safety) The top
//     Config::large_zone_eighths eighths of the words (SlabLayout::
//     small_words and up) are the large-request zone. Runs of at most 32
//     pages (slot segments, a warp's private slab, small large requests)
//     start their search at a word hashed over the words below the zone,
//     so that a refill's first word is almost always empty and concurrent
//     refills rarely meet; the first try there is a blind OR at a place of
//     that word picked by a second hash (a multiple of the run's length),
//     so runs that start at one word spread over it instead of packing from
//     its low end, and only a miss reads the word; their searches wrap at
//     the zone's bottom and go on into the zone only once no word below it
//     has room. Runs of whole
//     words search from the top of the usable pages down (in a pool that
//     grows, a run taken before a growth lies below the pages the growth
//     adds), so they take the zone first -- once the zone's pages are
//     mapped: the zone is the top of the reserved words, and while a
//     growing pool maps fewer, its long runs come from below the zone.
//     Without the zone, slot segments spread over the whole pool left no
//     long run of free words while most pages were free; a window sized
//     by a count of busy words cost that count's atomics on every claim,
//     and packing small runs at the low end made refills search
//     (docs/results/heap/peers/placement_probe, large_claim_probe).
//
// Hint words (one bit per word of `taken`; a two-level summary tree of
// fan-out 32 over the pages): `busy` bit set = the word has a taken page,
// `full` bit set = the word has no free page. They are hints: after a change
// that may make a hint wrong, the changer re-reads the word and corrects it
// (the pattern of Scatter's region words), so a hint is wrong only while an
// operation on its word is in flight. Searches verify every hint with the
// atomic operation that claims. A run inside one word is reported as out of
// memory only after a final pass without hints; a run of whole words trusts
// the `busy` hints, so a request that finds none reads only hint words
// (O(pool / 8192 pages) rounds of loads) and misses a free word only while
// an operation on it is in flight.
//
// Page table entry SlabPage -- invariants:
//  S0 `cls` and `used` are the two halves of one 64-bit word (the page's
//     state, SlabPage::state_of): a new owner writes both with one store,
//     so no reader ever pairs a class with another slab's count (C6 acts
//     on pages it does not own). used != 0 only on the first page of a
//     live slab: a slab's other pages get used 0, and a slab retires at 0.
//  S1 cls == 0 or a page whose bit in `taken` is clear: the page is free
//     (a retired slab keeps its old cls and lead until its next owner
//     rewrites them), or, with cls == 0 or a stale class, a body page of a
//     large run. No chunk of the slab its entry names is allocated and that
//     slab's chunk bits are all zero, so a free of a pointer into it is
//     reported (double free) -- unless the page, or the first page its stale
//     lead names, has meanwhile become part of another slab, which no check
//     of a pointer alone can tell from a live chunk.
//  S2 1 <= cls <= class_count: the page belongs to a slab of size class
//     cls-1. A slab is `run` consecutive pages of one word of `taken`: one
//     page when it is a page of a slot's segment, up to 32 pages when a
//     group of lanes took them whole for itself (then at most 32 chunks in
//     all). Every page stores its distance from the slab's first page in
//     `lead`; the first page (lead 0) holds the slab's `run` and `used` and
//     the bits of all the slab's chunks (chunk i lies in page first + i /
//     chunks per page): in `used` itself (below) when the class has at most
//     state_bit_chunks chunks per page, in its entry's `bits` when it has at
//     most entry_chunks (a free then finds count and bits on the sector it
//     read the class from, which its own load has just brought into the
//     cache), else in its chunk bitmap (SlabLayout::chunk_word).
//     So a warp that frees a 4-page slab of 8 KiB chunks clears its bits and
//     learns that the slab is empty with one atomic, and returns four pages
//     with one more.
//     `used` counts the chunks of the slab that are not free -- as a number,
//     or, for a class of at most state_bit_chunks chunks per page (so every
//     slab of it has at most that many), as a set of bits, bit i for chunk
//     i, which are then the slab's chunk bits (S3) too: a free clears its
//     chunks' bits and learns whether the slab is empty with one atomic AND
//     on the state word, and a reuse (C6) sets one with the CAS that
//     reserves it. Whatever the form: every chunk
//     counts from the moment the slab's pages were claimed (a segment
//     cursor passes every chunk of a segment exactly once, or the group
//     that took the pages gets them all at once); a free subtracts it, and
//     so does the end of a segment for the chunks its cursor never reached;
//     a reuse (C6) adds it again. So `used` reaches 0 once per slab, when
//     no chunk is left in use and none can be handed out; the update that
//     takes it to 0 clears the slab's bits in `taken` (retire).
//  S3 A chunk's bit among its slab's chunk bits is set from before its
//     pointer is handed to a worker until its free clears it, so a second
//     free of a chunk finds it clear, and a retired slab's bits are all zero.
//     For a class without C6 whose bits are not in the state the claim sets
//     it, so a free of a chunk never handed out finds it clear too. For the
//     other classes the claim of the slab's pages sets them all
//     (init_pages), so a chunk a cursor has not reached yet is set as well,
//     and the end of its segment clears it; a reuse sets it again. So in a
//     live slab a clear bit is a free chunk; bits are cleared before `used`
//     is lowered and set after it is raised (for bits in the state, in the
//     same atomic), so a slab always has at least (chunks - used) clear bits
//     (in the bit form: chunks - popcount(used)).
//  S4 cls == large_head: the page starts a run of `run` whole pages owned by
//     one large request; the other pages of the run keep what cls they had
//     (S1). The free that swaps cls from large_head to 0 owns the release of
//     the run, so a free page never keeps large_head.
//
// Class slots (ScatterAlloc's hashing replaced by sharding): for each size
// class `shards` 64-bit words, each describing the segment its shard hands
// chunks from:
//
//   bits 63..58  generation (changes on every exchange of the segment)
//   bits 57..55  log2 of the segment's pages (1..32 pages)
//   bits 54..32  first page of the segment + 1 (0: no segment)
//   bits 31..0   cursor: chunks of the segment claimed so far (may run past
//                the end; only claims below it are chunks)
//
//  C1 One atomic add of n to a slot claims chunks [cursor, cursor + n) of
//     the segment it names, together with the segment, so no lock is needed.
//  C2 The claim with cursor <= end < cursor + n (end = chunks in the segment)
//     exists exactly once per segment: its worker takes the chunks up to the
//     end and must replace the segment (refill) by an exchange of the whole
//     slot; workers whose claim starts past the end wait for the exchange
//     and retry. A refill that finds no pages stores an empty slot (end 0),
//     so the next claim (cursor 0) is again the unique refiller.
//  C3 A segment's pages belong to it from the claim of their bits to the
//     moment their chunks are all handed out; a page is retired only by S2.
//  C4 `open_pages` counts the pages of segments in slots (reserved by the
//     refill that opens a segment before it claims them, one atomic add,
//     and given back for the pages it did not get; subtracted by the refill,
//     shrink or close that ends or shortens a segment). A refill shortens
//     its segment so that the count stays within `open_budget` (an eighth of
//     the pages), down to one page: open segments never hold much more than
//     the budget plus one page per slot, however many slots refill at once.
//     With Config::demand_sized_segments a refill wants only as many pages
//     as the chunks claimed past the old segment's end need (the slot's
//     cursor, read beside the reservation), at least twice the old
//     segment's, one where the slot had none: a first launch that touches
//     many (class, shard) slots with a few requests each opens a page in
//     each instead of a full segment (FineSizeClassesConfig's hundreds of
//     classes). A slot's segment at least doubles from one refill to the
//     next, and is the full one at once when the waiting requests need it.
//  C5 A pool that runs out keeps started pages usable: a refill that finds
//     no page shrinks every open segment to the page its cursor is in (the
//     pages after it go back to the pool), and a request that finds nothing
//     of its class takes a chunk of a larger class. A chunk's class is that
//     of its page (S2), so a free never needs to know which class was asked.
//  C6 (for the classes of at least Config::reuse_freed_chunks_from_bytes;
//     the others take no part in it) A request whose group found no chunk
//     of its class in C1-C3 because its slot's refill found no free page
//     takes a freed chunk of a live slab of its class: it raises the slab's
//     `used` by one with a CAS on the state word (S0) that keeps the class
//     and requires 0 < used < chunks, then sets one clear bit (S3 says there
//     is one); where the bits are the state (S2), the CAS itself sets one
//     clear bit, requiring a set one and a clear one among the slab's chunks
//     (a bit it sets beyond them, named by a `run` read before the CAS, is
//     given back as a free gives a chunk back, and the give-back sets the
//     slab's hint unless the slab retired). Any other request of such a
//     class that found no chunk, not even of a larger class (C5), does the
//     same before it fails. The slab cannot retire or change shape while the
//     reservation holds `used` above 0. Such slabs are found through the
//     `partial` hints (one bit per page, a word per 32 pages): the free, or
//     the end of a segment, that lowers a slab's `used` from its chunk count
//     (in the bit form: clears a bit while every chunk's bit was set) sets
//     its first page's bit after the update; a search that finds a bit on a page
//     that is no slab with free chunks of a class with C6 clears it, then
//     re-reads the state and sets it again if a free came in between. So
//     every slab with free chunks has its bit set once the frees in flight
//     have finished.
//     C6 needs S3's bits set at the claim of the pages: were they set by the
//     claims of chunks, a claim whose bit update is still in flight (its
//     warp stalled after the slot's add) would leave a handed-out chunk
//     looking free to a search.
//     Before it fails, a request of any class takes a freed chunk of a live
//     slab of a larger class with C6 (the chunk keeps its slab's class, S2),
//     found through the `partial` hints of a bounded number of words and
//     pages.
//  C7 (the last resorts stay cheap in a pool that stays full) One flag word
//     per class, `class_flags`, holds two hints:
//     - room_flag set: a slot of the class may hand out chunks. Every refill
//       that installs a segment sets it after the slot's exchange. A request
//       that looks for a larger class's chunk (C5) reads the flags first and
//       visits the slots of flagged classes only; finding none with room, it
//       clears the flag, then reads the slots again and sets it back if one
//       has room. The flag is a hint: it can be clear while a slot has room
//       (a refill's flag update may become visible before its exchange, and
//       a search may clear the flag in between), until the class's next
//       refill sets it again. A request that misses a class so takes another
//       source or fails; the class's own requests never read the flag.
//     - shrink_flag set: a refill installed a segment of more than one page
//       since the class's last shrink (C5) began. A refill that finds no page
//       shrinks the segments of the classes whose flag is set (clearing it
//       first), and those of every class once in 64 such refills (a started
//       page whose handed-out chunks have all come back is dropped by a
//       shrink too), so that the dry refills of a pool that stays full do
//       not each read every slot of every class.
//
// SlabShared: `misuse` and `last_misuse` count reported misuse of the
// public API; `taken` holds P2's counters; `open_pages` C4's;
// `dry_refills` counts refills that found the pool without a free page;
// `unmapped_pages` shrinks the usable page count (P3) for pools that grow:
// the host sets it before workers run, and workers only lower it, after the
// pages it gives them were mapped (a growth while they run);
// `reused_chunks` counts C6's reuses; `growth_lock` is the lock of
// detail/growth_mailbox.hpp (M1); `mapped_end` is the end (an address) of
// the mapped part of the pool as the heap was last told it, the largest end
// given to set_mapped_end or extend_mapped_end since set_mapped_end (M5):
// workers whose requests wait for a growth read it here, in device memory,
// instead of the host's words.
#pragma once

#include <cstddef>
#include <cstdint>

#include "manyalloc/common/platform.hpp"

namespace manyalloc::heap::detail::slabs {

// One 32-byte sector per page.
struct alignas(32) SlabPage {
  std::uint32_t cls;   // 0, class index + 1, or large_head (S1, S2, S4); low half of the state (S0)
  std::uint32_t used;  // chunks of the slab not free, a count or a bit each (S2; first page of a slab); high half of the state
  std::uint32_t run;   // pages of a large run (S4) or of a slab (S2; its first page)
  std::uint32_t lead;  // pages from the first page of the page's slab (S2)
  std::uint32_t bits[4];  // chunk bits of a slab of state_bit_chunks + 1 to entry_chunks chunks per page (S2, S3; its first page)
};

// Classes of at most this many chunks per page keep their chunk bits in the
// state word's `used` half, as bits (S2).
inline constexpr std::uint32_t state_bit_chunks = 32u;

// Other classes of at most this many chunks per page keep their chunk bits
// in the page's entry (SlabPage::bits).
inline constexpr std::uint32_t entry_chunks = 32u * (sizeof(SlabPage::bits) / sizeof(std::uint32_t));
static_assert(sizeof(SlabPage) == 32, "a page entry is one 32-byte sector");
static_assert(offsetof(SlabPage, cls) == 0 && offsetof(SlabPage, used) == 4 && offsetof(SlabPage, run) == 8 &&
                  offsetof(SlabPage, lead) == 12 && offsetof(SlabPage, bits) == 16,
              "cls and used form one 64-bit word (S0), run and lead the next; the bits are 16-byte aligned");

// S0: the page's state word, cls in the low half and used in the high one.
MANYALLOC_FN inline std::uint64_t* state_of(SlabPage& page) { return reinterpret_cast<std::uint64_t*>(&page.cls); }
MANYALLOC_FN constexpr std::uint64_t state(std::uint32_t cls, std::uint32_t used) {
  return (static_cast<std::uint64_t>(used) << 32) | cls;
}
MANYALLOC_FN constexpr std::uint32_t state_cls(std::uint64_t s) { return static_cast<std::uint32_t>(s); }
MANYALLOC_FN constexpr std::uint32_t state_used(std::uint64_t s) { return static_cast<std::uint32_t>(s >> 32); }

// Counters written by many workers sit on cache lines of their own (128 B).
inline constexpr std::uint32_t taken_shards = 128;

struct SlabShared {
  struct alignas(128) Counter {
    std::uint32_t value;
  };
  std::uint32_t misuse;
  std::uint32_t last_misuse;
  std::uint32_t unmapped_pages;
  std::uint32_t dry_refills;  // refills that found no free page (C5)
  std::uint32_t reused_chunks;  // freed chunks handed out again (C6)
  std::uint32_t growth_lock;    // a request to grow the pool while workers run (detail/growth_mailbox.hpp)
  std::uint64_t mapped_end;     // the pool's mapped end as the heap knows it (M5)
  std::uint32_t line0[24];
  Counter taken[taken_shards];  // P2
  Counter open_pages;           // pages of open segments (C4)
};
static_assert(offsetof(SlabShared, mapped_end) % 8 == 0 && offsetof(SlabShared, taken) == 128,
              "the first line holds the single words; mapped_end is one aligned 64-bit word");

inline constexpr std::uint32_t large_head = 0xffffffffu;

// Bits of a class's word in SlabLayout::class_flags (C7).
inline constexpr std::uint32_t room_flag = 1u;
inline constexpr std::uint32_t shrink_flag = 2u;

// Slot word fields (C1, C2).
inline constexpr unsigned slot_base_bits = 23;
inline constexpr std::uint32_t slot_base_mask = (1u << slot_base_bits) - 1u;
inline constexpr unsigned slot_log_shift = slot_base_bits;      // 3 bits
inline constexpr unsigned slot_gen_shift = slot_base_bits + 3;  // 6 bits
// Largest page count a heap may have: the slot stores first page + 1.
inline constexpr std::uint32_t max_pages = slot_base_mask - 1u;

struct SlotWord {
  std::uint32_t generation;
  std::uint32_t log_pages;
  std::uint32_t base_plus_one;  // 0: no segment
  std::uint32_t cursor;

  MANYALLOC_FN static SlotWord decode(std::uint64_t w) {
    const auto hi = static_cast<std::uint32_t>(w >> 32);
    return {hi >> slot_gen_shift, (hi >> slot_log_shift) & 7u, hi & slot_base_mask,
            static_cast<std::uint32_t>(w)};
  }
  MANYALLOC_FN std::uint32_t high() const {
    return ((generation & 63u) << slot_gen_shift) | (log_pages << slot_log_shift) | base_plus_one;
  }
  MANYALLOC_FN std::uint64_t encode() const { return (static_cast<std::uint64_t>(high()) << 32) | cursor; }
};

// Immutable description of one heap, copied into every handle.
struct SlabLayout {
  std::byte* data = nullptr;           // page 0
  SlabShared* shared = nullptr;
  std::uint64_t* slots = nullptr;      // class_count * shards
  SlabPage* pages = nullptr;           // page_count entries
  std::uint32_t* chunk_bits = nullptr; // page_count * bitmap_words
  std::uint32_t* taken = nullptr;      // words of the page bitmap
  std::uint32_t* busy = nullptr;       // one bit per word of `taken`
  std::uint32_t* full = nullptr;       // one bit per word of `taken`
  std::uint32_t* partial = nullptr;    // one bit per page: a slab that may have free chunks (C6)
  std::uint32_t* class_flags = nullptr; // one word per size class: room_flag | shrink_flag (C7)
  std::uint32_t page_count = 0;
  std::uint32_t words = 0;             // ceil(page_count / 32)
  std::uint32_t small_words = 1;       // words below the large-request zone (P4), 1..words
  std::uint32_t shards = 1;            // a power of two
  std::uint32_t bitmap_words = 0;      // chunk-bitmap words per page
  std::uint32_t open_budget = 0;       // most pages open segments should hold (C4)
  bool word_keys = false;              // page * bitmap_words + word < 2^31 for every chunk bit
  unsigned slab_shift = 0;             // log2(slab_bytes)
  std::size_t metadata_bytes = 0;      // bytes in front of page 0 (zeroed at init)

  MANYALLOC_FN std::size_t slab_bytes() const { return std::size_t{1} << slab_shift; }
  MANYALLOC_FN std::byte* page_data(std::uint32_t page) const {
    return data + (static_cast<std::size_t>(page) << slab_shift);
  }
  MANYALLOC_FN bool contains(const void* p) const {
    const auto* b = static_cast<const std::byte*>(p);
    return b >= data && b < data + (static_cast<std::size_t>(page_count) << slab_shift);
  }
  MANYALLOC_FN std::uint32_t* bits_of(std::uint32_t page) const {
    return chunk_bits + static_cast<std::size_t>(page) * bitmap_words;
  }
  // The word holding the bit of chunk `index` of the slab whose first page
  // is `page`, for a class of `per_page` chunks per page (S2, S3).
  MANYALLOC_FN std::uint32_t* chunk_word(std::uint32_t page, std::uint32_t per_page, std::uint32_t index) const {
    return per_page <= entry_chunks ? &pages[page].bits[index / 32u] : bits_of(page) + index / 32u;
  }
  MANYALLOC_FN std::uint64_t* slot(std::uint32_t cls, std::uint32_t shard) const {
    return slots + static_cast<std::size_t>(cls) * shards + shard;
  }
};

}  // namespace manyalloc::heap::detail::slabs
