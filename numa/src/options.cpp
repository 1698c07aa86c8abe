// Options table (options.hpp).
#include "options.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>

#include "manyalloc/common/build_config.hpp"

namespace manyalloc::numa {

namespace {
constexpr const char* profiles[] = {"auto", "lowmem", "uma", "numa", nullptr};
}  // namespace

const char* profile_name(Profile p) {
  switch (p) {
    case Profile::lowmem: return "lowmem";
    case Profile::uma: return "uma";
    case Profile::numa: return "numa";
  }
  return "?";
}

constinit const env::Spec option_specs[num_options] = {
    {"profile", env::Kind::choice, 0, profiles,
     "auto|lowmem|uma|numa; auto = numa on machines with more than one NUMA node, else uma"},
    {"cache_max", env::Kind::size, 1ll << 30, nullptr,
     "bytes of free segments each memory source keeps for reuse (lowmem: 4M unless set)"},
    {"huge_pages", env::Kind::flag, 0, nullptr,
     "madvise(MADV_HUGEPAGE) on segments (transparent huge pages)"},
    {"check", env::Kind::flag, build::checked_build ? 1 : 0, nullptr,
     "abort with a message on double free / invalid free (default: on in checked builds)"},
    {"stats", env::Kind::flag, 0, nullptr, "print statistics to stderr at exit"},
    {"colour", env::Kind::flag, 1, nullptr,
     "place large arrays at varied offsets modulo 4 KiB / 32 KiB (4K aliasing)"},
    {"bind", env::Kind::flag, 1, nullptr,
     "bind the memory of per-node sources to their node (numa profile)"},
    {"verbose", env::Kind::flag, 0, nullptr, "print the profile and topology decisions"},
    {"topology", env::Kind::text, 0, nullptr,
     "synthetic:<hwloc description> or xml:<file>: use this topology (testing)"},
    {"decay_ms", env::Kind::size, -1, nullptr,
     "milliseconds a free segment stays cached before it is unmapped (lowmem 10, its large blocks 100; else 1000)"},
    {"purge_ms", env::Kind::size, default_purge_ms, nullptr,
     "least milliseconds between two purges of free pages that a heap's frees trigger (0: no bound)"},
    {"shared_idle", env::Kind::size, default_shared_idle, nullptr,
     "bytes of idle pages all heaps and the cached segments together may keep beyond the heaps' own allowances, "
     "at least; more while the process is below its recent peak of run pages (lowmem: 0 unless set)"},
    {"shared_idle_peak", env::Kind::size, default_shared_idle_peak_percent, nullptr,
     "percent (0-100) of the process's recent peak of run pages added to that shared allowance while threads "
     "exit (a heap orphaned within the last second; lowmem: 0 unless set)"},
};

int sysfs_numa_nodes() {
  // "/sys/devices/system/node/online" holds a list such as "0" or "0-3,5".
  const int fd = ::open("/sys/devices/system/node/online", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 1;
  char buf[256];
  const ssize_t n = ::read(fd, buf, sizeof buf - 1);
  ::close(fd);
  if (n <= 0) return 1;
  buf[n] = '\0';
  int count = 0;
  for (const char* p = buf; *p && *p != '\n';) {
    long a = 0, b;
    while (*p >= '0' && *p <= '9') a = a * 10 + (*p++ - '0');
    b = a;
    if (*p == '-') {
      ++p;
      b = 0;
      while (*p >= '0' && *p <= '9') b = b * 10 + (*p++ - '0');
    }
    count += static_cast<int>(b - a + 1);
    if (*p == ',') ++p;
    else if (*p && *p != '\n') break;
  }
  return count > 0 ? count : 1;
}

Options load_options(int numa_nodes) {
  env::Value v[num_options];
  env::read_all(option_prefix, option_specs, v);
  for (int i = 0; i < num_options; ++i) {
    if (!v[i].valid) {
      char msg[160];
      const int len = std::snprintf(msg, sizeof msg,
                                    "manyalloc-numa: ignoring bad value of %s%s (see README)\n",
                                    option_prefix, option_specs[i].name);
      if (len > 0) (void)!::write(2, msg, static_cast<std::size_t>(len));
    }
  }
  Options o;
  o.profile_from_env = v[0].from_env && v[0].valid && v[0].number != 0;
  switch (v[0].number) {
    case 1: o.profile = Profile::lowmem; break;
    case 2: o.profile = Profile::uma; break;
    case 3: o.profile = Profile::numa; break;
    default: o.profile = numa_nodes > 1 ? Profile::numa : Profile::uma; break;
  }
  o.cache_max = static_cast<std::size_t>(v[1].number);
  o.huge_pages = v[2].number != 0;
  o.check = v[3].number != 0;
  o.stats = v[4].number != 0;
  o.colour = v[5].number != 0;
  o.bind = v[6].number != 0;
  o.verbose = v[7].number != 0;
  o.topology = v[8].from_env ? v[8].text : nullptr;
  if (o.topology != nullptr && !o.profile_from_env) o.profile = Profile::numa;
  const bool low = o.profile == Profile::lowmem;
  if (low && !(v[1].from_env && v[1].valid)) o.cache_max = lowmem_cache_max;
  const long long decay = v[9].number;
  o.decay_ms = decay >= 0 ? static_cast<std::uint32_t>(decay < 3600000 ? decay : 3600000)
                          : low ? decay_ms_lowmem : default_decay_ms;
  o.large_decay_ms = decay >= 0 ? o.decay_ms : low ? large_decay_ms_lowmem : default_decay_ms;
  const long long purge = v[10].number;
  o.purge_ms = static_cast<std::uint32_t>(purge < 3600000 ? purge : 3600000);
  o.shared_idle = low && !(v[11].from_env && v[11].valid) ? 0 : static_cast<std::size_t>(v[11].number);
  const long long peak_percent = low && !(v[12].from_env && v[12].valid) ? 0 : v[12].number;
  o.shared_idle_peak = static_cast<std::uint32_t>(peak_percent < 100 ? peak_percent : 100);
  return o;
}

}  // namespace manyalloc::numa
