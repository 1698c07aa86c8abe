// Memory sources: trade segments with the OS and cache them (invariants.hpp,
// struct Source, for the invariants).
#pragma once

#include <cstddef>

#include "context.hpp"

namespace manyalloc::numa {

// A 2 MiB small segment for a heap (heap field unset), cached or new;
// nullptr when the OS refuses memory.
SmallSegment* source_take_small(Context& c, Source& s);
// Gives a small segment without runs back to its source.
void source_give_small(Context& c, SmallSegment* seg);

// A large segment of at least `bytes` (rounded up to 2 MiB), registered.
// Prefers a cached one: the best fit; a much larger one is trimmed; a
// smaller one is grown with mremap, so the pages already touched are reused
// without new page faults ([Valat2014]: "Recycle large arrays").
LargeSegment* source_take_large(Context& c, Source& s, std::size_t bytes);
// Gives a large segment back: cached for at most the decay delay
// (source_decay; options, large_decay_ms) while the source stays below its
// cache budget (options, cache_max; in lowmem at least a quarter of the
// source's large bytes in use, lowmem_large_live_share). The newest one is
// cached even beyond the budget, older ones beyond it are unmapped, and the
// cache is brought within the budget before the source maps or grows
// anything (cache_max == 0: no cache at all).
void source_give_large(Context& c, LargeSegment* seg);

// Resizes an in-use large segment to new_bytes (multiple of 2 MiB) with
// mremap, moving it if needed; false when the OS refused (segment intact).
bool source_resize_large(Context& c, LargeSegment* seg, std::size_t new_bytes);

// Decommits the resident idle pages of the source's cached small segments,
// the oldest segments first, until at least `need` pages went back to the
// shared allowance (a heap found no room on it; heap_runs.cpp,
// shared_idle_hold); returns the pages given back (fewer when the source
// held fewer).
std::uint64_t source_reclaim_resident(Context& c, Source& s, std::uint64_t need);

// Unmaps every cached segment of the source (malloc_trim).
void source_release_cache(Context& c, Source& s);

// Decay: unmaps the cached segments of s that have been cached for at
// least the decay delay of their kind (options, decay_ms and
// large_decay_ms; invariants.hpp, struct Source).
// Called at every segment taken from or given back to s and at every purge
// of a heap of s (heap_purge.cpp), so that a process that keeps allocating gives
// back what it stopped reusing; costs a clock read and a comparison when
// nothing has expired, nothing when nothing is cached.
void source_decay(Context& c, Source& s);

// Maps a fresh segment of `bytes` for the source and registers `seg`;
// applies huge pages and node binding. Exposed for tests.
bool source_map(Context& c, Source& s, Segment* seg, std::size_t bytes);

}  // namespace manyalloc::numa
