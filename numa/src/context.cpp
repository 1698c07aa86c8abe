// Context setup and misuse reports (context.hpp).
#include "context.hpp"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>

namespace manyalloc::numa {

void context_setup(Context& c, const Options& o) {
  c.opts = o;
  if (c.os == nullptr) c.os = &linux_os_ops;
  c.nodes.store(1, std::memory_order_relaxed);
  c.abort_on_misuse.store(o.check, std::memory_order_relaxed);
}

void misuse(Context& c, const char* where, Misuse what, const void* ptr) {
  c.misuses.fetch_add(1, std::memory_order_relaxed);
  if (!c.abort_on_misuse.load(std::memory_order_relaxed)) return;
  char buf[256];
  const int len = std::snprintf(buf, sizeof buf,
                                "manyalloc-numa: %s: %s (%p); aborting "
                                "(MANYALLOC_NUMA_CHECK=1 or checked build)\n",
                                where, misuse_name(what), ptr);
  if (len > 0) (void)!::write(2, buf, static_cast<std::size_t>(len));
  std::abort();
}

}  // namespace manyalloc::numa
