// Coalescing for the case where the caller states that all workers of a
// warp (or block) allocate the same size at the same time ([Blach2022]
// 3.1, "static coalescing"): one superblock per warp / block, no sizes to
// exchange. Choosing one of these policies *is* the statement. Warp scope
// still checks it cheaply (one shuffle, one ballot): lanes asking another
// size than the lowest active lane get a one-part superblock of their own
// (under independent thread scheduling a warp's active set can mix loop
// iterations). Block scope trusts it; a checked build verifies it (a block
// whose sizes differ gets nullptr everywhere and a bad_argument report).
//
//   superblock: [counter: 4 bytes, padded to 16][part 0][part 1]...
//
// The counter starts at the number of parts; each free decrements it and the
// free that takes it to zero returns the superblock to the creation policy.
// The variants differ in how free finds the superblock:
//   Header:   an 8-byte word in front of each part holds the superblock start
//             (payload 8-aligned, 16 when the size is a multiple of 16);
//             bit 0 marks a freed part in a checked build (double free).
//   NoHeader: parts lie back to back (payload alignment = natural alignment of
//             the size, at most 16) and a concurrent hash map holds
//             part -> superblock (superblock_map.hpp; install a SuperblockTable
//             first).
// Scopes:
//   Warp:  the active lanes of the warp (any subset); shuffles, and the
//          root's pointer through acc::group_hand_over (on CUDA a static
//          8 KiB shared-memory box per block).
//   Block: every thread of the block that has not exited, like __syncthreads
//          (never call from divergent code); needs a BlockAccelerator (CUDA
//          shared memory + barriers; EmulatedThread; a host thread is a block
//          of one). Parts in thread order.
//
// Blowup: as for every coalescing policy, a superblock is reused only after
// all of its parts (up to a whole block's) are freed.
// Use with OOMPolicies::ReturnNull (a throwing OOM policy would strand the
// group in distribute()).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "manyalloc/common/bits.hpp"
#include "manyalloc/common/build_config.hpp"
#include "manyalloc/common/platform.hpp"
#include "manyalloc/common/report.hpp"
#include "manyalloc/heap/acc/collectives.hpp"
#include "manyalloc/heap/distribution/detail/segment_coalescing.hpp"
#include "manyalloc/heap/distribution/superblock_map.hpp"

namespace manyalloc::heap::DistributionPolicies {

enum class CoalescingScope { warp, block };
enum class PartLookup { header, no_header };

template <CoalescingScope Scope, PartLookup Lookup>
class UniformCoalescing {
 public:
  static constexpr std::uint64_t prefix = 16;  // counter + padding

  template <class Acc>
  MANYALLOC_FN explicit UniformCoalescing(const Acc&) {}

  template <class Acc>
  MANYALLOC_FN std::size_t collect(const Acc& acc, std::size_t bytes) {
    bytes_ = bytes;
    bool bad = false;
    if constexpr (Scope == CoalescingScope::warp) {
      // The lanes asking what the lowest lane asks share its superblock; a
      // lane asking something else gets a superblock of its own (a warp's
      // active set may mix loop iterations under independent scheduling).
      const std::uint32_t mask = acc.active_mask();
      const unsigned lane = acc.lane_id();
      const bool fits = bytes < (std::uint64_t{1} << 32);
      const std::uint32_t s0 = acc.shfl(mask, fits ? static_cast<std::uint32_t>(bytes) : 0u, acc::lowest_lane(mask));
      group_ = acc.ballot(mask, fits && bytes == s0);
      if (((group_ >> lane) & 1u) != 0u) {
        rank_ = bits::popcount(group_ & bits::low_mask(lane));
        count_ = bits::popcount(group_);
      } else {
        rank_ = 0;
        count_ = 1;
      }
    } else {
      const acc::BlockRank br = acc.block_rank();
      rank_ = br.rank;
      count_ = br.count;
      if constexpr (build::checked_build) {
        const std::uint64_t s0 = acc.block_broadcast(bytes, rank_ == 0);
        bad = acc.block_sync_or(bytes != s0);
      }
    }
    if (bad) {
      if (rank_ == 0) report_misuse(classname_c(), Misuse::bad_argument, nullptr);
      bytes_ = 0;
    }
    if (bytes_ == 0) return 0;
    if constexpr (Lookup == PartLookup::header) {
      if (distribution::detail::natural_alignment(bytes_) == 16u) {
        stride_ = 16u + bytes_;
        in_part_ = 16u;
      } else {
        stride_ = 8u + distribution::detail::round_up(bytes_, 8u);
        in_part_ = 8u;
      }
    } else {
      stride_ = bytes_;
      in_part_ = 0;
    }
    // A multiple of 16, so that chunk-array creation policies (Scatter) keep
    // superblocks 16-aligned: payload alignment and the header's flag bits
    // rely on it.
    const std::uint64_t total = distribution::detail::round_up(prefix + count_ * stride_, 16u);
    if ((total - prefix) / count_ < stride_ || total < prefix) {
      bytes_ = 0;  // overflow: every part fails
      return rank_ == 0 ? ~std::size_t{0} : 0u;
    }
    return rank_ == 0 ? static_cast<std::size_t>(total) : 0u;
  }

