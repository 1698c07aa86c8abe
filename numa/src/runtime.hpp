// The process-wide allocator: the global context, lazy initialisation (the
// allocator works before main and after exit handlers: nothing here has a
// dynamic constructor or destructor), thread heaps, thread exit, fork.
#pragma once

#include <pthread.h>

#include <atomic>
#include <cstdint>

#include "context.hpp"
#include "heap.hpp"

namespace manyalloc::numa {

// The process's allocator: its context and the runtime's once-only state
// (constant-initialised, never destroyed). One object, so that its layout is
// fixed: `init` and `key` lie in the page that starts the context's top
// table, which the library's own data makes resident anyway, instead of a
// page after the sources (context.hpp, "Layout").
struct Process {
  std::atomic<int> init{0};  // 0: no, 1: in progress, 2: done
  pthread_key_t key = 0;     // its destructor runs at thread exit
  Context context;
};
extern Process g_process;
inline Context& global() noexcept { return g_process.context; }

// Initial-exec TLS: no __tls_get_addr call (which could allocate) on the
// fast path, valid in a library loaded at start or by LD_PRELOAD.
// constinit: no TLS wrapper call either (the variable has no dynamic
// initialisation).
extern constinit thread_local Heap* t_heap __attribute__((tls_model("initial-exec")));

// owner_key(*t_heap), or no_owner while t_heap is nullptr: what the free
// fast path passes to owned_small (heap.hpp; Segment::heap is a heap or
// nullptr, never 1), so that one compare checks both "the thread has a
// heap" and "it owns the segment". Written wherever t_heap is
// (set_thread_heap).
extern constinit thread_local std::uintptr_t t_owner __attribute__((tls_model("initial-exec")));
inline constexpr std::uintptr_t no_owner = 1;
static_assert(alignof(Heap) > no_owner, "no_owner must be a value that no Heap's address can take");
inline void set_thread_heap(Heap* h) noexcept {
  t_heap = h;
  t_owner = h != nullptr ? owner_key(*h) : no_owner;
}

// True once the thread's heap was abandoned at its exit (the pthread key's
// destructor): a free after that makes no heap again (heap_for_free).
extern constinit thread_local bool t_heap_abandoned __attribute__((tls_model("initial-exec")));

// The calling thread's heap, created or adopted on first use; nullptr only
// when no metadata memory could be mapped.
Heap* thread_heap_slow() noexcept;
inline Heap* thread_heap() noexcept {
  Heap* h = t_heap;
  return h != nullptr ? h : thread_heap_slow();
}

// The heap of a thread that frees a small chunk of another heap: a thread
// without one (the consumer of a producer/consumer pair, which only frees)
// makes or adopts one, so that its frees are gathered in remote batches
// (remote_free.cpp) instead of one atomic publish each. nullptr, and the
// free is published at once, in check mode (no batches: every double free
// is reported at once) and after the thread's exit handler ran.
Heap* heap_for_free_slow(const Context& c) noexcept;  // t_heap == nullptr
inline Heap* heap_for_free(const Context& c) noexcept {
  Heap* h = t_heap;
  return h != nullptr ? h : heap_for_free_slow(c);
}

// Initialises the global context once (options, sources, thread-exit key,
// fork handlers). Never allocates; safe to call from any thread.
void ensure_init() noexcept;

// Moves the calling thread's heap to `node` (-1: the common source) and
// migrates the pages of its segments there. False for a bad node.
bool thread_heap_migrate(int node) noexcept;

// Adopts an orphan heap or creates one (exposed for tests).
Heap* heap_acquire(Context& c, Source& s) noexcept;
// Makes h an orphan waiting for adoption.
void heap_release(Context& c, Heap& h) noexcept;

}  // namespace manyalloc::numa
