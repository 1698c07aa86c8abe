// Ordered map from unsigned integer keys to small values: a radix trie.
//
// Myrmics ([Lyberis2012]) section 3.2 indexes memory with an 8-degree trie because
// tries give constant-time lookups (bounded by the key width, not by the number
// of entries), approximate searches (nearest key below/above) and ordered
// walks. This trie uses 64-way nodes with a 64-bit occupancy bitmap per node,
// so a nearest-key search needs one find-first-set per level instead of a scan:
//
//   cost of find / insert / erase / floor / ceil:  O(levels), levels = ceil(KeyBits / 6)
//
// Invariants:
//   - every interior node and leaf reachable from the root has at least one
//     bit set in `bits` (empty nodes are freed on erase);
//   - bit i of an interior node is set iff child[i] != nullptr;
//   - bit i of a leaf is set iff val[i] holds a live value;
//   - keys are <= max_key (callers check; insert refuses larger keys).
//
// Values must be default-constructible and cheap to copy (pointers, integers,
// small structs). Not thread-safe: each owner (a scheduler, a slab pool) keeps
// its own tries.
#pragma once

#include <cstddef>
#include <cstdint>
#include <utility>

namespace manyalloc {

template <class V, unsigned KeyBits>
class RadixTrie {
  static_assert(KeyBits >= 1 && KeyBits <= 64, "KeyBits must be 1..64");

 public:
  using key_type = std::uint64_t;
  static constexpr unsigned digit_bits = 6;
  static constexpr unsigned levels = (KeyBits + digit_bits - 1) / digit_bits;
  static constexpr key_type max_key =
      KeyBits == 64 ? ~key_type{0} : (key_type{1} << KeyBits) - 1;

  // Result of the nearest-key searches; `value == nullptr` means "none".
  struct Entry {
    key_type key = 0;
    V* value = nullptr;
    explicit operator bool() const { return value != nullptr; }
  };

  RadixTrie() = default;
  RadixTrie(const RadixTrie&) = delete;
  RadixTrie& operator=(const RadixTrie&) = delete;
  RadixTrie(RadixTrie&& o) noexcept : root_(o.root_), size_(o.size_), nodes_(o.nodes_) {
    o.root_ = nullptr;
    o.size_ = 0;
    o.nodes_ = 0;
  }
  RadixTrie& operator=(RadixTrie&& o) noexcept {
    if (this != &o) {
      clear();
      std::swap(root_, o.root_);
      std::swap(size_, o.size_);
      std::swap(nodes_, o.nodes_);
    }
    return *this;
  }
  ~RadixTrie() { clear(); }

  std::size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  // Number of trie nodes (interior + leaves) currently allocated: metadata cost.
  std::size_t node_count() const { return nodes_; }

  V* find(key_type k) const {
    if (k > max_key || root_ == nullptr) return nullptr;
    void* n = root_;
    for (unsigned lvl = 0; lvl + 1 < levels; ++lvl) {
      auto* in = static_cast<Interior*>(n);
      const unsigned d = digit(k, lvl);
      if (!((in->bits >> d) & 1u)) return nullptr;
      n = in->child[d];
    }
    auto* lf = static_cast<Leaf*>(n);
    const unsigned d = digit(k, levels - 1);
    return ((lf->bits >> d) & 1u) ? &lf->val[d] : nullptr;
  }

  bool contains(key_type k) const { return find(k) != nullptr; }

  // Inserts (k, v); returns false (and changes nothing) when k is present or
  // larger than max_key.
  bool insert(key_type k, const V& v) {
    if (k > max_key) return false;
    if (root_ == nullptr) root_ = make_node(0);
    void* n = root_;
    for (unsigned lvl = 0; lvl + 1 < levels; ++lvl) {
      auto* in = static_cast<Interior*>(n);
      const unsigned d = digit(k, lvl);
      if (!((in->bits >> d) & 1u)) {
        in->child[d] = make_node(lvl + 1);
        in->bits |= std::uint64_t{1} << d;
      }
      n = in->child[d];
    }
    auto* lf = static_cast<Leaf*>(n);
    const unsigned d = digit(k, levels - 1);
    if ((lf->bits >> d) & 1u) return false;
    lf->bits |= std::uint64_t{1} << d;
    lf->val[d] = v;
    ++size_;
    return true;
  }

