// Disjoint half-open integer ranges [start, start + length), each with a value,
// kept in a RadixTrie keyed by range start.
//
// Myrmics ([Lyberis2012]) sections 3.2 and 4.2 keep free slab ranges, used/free
// address ranges and free region ids in tries keyed by the range start; the
// trie's nearest-key search (floor) answers "which range holds key k" in
// O(levels). RangeMap is that structure:
//
//   find(k)          floor(k) then a bounds check                O(levels)
//   insert(s, n, v)  merges with the neighbours holding equal v  O(levels)
//   erase(s, n)      carves [s, s+n) out of the one range holding it
//   take(n, hint)    first fit at or after hint, then from the start (sets)
//
// Invariants:
//   - ranges never overlap and never have length 0;
//   - two ranges that touch (a.start + a.length == b.start) hold different
//     values (equal neighbours are merged on insert);
//   - total() is the sum of all lengths.
#pragma once

#include <cstdint>
#include <variant>

#include "manyalloc/common/radix_trie.hpp"

namespace manyalloc {

template <class V, unsigned KeyBits>
class RangeMap {
 public:
  using key_type = std::uint64_t;
  static constexpr key_type npos = ~key_type{0};

  struct Range {
    key_type length = 0;
    V value{};
  };
  struct Found {
    key_type start = npos;
    key_type length = 0;
    V* value = nullptr;
    explicit operator bool() const { return value != nullptr; }
  };

  std::size_t count() const { return trie_.size(); }
  key_type total() const { return total_; }
  bool empty() const { return trie_.empty(); }

  // The range containing k, if any.
  Found find(key_type k) const {
    auto e = trie_.floor(k);
    if (!e || k - e.key >= e.value->length) return {};
    return {e.key, e.value->length, &e.value->value};
  }

  // Adds [s, s+n) with value v; false (nothing changed) when it overlaps an
  // existing range or n == 0.
  bool insert(key_type s, key_type n, const V& v) {
    if (n == 0 || s + n < s) return false;
    if (auto p = trie_.floor(s + n - 1); p && p.key + p.value->length > s) return false;
    total_ += n;
    // Merge with the predecessor that ends at s.
    if (auto p = trie_.prev(s); p && p.key + p.value->length == s && p.value->value == v) {
      s = p.key;
      n += p.value->length;
      trie_.erase(p.key);
    }
    // Merge with the successor that starts at s + n.
    if (auto q = trie_.find(s + n); q != nullptr && q->value == v) {
      n += q->length;
      trie_.erase(s + n - q->length);
    }
    trie_.insert(s, Range{n, v});
    return true;
  }

  // Removes [s, s+n), which must lie inside one range; false otherwise.
  bool erase(key_type s, key_type n) {
    auto f = find(s);
    if (!f || n == 0 || s + n > f.start + f.length) return false;
    const key_type a = f.start, len = f.length;
    const V v = *f.value;
    trie_.erase(a);
    if (s > a) trie_.insert(a, Range{s - a, v});
    if (s + n < a + len) trie_.insert(s + n, Range{a + len - (s + n), v});
    total_ -= n;
    return true;
  }

  // n keys from `hint` when the range holding hint has them; else the first
  // range of length >= n starting after `hint`, else the first one from the
  // beginning (carved from its start). Returns the first key taken, or npos. `max_visit` bounds the search (0 = unbounded).
  key_type take(key_type n, key_type hint = 0, std::size_t max_visit = 0) {
    if (n == 0 || total_ < n) return npos;
    // The range holding `hint` itself, from hint onwards.
    if (auto f = find(hint); f && f.start + f.length - hint >= n) {
      erase(hint, n);
      return hint;
    }
    std::size_t visited = 0;
    for (int pass = 0; pass < 2; ++pass) {
      auto e = pass == 0 ? trie_.ceil(hint) : trie_.first();
      for (; e; e = trie_.next(e.key)) {
        if (pass == 1 && e.key >= hint) break;
        if (max_visit != 0 && ++visited > max_visit) return npos;
        if (e.value->length >= n) {
          const key_type s = e.key;
          erase(s, n);
          return s;
        }
      }
    }
    return npos;
  }

  // Removes the first range; returns {start, length}, length 0 when empty.
  struct Span {
    key_type start = npos;
    key_type length = 0;
  };
  Span pop_first() {
    auto e = trie_.first();
    if (!e) return {};
    Span sp{e.key, e.value->length};
    trie_.erase(e.key);
    total_ -= sp.length;
    return sp;
  }

  // Ordered walk: f(start, length, const V&).
  template <class F>
  void for_each(F&& f) const {
    trie_.for_each([&](key_type k, Range& r) { f(k, r.length, r.value); });
  }

  void clear() {
    trie_.clear();
    total_ = 0;
  }

 private:
  RadixTrie<Range, KeyBits> trie_;
  key_type total_ = 0;
};

// A set of ranges without values.
template <unsigned KeyBits>
using RangeSet = RangeMap<std::monostate, KeyBits>;

}  // namespace manyalloc
