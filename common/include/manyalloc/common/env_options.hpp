// One table of runtime options read from environment variables (host code).
//
// A layer describes its options once, as an array of Spec, and reads them all
// with read_all(): option `cache_max` with prefix "MANYALLOC_NUMA_" is the
// variable MANYALLOC_NUMA_CACHE_MAX. Nothing here allocates, so an allocator
// can read its options before its first allocation (even before main);
// getenv() itself does not allocate in glibc.
//
// Accepted spellings: flags 1/0, yes/no, on/off, true/false; sizes a decimal
// number with an optional K, M, G or T suffix (powers of 1024); choices one of
// the listed words; text is returned as is (pointer into the environment).
// A malformed value keeps the default and sets Value::valid = false so the
// caller can warn.
#pragma once

#include <cstddef>
#include <cstdlib>
#include <cstring>

namespace manyalloc::env {

enum class Kind { flag, size, choice, text };

struct Spec {
  const char* name;             // lower case, '_' separated
  Kind kind;
  long long fallback;           // default: 0/1, bytes, or index into choices
  const char* const* choices;   // nullptr-terminated list for Kind::choice
  const char* help;             // one line, printed by documentation tools
};

struct Value {
  long long number = 0;         // flag (0/1), size in bytes, choice index
  const char* text = nullptr;   // raw text when set from the environment
  bool from_env = false;
  bool valid = true;
};

inline bool equal_nocase(const char* a, const char* b) {
  for (; *a && *b; ++a, ++b) {
    char x = *a, y = *b;
    if (x >= 'A' && x <= 'Z') x = static_cast<char>(x - 'A' + 'a');
    if (y >= 'A' && y <= 'Z') y = static_cast<char>(y - 'A' + 'a');
    if (x != y) return false;
  }
  return *a == *b;
}

inline bool parse_flag(const char* s, long long* out) {
  static constexpr const char* yes[] = {"1", "yes", "on", "true"};
  static constexpr const char* no[] = {"0", "no", "off", "false"};
  for (const char* w : yes)
    if (equal_nocase(s, w)) return *out = 1, true;
  for (const char* w : no)
    if (equal_nocase(s, w)) return *out = 0, true;
  return false;
}

inline bool parse_size(const char* s, long long* out) {
  if (*s < '0' || *s > '9') return false;
  unsigned long long v = 0;
  for (; *s >= '0' && *s <= '9'; ++s) {
    if (v > (~0ull >> 4) / 10) return false;
    v = v * 10 + static_cast<unsigned>(*s - '0');
  }
  unsigned shift = 0;
  switch (*s) {
    case 'k': case 'K': shift = 10; ++s; break;
    case 'm': case 'M': shift = 20; ++s; break;
    case 'g': case 'G': shift = 30; ++s; break;
    case 't': case 'T': shift = 40; ++s; break;
    default: break;
  }
  if (*s == 'i') ++s;           // accept KiB / MiB spellings
  if (*s == 'b' || *s == 'B') ++s;
  if (*s != '\0') return false;
  if (shift && v > (~0ull >> 2) >> shift) return false;
  *out = static_cast<long long>(v << shift);
  return true;
}

inline bool parse_choice(const char* s, const char* const* choices, long long* out) {
  for (long long i = 0; choices && choices[i]; ++i)
    if (equal_nocase(s, choices[i])) return *out = i, true;
  return false;
}

// Reads one option; `prefix` like "MANYALLOC_NUMA_".
inline Value read(const char* prefix, const Spec& spec) {
  Value v;
  v.number = spec.fallback;
  char name[96];
  std::size_t n = 0;
  for (const char* p = prefix; *p && n + 1 < sizeof name; ++p) name[n++] = *p;
  for (const char* p = spec.name; *p && n + 1 < sizeof name; ++p)
    name[n++] = (*p >= 'a' && *p <= 'z') ? static_cast<char>(*p - 'a' + 'A') : *p;
  name[n] = '\0';
  const char* s = std::getenv(name);
  if (s == nullptr || *s == '\0') return v;
  v.text = s;
  v.from_env = true;
  long long parsed = 0;
  switch (spec.kind) {
    case Kind::flag: v.valid = parse_flag(s, &parsed); break;
    case Kind::size: v.valid = parse_size(s, &parsed); break;
    case Kind::choice: v.valid = parse_choice(s, spec.choices, &parsed); break;
    case Kind::text: parsed = 1; break;
  }
  if (v.valid) v.number = parsed;
  return v;
}

template <std::size_t N>
void read_all(const char* prefix, const Spec (&specs)[N], Value (&out)[N]) {
  for (std::size_t i = 0; i < N; ++i) out[i] = read(prefix, specs[i]);
}

}  // namespace manyalloc::env