  // Removes k; returns false when absent. Frees nodes that become empty.
  bool erase(key_type k) {
    if (k > max_key || root_ == nullptr) return false;
    void* path[levels];
    void* n = root_;
    for (unsigned lvl = 0; lvl + 1 < levels; ++lvl) {
      path[lvl] = n;
      auto* in = static_cast<Interior*>(n);
      const unsigned d = digit(k, lvl);
      if (!((in->bits >> d) & 1u)) return false;
      n = in->child[d];
    }
    path[levels - 1] = n;
    auto* lf = static_cast<Leaf*>(n);
    unsigned d = digit(k, levels - 1);
    if (!((lf->bits >> d) & 1u)) return false;
    lf->bits &= ~(std::uint64_t{1} << d);
    lf->val[d] = V{};
    --size_;
    // Walk up, freeing empty nodes.
    bool empty_below = lf->bits == 0;
    for (unsigned lvl = levels; lvl-- > 0 && empty_below;) {
      free_node(path[lvl], lvl);
      if (lvl == 0) {
        root_ = nullptr;
        break;
      }
      auto* parent = static_cast<Interior*>(path[lvl - 1]);
      d = digit(k, lvl - 1);
      parent->bits &= ~(std::uint64_t{1} << d);
      parent->child[d] = nullptr;
      empty_below = parent->bits == 0;
    }
    return true;
  }

  // Largest key <= k ("approximate search" of [Lyberis2012] 3.2).
  Entry floor(key_type k) const {
    if (root_ == nullptr) return {};
    if (k > max_key) k = max_key;
    Entry e;
    floor_rec(root_, 0, k, 0, e);
    return e;
  }

  // Smallest key >= k.
  Entry ceil(key_type k) const {
    if (root_ == nullptr || k > max_key) return {};
    Entry e;
    ceil_rec(root_, 0, k, 0, e);
    return e;
  }

  Entry first() const { return ceil(0); }
  Entry last() const { return floor(max_key); }
  // Smallest key > k.
  Entry next(key_type k) const { return k >= max_key ? Entry{} : ceil(k + 1); }
  // Largest key < k.
  Entry prev(key_type k) const { return k == 0 ? Entry{} : floor(k - 1); }

  // Ordered walk: f(key, V&) for every entry, ascending keys. f must not
  // modify the trie.
  template <class F>
  void for_each(F&& f) const {
    if (root_ != nullptr) walk(root_, 0, 0, f);
  }

  void clear() {
    if (root_ != nullptr) destroy(root_, 0);
    root_ = nullptr;
    size_ = 0;
  }

 private:
  struct Interior {
    std::uint64_t bits = 0;
    void* child[64] = {};
  };
  struct Leaf {
    std::uint64_t bits = 0;
    V val[64] = {};
  };

  static constexpr unsigned digit(key_type k, unsigned lvl) {
    const unsigned shift = (levels - 1 - lvl) * digit_bits;
    return static_cast<unsigned>((k >> shift) & 63u);
  }
  static unsigned highest(std::uint64_t m) { return 63u - static_cast<unsigned>(__builtin_clzll(m)); }
  static unsigned lowest(std::uint64_t m) { return static_cast<unsigned>(__builtin_ctzll(m)); }
  // Bits 0..d inclusive / bits 0..d-1 / bits d..63 / bits d+1..63.
  static std::uint64_t upto(unsigned d) { return d == 63 ? ~std::uint64_t{0} : (std::uint64_t{2} << d) - 1; }
  static std::uint64_t below(unsigned d) { return (std::uint64_t{1} << d) - 1; }
  static std::uint64_t from(unsigned d) { return ~std::uint64_t{0} << d; }
  static std::uint64_t above(unsigned d) { return d == 63 ? 0 : ~std::uint64_t{0} << (d + 1); }

