// The process-wide allocator (runtime.hpp).
#include "runtime.hpp"

#include <pthread.h>
#include <sched.h>
#include <unistd.h>

#include <cstdio>

#include "source.hpp"
#include "topology.hpp"

namespace manyalloc::numa {

constinit thread_local Heap* t_heap __attribute__((tls_model("initial-exec"))) = nullptr;
constinit thread_local std::uintptr_t t_owner __attribute__((tls_model("initial-exec"))) = no_owner;
constinit thread_local bool t_heap_abandoned __attribute__((tls_model("initial-exec"))) = false;

constinit Process g_process;

namespace {

Context& g_ctx = g_process.context;

// pthread key destructor: the thread exits (runs again if the thread
// allocates after it, up to PTHREAD_DESTRUCTOR_ITERATIONS times).
void on_thread_exit(void* arg) {
  auto* h = static_cast<Heap*>(arg);
  if (h == nullptr) return;
  set_thread_heap(nullptr);
  t_heap_abandoned = true;
  heap_abandon(*h);
  heap_release(g_ctx, *h);
}

// fork: no thread may hold an allocator lock while the address space is
// copied, so fork_prepare takes them all. Lock order: the forking thread's
// own merge lock, heaps_lock, the orphans' merge locks, the pools, the
// sources. It cannot deadlock: a merge lock's holder may take pool and
// source locks and, for a live heap short of room on the shared idle
// allowance, heaps_lock (heap_runs.cpp, reclaim_orphan_shares), but waits
// for no merge lock (other threads' merges and that reclaim only try); the
// merge locks waited for under heaps_lock (here) are the orphans', whose
// holders never wait for heaps_lock (an orphan takes no share: heap_runs.cpp,
// shared_idle_hold; a heap becomes an orphan only after its owner's last
// operation, heap_release); holders of pool or source locks wait for no
// merge lock; heap_release and heap_acquire take a heap's merge lock while
// they hold no other lock. The merge locks (invariants.hpp, lowmem) taken are
// those of the heaps that live on in the child: the forking thread's and
// the orphans' (the child's next new thread adopts one), so that neither is
// copied in the middle of a merge for its owner.
// The locks after heaps_lock, in that order; heaps_lock must be held, so
// that the orphan list walked is the one whose merge locks fork_prepare
// took (a heap_release or heap_acquire would change it).
void for_each_lock_under_heaps(void (*fn)(SpinLock&)) {
  for (Heap* h = g_ctx.orphans; h != nullptr; h = h->orphan_next)
    if (h->merge_for_owner) fn(h->merge_lock);
  fn(g_ctx.small_pool.lock());
  fn(g_ctx.large_pool.lock());
  fn(g_ctx.heap_pool.lock());
  for (Source& s : g_ctx.sources) fn(s.lock);
}
void for_each_lock(void (*fn)(SpinLock&)) {
  fn(g_ctx.heaps_lock);
  for_each_lock_under_heaps(fn);
}
SpinLock* own_merge_lock() {
  Heap* h = t_heap;
  return h != nullptr && h->merge_for_owner ? &h->merge_lock : nullptr;
}
void fork_prepare() {
  if (SpinLock* l = own_merge_lock()) l->lock();
  for_each_lock([](SpinLock& l) { l.lock(); });
}
void fork_parent() {
  // heaps_lock last: released first, a thread exiting or starting could
  // change the orphan list before its merge locks were released (one taken
  // never released, one released that was never taken).
  for_each_lock_under_heaps([](SpinLock& l) { l.unlock(); });
  g_ctx.heaps_lock.unlock();
  if (SpinLock* l = own_merge_lock()) l->unlock();
}
void fork_child() {
  // Only the forking thread exists in the child. The heaps of the other
  // live threads are not adopted (one may have been half-way through an
  // update when fork happened); their chunks stay valid and freeing them
  // queues the chunks on those heaps, so nothing is corrupted. In lowmem
  // such a free may merge a heap for its owner: a heap whose owner or merger
  // was inside an operation at the fork keeps its merge lock taken, so the
  // merge only ever sees heaps in a consistent state.
  for_each_lock([](SpinLock& l) { l.reset_unlocked(); });
  if (SpinLock* l = own_merge_lock()) l->unlock();
  // Their shares of the idle allowance (heap_runs.cpp) are given up, so
  // that the child's heaps may use it; the forking thread's, the orphans'
  // (adopted in the child with their idle pages) and the sources' resident
  // idle pages stay.
  // Orphans are those on the list (heaps_lock held it still across the
  // fork), whatever their flag says: a heap between its flag and the list
  // (heap_release, heap_acquire) is not adopted in the child.
  auto on_orphan_list = [](const Heap* h) {
    for (const Heap* o = g_ctx.orphans; o != nullptr; o = o->orphan_next)
      if (o == h) return true;
    return false;
  };
  std::uint64_t kept = 0, orphaned = 0;
  for (Heap* h = g_ctx.heaps; h != nullptr; h = h->all_next) {
    if (h == t_heap) kept += h->idle_borrowed;
    else if (on_orphan_list(h)) orphaned += h->idle_borrowed;
    else h->idle_borrowed = 0;
  }
  for (Source& s : g_ctx.sources) kept += s.idle_resident.load(std::memory_order_relaxed);
  g_ctx.shared_idle_used.store(kept + orphaned, std::memory_order_relaxed);
  g_ctx.orphan_shares.store(orphaned, std::memory_order_relaxed);
}

}  // namespace

void ensure_init() noexcept {
  if (g_process.init.load(std::memory_order_acquire) == 2) [[likely]]
    return;
  int expected = 0;
  if (!g_process.init.compare_exchange_strong(expected, 1, std::memory_order_acq_rel)) {
    while (g_process.init.load(std::memory_order_acquire) != 2) sched_yield();
    return;
  }
  const int nodes = sysfs_numa_nodes();
  context_setup(g_ctx, load_options(nodes));
  g_ctx.nodes.store(nodes, std::memory_order_relaxed);
  pthread_key_create(&g_process.key, on_thread_exit);
  g_process.init.store(2, std::memory_order_release);
  // May allocate (glibc keeps fork handlers in a growing array): only now.
  pthread_atfork(fork_prepare, fork_parent, fork_child);
  if (g_ctx.opts.verbose) {
    char buf[160];
    const int len = std::snprintf(buf, sizeof buf,
                                  "manyalloc-numa: profile %s, %d NUMA node(s) in sysfs\n",
                                  profile_name(g_ctx.opts.profile), nodes);
    if (len > 0) (void)!::write(2, buf, static_cast<std::size_t>(len));
  }
}

Heap* heap_acquire(Context& c, Source& s) noexcept {
  Heap* h = nullptr;
  {
    SpinGuard g(c.heaps_lock);
    if (c.orphans != nullptr) {
      h = c.orphans;
      c.orphans = h->orphan_next;
      h->orphan_next = nullptr;
    }
  }
  if (h != nullptr) {
    {
      // A freer may be merging the orphan's queue for it (idle-owner merge,
      // heap_merge_for_owner), which reads the heap's source and may lower
      // its share while it holds merge_lock: the new owner sets the source,
      // and ends `orphan` and takes the share out of the count, under that
      // lock (Context::orphan_shares).
      SpinGuard g(h->merge_lock);
      h->orphan.store(false, std::memory_order_relaxed);
      c.orphan_shares.fetch_sub(h->idle_borrowed, std::memory_order_relaxed);
      h->source = &s;
    }
    heap_set_cache(*h, !c.abort_on_misuse.load(std::memory_order_relaxed));
    return h;
  }
  h = c.heap_pool.create(*c.os);
  if (h == nullptr) return nullptr;
  heap_init(*h, c, s);
  SpinGuard g(c.heaps_lock);
  h->all_next = c.heaps;
  c.heaps = h;
  return h;
}

void heap_release(Context& c, Heap& h) noexcept {
  {
    // The flag and the count change together under the merge lock, under
    // which a thread merging for the heap (lowmem, heap_merge_for_owner)
    // changes its share (Context::orphan_shares). Not under heaps_lock: a
    // merger for a live heap may take heaps_lock while it holds the merge
    // lock (reclaim_orphan_shares).
    SpinGuard m(h.merge_lock);
    h.orphan.store(true, std::memory_order_relaxed);
    c.orphan_shares.fetch_add(h.idle_borrowed, std::memory_order_relaxed);
  }
  c.orphaned_ns.store(c.os->now(), std::memory_order_relaxed);
  SpinGuard g(c.heaps_lock);
  h.orphan_next = c.orphans;
  c.orphans = &h;
}

Heap* thread_heap_slow() noexcept {
  ensure_init();
  Context& c = g_ctx;
  Heap* h = heap_acquire(c, c.common());
  if (h == nullptr) return nullptr;
  set_thread_heap(h);  // before anything that may allocate (setspecific, hwloc)
  pthread_setspecific(g_process.key, h);
  if (c.opts.profile == Profile::numa) {
    // [Valat2014], "NUMA strategy": a thread bound inside one node uses that
    // node's source, a mobile thread the common one.
    const int node = topology_thread_node(c);
    if (node >= 0) h->source = c.node_source(node);
  }
  return h;
}

Heap* heap_for_free_slow(const Context& c) noexcept {
  if (t_heap_abandoned || c.abort_on_misuse.load(std::memory_order_relaxed)) return nullptr;
  return thread_heap_slow();
}

bool thread_heap_migrate(int node) noexcept {
  Heap* h = thread_heap();
  if (h == nullptr) return false;
  Context& c = *h->ctx;
  if (node < -1 || node >= topology_load(c) || node >= static_cast<int>(max_nodes)) return false;
  Source* s = node < 0 ? &c.common() : c.node_source(node);
  if (s == h->source) return true;
  // Binding does not allocate (os.hpp, bind), so it may run under the lock.
  OwnerLock hold(*h);
  h->source = s;
  for (SmallSegment* list : {h->avail, h->full}) {
    for (SmallSegment* seg = list; seg != nullptr; seg = static_cast<SmallSegment*>(seg->next)) {
      seg->source->mapped_bytes.fetch_sub(seg->bytes, std::memory_order_relaxed);
      s->mapped_bytes.fetch_add(seg->bytes, std::memory_order_relaxed);
      seg->source = s;
      if (node >= 0) topology_bind(c, seg->base, seg->bytes, node, true);
    }
  }
  return true;
}

}  // namespace manyalloc::numa