  template <class Acc>
  MANYALLOC_FN void* distribute(const Acc& acc, void* mem) {
    const bool root = rank_ == 0;
    if (root && mem != nullptr && bytes_ != 0) {
      acc.store(static_cast<std::uint32_t*>(mem), count_);
      acc.fence();
    }
    std::uint64_t base = 0;
    if constexpr (Scope == CoalescingScope::warp) {
      // A lane outside the lowest lane's group allocated alone.
      base = reinterpret_cast<std::uintptr_t>(mem);
      if (((group_ >> acc.lane_id()) & 1u) != 0u) base = acc::group_hand_over(acc, group_, acc::lowest_lane(group_), base);
    } else {
      base = acc.block_broadcast(reinterpret_cast<std::uintptr_t>(mem), root);
    }
    void* result = nullptr;
    if (base != 0 && bytes_ != 0) {
      auto* p = reinterpret_cast<std::byte*>(base) + prefix + rank_ * stride_ + in_part_;
      if constexpr (Lookup == PartLookup::header) {
        acc.store(reinterpret_cast<std::uint32_t*>(p - 8), static_cast<std::uint32_t>(base));
        acc.store(reinterpret_cast<std::uint32_t*>(p - 4), static_cast<std::uint32_t>(base >> 32));
        result = p;
      } else {
        const auto map = distribution::current_superblock_map();
        if (map.insert(acc, reinterpret_cast<std::uintptr_t>(p), base)) {
          result = p;
        } else {
          report_misuse(classname_c(), Misuse::bad_argument, p);  // map full: the part leaks
        }
      }
    }
    return result;
  }

  template <class Acc>
  MANYALLOC_FN static void* release(const Acc& acc, void* ptr) {
    const auto p = reinterpret_cast<std::uintptr_t>(ptr);
    std::uint64_t base = 0;
    if constexpr (Lookup == PartLookup::header) {
      if (p % 8u != 0u) {
        report_misuse(classname_c(), Misuse::not_a_chunk_start, ptr);
        return nullptr;
      }
      auto* lo = reinterpret_cast<std::uint32_t*>(p - 8);
      const std::uint64_t hi = acc.load(lo + 1);
      std::uint32_t low = acc.load(lo);
      if constexpr (build::checked_build) {
        low = acc.atomic_or(lo, 1u);
        if ((low & 1u) != 0u) {
          report_misuse(classname_c(), Misuse::double_free, ptr);
          return nullptr;
        }
      }
      base = (hi << 32) | (low & ~std::uint32_t{15});
    } else {
      base = distribution::current_superblock_map().remove(acc, p);
      if (base == 0) {
        report_misuse(classname_c(), Misuse::double_free, ptr);
        return nullptr;
      }
    }
    acc.fence();  // this part's accesses before the superblock can be given back
    if (acc.atomic_sub(reinterpret_cast<std::uint32_t*>(base), 1u) != 1u) return nullptr;
    acc.fence();
    return reinterpret_cast<void*>(base);
  }

  static std::string classname() { return classname_c(); }

 private:
  MANYALLOC_FN static const char* classname_c() {
    if constexpr (Scope == CoalescingScope::warp) {
      return Lookup == PartLookup::header ? "WarpHeader" : "WarpNoHeader";
    } else {
      return Lookup == PartLookup::header ? "BlockHeader" : "BlockNoHeader";
    }
  }

  std::uint32_t group_ = 0;  // warp scope: lanes sharing the lowest lane's superblock
  unsigned rank_ = 0;
  unsigned count_ = 0;
  std::size_t bytes_ = 0;
  std::uint64_t stride_ = 0;
  std::uint64_t in_part_ = 0;
};

// Whether a distribution policy needs every worker of its group to ask for
// the same size, and whether its group is the whole block (so it must never
// be called from divergent code).
template <class Policy>
inline constexpr bool requires_uniform_sizes = false;
template <CoalescingScope S, PartLookup L>
inline constexpr bool requires_uniform_sizes<UniformCoalescing<S, L>> = true;
template <class Policy>
inline constexpr bool block_scope = false;
template <PartLookup L>
inline constexpr bool block_scope<UniformCoalescing<CoalescingScope::block, L>> = true;

using WarpHeader = UniformCoalescing<CoalescingScope::warp, PartLookup::header>;
using WarpNoHeader = UniformCoalescing<CoalescingScope::warp, PartLookup::no_header>;
using BlockHeader = UniformCoalescing<CoalescingScope::block, PartLookup::header>;
using BlockNoHeader = UniformCoalescing<CoalescingScope::block, PartLookup::no_header>;

}  // namespace manyalloc::heap::DistributionPolicies