  void* make_node(unsigned lvl) {
    ++nodes_;
    if (lvl + 1 == levels) return new Leaf();
    return new Interior();
  }
  void free_node(void* n, unsigned lvl) {
    --nodes_;
    if (lvl + 1 == levels)
      delete static_cast<Leaf*>(n);
    else
      delete static_cast<Interior*>(n);
  }
  void destroy(void* n, unsigned lvl) {
    if (lvl + 1 < levels) {
      auto* in = static_cast<Interior*>(n);
      for (std::uint64_t m = in->bits; m != 0; m &= m - 1) destroy(in->child[lowest(m)], lvl + 1);
    }
    free_node(n, lvl);
  }

  // Descend to the largest / smallest key of a subtree.
  void extreme(void* n, unsigned lvl, key_type acc, bool want_max, Entry& out) const {
    for (; lvl + 1 < levels; ++lvl) {
      auto* in = static_cast<Interior*>(n);
      const unsigned j = want_max ? highest(in->bits) : lowest(in->bits);
      acc = (acc << digit_bits) | j;
      n = in->child[j];
    }
    auto* lf = static_cast<Leaf*>(n);
    const unsigned j = want_max ? highest(lf->bits) : lowest(lf->bits);
    out.key = (acc << digit_bits) | j;
    out.value = &lf->val[j];
  }

  bool floor_rec(void* n, unsigned lvl, key_type k, key_type acc, Entry& out) const {
    const unsigned d = digit(k, lvl);
    if (lvl + 1 == levels) {
      auto* lf = static_cast<Leaf*>(n);
      const std::uint64_t m = lf->bits & upto(d);
      if (m == 0) return false;
      const unsigned j = highest(m);
      out.key = (acc << digit_bits) | j;
      out.value = &lf->val[j];
      return true;
    }
    auto* in = static_cast<Interior*>(n);
    if (((in->bits >> d) & 1u) && floor_rec(in->child[d], lvl + 1, k, (acc << digit_bits) | d, out))
      return true;
    const std::uint64_t m = in->bits & below(d);
    if (m == 0) return false;
    const unsigned j = highest(m);
    extreme(in->child[j], lvl + 1, (acc << digit_bits) | j, true, out);
    return true;
  }

  bool ceil_rec(void* n, unsigned lvl, key_type k, key_type acc, Entry& out) const {
    const unsigned d = digit(k, lvl);
    if (lvl + 1 == levels) {
      auto* lf = static_cast<Leaf*>(n);
      const std::uint64_t m = lf->bits & from(d);
      if (m == 0) return false;
      const unsigned j = lowest(m);
      out.key = (acc << digit_bits) | j;
      out.value = &lf->val[j];
      return true;
    }
    auto* in = static_cast<Interior*>(n);
    if (((in->bits >> d) & 1u) && ceil_rec(in->child[d], lvl + 1, k, (acc << digit_bits) | d, out))
      return true;
    const std::uint64_t m = in->bits & above(d);
    if (m == 0) return false;
    const unsigned j = lowest(m);
    extreme(in->child[j], lvl + 1, (acc << digit_bits) | j, false, out);
    return true;
  }

  template <class F>
  void walk(void* n, unsigned lvl, key_type acc, F& f) const {
    if (lvl + 1 == levels) {
      auto* lf = static_cast<Leaf*>(n);
      for (std::uint64_t m = lf->bits; m != 0; m &= m - 1) {
        const unsigned j = lowest(m);
        f((acc << digit_bits) | j, lf->val[j]);
      }
      return;
    }
    auto* in = static_cast<Interior*>(n);
    for (std::uint64_t m = in->bits; m != 0; m &= m - 1) {
      const unsigned j = lowest(m);
      walk(in->child[j], lvl + 1, (acc << digit_bits) | j, f);
    }
  }

  void* root_ = nullptr;
  std::size_t size_ = 0;
  std::size_t nodes_ = 0;
};

}  // namespace manyalloc
