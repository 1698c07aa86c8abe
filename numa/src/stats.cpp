// Statistics (stats.hpp).
#include "stats.hpp"

#include <unistd.h>

#include <cstdio>
#include <cstring>

#include "runtime.hpp"

namespace manyalloc::numa {

void stats_gather(Context& c, manyalloc_numa_stats& out) noexcept {
  std::memset(&out, 0, sizeof out);
  out.profile = profile_name(c.opts.profile);
  const int nodes = c.nodes.load(std::memory_order_relaxed);
  out.nsources = static_cast<std::uint32_t>(1 + (nodes > 1 || c.opts.profile == Profile::numa ? nodes : 0));
  if (out.nsources > MANYALLOC_NUMA_MAX_SOURCES) out.nsources = MANYALLOC_NUMA_MAX_SOURCES;
  constexpr auto rl = std::memory_order_relaxed;
  for (std::uint32_t i = 0; i < max_sources && i < MANYALLOC_NUMA_MAX_SOURCES; ++i) {
    const Source& s = c.sources[i];
    manyalloc_numa_source_stats& o = out.sources[i];
    o.node = c.source_node(s);
    o.mapped_bytes = s.mapped_bytes.load(rl);
    o.cached_bytes = s.cached_bytes.load(rl);
    o.large_in_use_bytes = s.large_in_use_bytes.load(rl);
    o.os_maps = s.os_maps.load(rl);
    o.os_unmaps = s.os_unmaps.load(rl);
    o.remaps = s.remaps.load(rl);
    o.reuses = s.reuses.load(rl);
    o.faults_avoided = s.faults_avoided.load(rl);
    out.mapped_bytes += o.mapped_bytes;
    out.cached_bytes += o.cached_bytes;
    out.large_in_use_bytes += o.large_in_use_bytes;
    out.faults_avoided += o.faults_avoided;
    if (o.mapped_bytes != 0 && i >= out.nsources) out.nsources = i + 1;
  }
  {
    SpinGuard g(c.heaps_lock);
    for (Heap* h = c.heaps; h != nullptr; h = h->all_next) {
      ++out.heaps;
      if (h->orphan.load(rl)) ++out.orphan_heaps;
      out.small_in_use_bytes += heap_small_in_use(*h);
      out.remote_frees += h->remote_frees.load(rl);
      out.remote_pending_bytes += h->remote_pending.load(rl);
      out.idle_merges += h->idle_merges.load(rl);
    }
  }
  out.in_use_bytes = out.small_in_use_bytes + out.large_in_use_bytes;
  out.metadata_bytes = c.small_pool.mapped_bytes() + c.large_pool.mapped_bytes() +
                       c.heap_pool.mapped_bytes() + c.registry.leaf_bytes() + sizeof(Registry);
  out.misuses = c.misuses.load(rl);
  const OsCounters& oc = c.os_calls;
  out.purge_decommits = oc.decommits[static_cast<unsigned>(Giveback::purge)].load(rl);
  out.idle_decommits = oc.decommits[static_cast<unsigned>(Giveback::idle)].load(rl);
  out.meta_decommits = oc.decommits[static_cast<unsigned>(Giveback::meta)].load(rl);
  out.os_decommits = out.purge_decommits + out.idle_decommits + out.meta_decommits;
  for (const auto& b : oc.decommit_bytes) out.decommitted_bytes += b.load(rl);
  out.os_unmaps = oc.unmaps.load(rl);
  out.unmapped_bytes = oc.unmap_bytes.load(rl);
  out.decayed_segments = oc.decayed.load(rl);
  out.decayed_bytes = oc.decayed_bytes.load(rl);
  out.shared_idle_bytes = c.shared_idle_used.load(rl) * page_bytes;
  out.shared_idle_cap_bytes = shared_idle_cap(c, false) * page_bytes;
}

void stats_print(Context& c, int fd) noexcept {
  manyalloc_numa_stats st;
  stats_gather(c, st);
  char buf[4096];
  std::size_t n = 0;
  auto add = [&](const char* fmt, auto... args) {
    if (n >= sizeof buf) return;
    const int len = std::snprintf(buf + n, sizeof buf - n, fmt, args...);
    if (len > 0) n += static_cast<std::size_t>(len);
    if (n > sizeof buf) n = sizeof buf;
  };
  constexpr double MiB = 1024.0 * 1024.0;
  add("manyalloc-numa statistics (profile %s)\n", st.profile);
  add("  in use      %10.1f MiB (small %.1f, large %.1f; freed by other threads, not merged yet %.1f)\n",
      st.in_use_bytes / MiB, st.small_in_use_bytes / MiB, st.large_in_use_bytes / MiB,
      st.remote_pending_bytes / MiB);
  add("  mapped      %10.1f MiB, cached %.1f MiB, metadata %.1f MiB\n", st.mapped_bytes / MiB,
      st.cached_bytes / MiB, st.metadata_bytes / MiB);
  add("  remote frees %llu (queues merged for idle owners %llu), page faults avoided %llu, "
      "misuses %llu, heaps %u (%u orphan)\n",
      static_cast<unsigned long long>(st.remote_frees),
      static_cast<unsigned long long>(st.idle_merges),
      static_cast<unsigned long long>(st.faults_avoided),
      static_cast<unsigned long long>(st.misuses), st.heaps, st.orphan_heaps);
  const auto u = [](std::uint64_t v) { return static_cast<unsigned long long>(v); };
  {
    std::uint64_t purged = 0;
    SpinGuard g(c.heaps_lock);
    for (Heap* h = c.heaps; h != nullptr; h = h->all_next)
      purged += h->purged_bytes.load(std::memory_order_relaxed);
    add("  decommits   %llu (%.1f MiB): purges %llu (%.1f MiB of free pages inside runs), "
        "empty runs %llu, descriptors %llu\n",
        u(st.os_decommits), st.decommitted_bytes / MiB, u(st.purge_decommits), purged / MiB,
        u(st.idle_decommits), u(st.meta_decommits));
  }
  add("  unmaps      %llu (%.1f MiB), of which decayed cached segments %llu (%.1f MiB)\n",
      u(st.os_unmaps), st.unmapped_bytes / MiB, u(st.decayed_segments), st.decayed_bytes / MiB);
  add("  idle pages kept beyond the heaps' budgets %.1f MiB, allowed now %.1f MiB\n",
      st.shared_idle_bytes / MiB, st.shared_idle_cap_bytes / MiB);
  for (std::uint32_t i = 0; i < st.nsources; ++i) {
    const manyalloc_numa_source_stats& s = st.sources[i];
    if (i > 0 && s.os_maps == 0) continue;
    char name[16];
    if (i == 0) std::snprintf(name, sizeof name, "common");
    else std::snprintf(name, sizeof name, "node%d", s.node);
    add("  source %-7s mapped %.1f MiB cached %.1f MiB large %.1f MiB maps %llu unmaps %llu "
        "remaps %llu reuses %llu faults avoided %llu\n",
        name, s.mapped_bytes / MiB, s.cached_bytes / MiB,
        s.large_in_use_bytes / MiB, static_cast<unsigned long long>(s.os_maps),
        static_cast<unsigned long long>(s.os_unmaps), static_cast<unsigned long long>(s.remaps),
        static_cast<unsigned long long>(s.reuses),
        static_cast<unsigned long long>(s.faults_avoided));
  }
  for (std::size_t off = 0; off < n;) {
    const ssize_t w = ::write(fd, buf + off, n - off);
    if (w <= 0) break;
    off += static_cast<std::size_t>(w);
  }
}

namespace {
// Runs when the library is unloaded or the process exits; the allocator
// stays usable afterwards (nothing is torn down).
__attribute__((destructor)) void print_at_exit() {
  Context& c = global();
  if (c.opts.stats) stats_print(c, 2);
}
}  // namespace

}  // namespace manyalloc::numa
