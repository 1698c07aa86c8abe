#include "options.hpp"

#include <cstdio>

namespace manyalloc::region::detail {

namespace {
constexpr const char* transfer_names[] = {"auto", "copy", nullptr};
constexpr int transfer_values[] = {MR_TRANSFER_AUTO, MR_TRANSFER_COPY};
constexpr const char* transfer_macros[] = {"MR_TRANSFER_AUTO", "MR_TRANSFER_COPY"};
constexpr const char* prefault_names[] = {"on", "off", nullptr};
constexpr int prefault_values[] = {MR_PREFAULT_ON, MR_PREFAULT_OFF};
constexpr const char* prefault_macros[] = {"MR_PREFAULT_ON", "MR_PREFAULT_OFF"};
}  // namespace

const env::Spec option_specs[opt_count] = {
    {"levels", env::Kind::text, 1, nullptr, "scheduler tree levels, 1 to 8 (default 1)"},
    {"fanout", env::Kind::text, 4, nullptr, "children per scheduler, 1 to 1048576 (default 4)"},
    {"gas_mib", env::Kind::text, 64 * 1024, nullptr,
     "global address space in whole MiB, 1 to 33554432 (default 65536)"},
    {"transfer", env::Kind::choice, 0, transfer_names, "how mr_send moves data: auto (default) or copy"},
    {"prefault", env::Kind::choice, 0, prefault_names, "map received pages in one call: on (default) or off"},
    {"force_remote", env::Kind::flag, 0, nullptr,
     "every pair of ranks as on different hosts (no shared memory, every transfer copies): 1 or 0 (default 0)"},
};

namespace {

// The variable's full name, MANYALLOC_REGION_<NAME>.
void variable_name(Option o, char (&out)[64]) {
  std::size_t n = 0;
  for (const char* p = option_prefix; *p && n + 1 < sizeof out; ++p) out[n++] = *p;
  for (const char* p = option_specs[o].name; *p && n + 1 < sizeof out; ++p)
    out[n++] = (*p >= 'a' && *p <= 'z') ? static_cast<char>(*p - 'a' + 'A') : *p;
  out[n] = '\0';
}

// Decimal digits only (no sign, space, suffix or base prefix), at most `hi`.
// 1: parsed; 0: not a decimal whole number; -1: above hi.
int parse_decimal(const char* s, std::uint64_t hi, std::uint64_t* out) {
  if (*s == '\0') return 0;
  std::uint64_t v = 0;
  bool over = false;
  for (; *s != '\0'; ++s) {
    if (*s < '0' || *s > '9') return 0;
    const unsigned d = static_cast<unsigned>(*s - '0');
    if (over) continue;  // still check that the rest are digits
    if (v > hi / 10) {     // v * 10 > hi
      over = true;
      continue;
    }
    v = v * 10 + d;  // at most hi + 9: no wrap (hi < 2^63)
    over = v > hi;
  }
  if (over) return -1;
  *out = v;
  return 1;
}

// A whole number from the environment in [lo, hi]; false with the reason.
bool env_whole(Option o, std::uint64_t lo, std::uint64_t hi, const char* allowed, std::uint64_t* out, char* why,
               std::size_t n, const char** text) {
  const env::Value v = env::read(option_prefix, option_specs[o]);
  *text = v.from_env ? v.text : nullptr;
  if (!v.from_env) {
    *out = static_cast<std::uint64_t>(option_specs[o].fallback);
    return true;
  }
  std::uint64_t x = 0;
  const int r = parse_decimal(v.text, hi, &x);
  if (r == 1 && x >= lo) {
    *out = x;
    return true;
  }
  char name[64];
  variable_name(o, name);
  std::snprintf(why, n, "mr_init: %s=\"%s\": %s; allowed: %s", name, v.text,
                r == 0 ? "not a whole decimal number" : "out of range", allowed);
  return false;
}

// A two-way choice: the field when nonzero (one of `values`), else the
// variable (one of its names, any case), else the first value.
bool choice(int field, const char* field_name, Option o, const int (&values)[2], const char* const (&macros)[2],
            int* out, char* why, std::size_t n) {
  const char* const* names = option_specs[o].choices;
  char name[64];
  variable_name(o, name);
  if (field != 0) {
    if (field == values[0] || field == values[1]) {
      *out = field;
      return true;
    }
    std::snprintf(why, n, "mr_init: mr_config.%s=%d: not a known value; allowed: 0 (%s, else %s), %s (%d), %s (%d)",
                  field_name, field, name, names[0], macros[0], values[0], macros[1], values[1]);
    return false;
  }
  const env::Value v = env::read(option_prefix, option_specs[o]);
  if (!v.valid) {
    std::snprintf(why, n, "mr_init: %s=\"%s\": not one of the names; allowed: %s, %s (any case)", name, v.text,
                  names[0], names[1]);
    return false;
  }
  *out = values[v.number];
  return true;
}

}  // namespace

bool resolve_settings(const mr_config* cfg, Settings& s, char* why, std::size_t n) {
  mr_config c{};
  if (cfg != nullptr) c = *cfg;
  s = Settings{};
  char allowed[160];
  const char* text = nullptr;

  std::snprintf(allowed, sizeof allowed, "whole numbers from 1 to %d (scheduler tree levels)", max_levels);
  if (c.levels != 0) {
    if (c.levels < 0 || c.levels > max_levels) {
      std::snprintf(why, n, "mr_init: mr_config.levels=%d: out of range; allowed: 0 (MANYALLOC_REGION_LEVELS, else 1) or 1 to %d",
                    c.levels, max_levels);
      return false;
    }
    s.levels = c.levels;
    std::snprintf(s.levels_from, sizeof s.levels_from, "mr_config.levels=%d", c.levels);
  } else {
    std::uint64_t x = 0;
    if (!env_whole(opt_levels, 1, max_levels, allowed, &x, why, n, &text)) return false;
    s.levels = static_cast<int>(x);
    if (text != nullptr)
      std::snprintf(s.levels_from, sizeof s.levels_from, "MANYALLOC_REGION_LEVELS=%s", text);
    else
      std::snprintf(s.levels_from, sizeof s.levels_from, "default levels %d", s.levels);
  }

  std::snprintf(allowed, sizeof allowed, "whole numbers from 1 to %d (children per scheduler)", max_fanout);
  if (c.fanout != 0) {
    if (c.fanout < 0 || c.fanout > max_fanout) {
      std::snprintf(why, n, "mr_init: mr_config.fanout=%d: out of range; allowed: 0 (MANYALLOC_REGION_FANOUT, else 4) or 1 to %d",
                    c.fanout, max_fanout);
      return false;
    }
    s.fanout = c.fanout;
    std::snprintf(s.fanout_from, sizeof s.fanout_from, "mr_config.fanout=%d", c.fanout);
  } else {
    std::uint64_t x = 0;
    if (!env_whole(opt_fanout, 1, max_fanout, allowed, &x, why, n, &text)) return false;
    s.fanout = static_cast<int>(x);
    if (text != nullptr)
      std::snprintf(s.fanout_from, sizeof s.fanout_from, "MANYALLOC_REGION_FANOUT=%s", text);
    else
      std::snprintf(s.fanout_from, sizeof s.fanout_from, "default fanout %d", s.fanout);
  }

  if (c.gas_bytes != 0) {
    if (c.gas_bytes % gas_unit != 0 || c.gas_bytes > max_gas_mib * gas_unit) {
      std::snprintf(why, n,
                    "mr_init: mr_config.gas_bytes=%llu: %s; allowed: 0 (MANYALLOC_REGION_GAS_MIB, else 64 GiB) or a "
                    "multiple of 1 MiB (1048576) up to 32 TiB",
                    static_cast<unsigned long long>(c.gas_bytes),
                    c.gas_bytes % gas_unit != 0 ? "not a multiple of 1 MiB" : "out of range");
      return false;
    }
    s.gas_bytes = c.gas_bytes;
  } else {
    std::snprintf(allowed, sizeof allowed,
                  "whole MiB from 1 to %llu (32 TiB), decimal digits only, no unit suffix",
                  static_cast<unsigned long long>(max_gas_mib));
    std::uint64_t mib = 0;
    if (!env_whole(opt_gas_mib, 1, max_gas_mib, allowed, &mib, why, n, &text)) return false;
    s.gas_bytes = mib * gas_unit;
  }

  if (!choice(c.transfer, "transfer", opt_transfer, transfer_values, transfer_macros, &s.transfer, why, n)) return false;
  if (!choice(c.prefault, "prefault", opt_prefault, prefault_values, prefault_macros, &s.prefault, why, n)) return false;

  {
    const env::Value v = env::read(option_prefix, option_specs[opt_force_remote]);
    if (!v.valid) {
      std::snprintf(why, n,
                    "mr_init: MANYALLOC_REGION_FORCE_REMOTE=\"%s\": not a flag; allowed: 1, 0, on, off, yes, no, "
                    "true, false (any case)",
                    v.text);
      return false;
    }
    s.force_remote = v.number != 0;
  }

  if (c.load_threshold < 0) {
    std::snprintf(why, n, "mr_init: mr_config.load_threshold=%d: out of range; allowed: 0 (the default, 4) or more",
                  c.load_threshold);
    return false;
  }
  s.leaf_pages_hi = c.leaf_pages_hi;
  s.region_slabs_hi = c.region_slabs_hi;
  s.load_threshold = c.load_threshold;
  return true;
}

long scheduler_count(int levels, int fanout) {
  constexpr long cap = long{1} << 40;
  long nsched = 0, width = 1;
  for (int l = 0; l < levels && nsched < cap; ++l) {
    nsched += width;
    width = width > cap / (fanout > 0 ? fanout : 1) ? cap : width * fanout;
  }
  return nsched < cap ? nsched : cap;
}

bool check_layout(const Settings& s, int world, char* why, std::size_t n) {
  const long nsched = scheduler_count(s.levels, s.fanout);
  const long need = nsched + 1;
  if (world >= need) return true;
  std::snprintf(why, n,
                "mr_init: a scheduler tree of %d level%s with fanout %d (%s, %s) has %ld scheduler%s and needs at "
                "least %ld ranks (one worker or more); the job has %d%s",
                s.levels, s.levels == 1 ? "" : "s", s.fanout, s.levels_from, s.fanout_from, nsched,
                nsched == 1 ? "" : "s", need, world,
                world == 1 ? " (started without mpiexec, or by another MPI implementation's launcher?)" : "");
  return false;
}

}  // namespace manyalloc::region::detail
