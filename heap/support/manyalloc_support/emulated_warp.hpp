// Emulated warps and blocks on host threads: an accelerator whose "warp" is
// a group of up to 32 std::threads that execute the warp collectives
// (ballot, shuffle, active mask, sync) together, and whose "block" is a
// group of such warps with block-wide barriers. It lets the distribution
// policies (warp and block coalescing) run and be tested without a GPU,
// including partial warps, divergent lane subsets and lanes that leave early.
//
// Semantics (modelled on CUDA with independent thread scheduling):
//  - A grid is `blocks` blocks of `threads_per_block` threads; thread r of a
//    block is lane r % 32 of warp r / 32. A launch may leave threads out
//    (they behave like threads that exited at once: partial warps).
//  - Every thread has a current *group* (a lane mask of its warp, given by the
//    launch or by diverge()): the lanes that run the same branch.
//    active_mask() returns the lanes of the caller's group that call it
//    together: it waits until every lane of the group has either called it or
//    exited (returned from the launched function) -- the emulation of
//    __activemask() after reconvergence.
//  - ballot/shfl/sync_lanes(mask) are barriers of exactly the lanes of `mask`.
//  - block_rank/block_sync_or/block_broadcast are barriers of every thread of
//    the block that has not exited.
//  - A collective that does not complete within `deadlock_seconds` prints the
//    situation and aborts, so a broken test fails instead of hanging.
// Memory operations are those of HostThread (sequentially consistent
// std::atomic_ref), so ThreadSanitizer sees every access; the collectives use a
// mutex, which orders the lanes' memory like __syncwarp does.
#pragma once

#include <sched.h>

#include <array>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <map>
#include <mutex>
#include <thread>
#include <vector>

#include "manyalloc/heap/acc/collectives.hpp"
#include "manyalloc/heap/acc/concepts.hpp"
#include "manyalloc/heap/acc/host_thread.hpp"

namespace manyalloc::heap::acc {

class EmulatedGrid;

namespace detail {



// One rendezvous of a fixed set of participants; values travel as uint64.
struct Rendezvous {
  std::uint64_t generation = 0;
  std::uint32_t arrived = 0;        // lanes (warp) that arrived in this round
  unsigned arrived_count = 0;       // threads (block) that arrived
  std::array<std::uint64_t, 32> in{};
  std::array<std::uint64_t, 32> out{};
  // Block rounds.
  std::vector<unsigned> ranks_in;   // thread indices that arrived
  bool any_in = false;
  std::uint64_t root_in = 0;
  std::vector<unsigned> ranks_out;
  bool any_out = false;
  std::uint64_t root_out = 0;
};

struct WarpState {
  std::uint32_t launched = 0;  // lanes the launch started
  std::uint32_t exited = 0;    // lanes whose function returned
  std::map<std::uint32_t, Rendezvous> collectives;   // by mask: ballot/shfl/sync
  std::map<std::uint32_t, Rendezvous> convergence;   // by group: active_mask
};

struct BlockState {
  unsigned live = 0;  // threads started and not exited
  Rendezvous barrier;
  std::vector<WarpState> warps;
};

}  // namespace detail

// The accelerator a thread of an EmulatedGrid launch receives.
class EmulatedThread {
 public:
  static constexpr unsigned warp_size = 32;
  static constexpr bool shuffle_after_divergence = true;  // shfl waits for the named lanes

  unsigned lane_id() const { return rank_ % 32u; }
  std::uint32_t active_mask() const;
  std::uint32_t ballot(std::uint32_t mask, bool pred) const;
  std::uint32_t shfl(std::uint32_t mask, std::uint32_t v, unsigned lane) const;
  std::uint32_t match_any(std::uint32_t mask, std::uint32_t v) const;
  std::uint32_t reduce_or(std::uint32_t mask, std::uint32_t v) const;
  void sync_lanes(std::uint32_t mask) const;
  unsigned processor_id() const { return block_; }
  unsigned warp_id() const { return global_warp_; }

  // The same thread in a branch taken by the lanes of `group` only (a subset
  // of its current group that contains it); all lanes of the group must call
  // diverge with the same mask.
  EmulatedThread diverge(std::uint32_t group) const {
    EmulatedThread t = *this;
    t.group_ = group;
    return t;
  }
  std::uint32_t group() const { return group_; }
  unsigned block_index() const { return block_; }
  unsigned thread_index() const { return rank_; }

  // Memory: as HostThread.
  std::uint32_t load(const std::uint32_t* p) const { return host_.load(p); }
  void store(std::uint32_t* p, std::uint32_t v) const { host_.store(p, v); }
  std::uint32_t atomic_add(std::uint32_t* p, std::uint32_t v) const { return host_.atomic_add(p, v); }
  std::uint32_t atomic_sub(std::uint32_t* p, std::uint32_t v) const { return host_.atomic_sub(p, v); }
  std::uint32_t atomic_sub_release(std::uint32_t* p, std::uint32_t v) const { return host_.atomic_sub_release(p, v); }
  std::uint32_t atomic_and_release(std::uint32_t* p, std::uint32_t v) const { return host_.atomic_and_release(p, v); }
  std::uint32_t atomic_or(std::uint32_t* p, std::uint32_t v) const { return host_.atomic_or(p, v); }
  std::uint32_t atomic_and(std::uint32_t* p, std::uint32_t v) const { return host_.atomic_and(p, v); }
  std::uint32_t atomic_exch(std::uint32_t* p, std::uint32_t v) const { return host_.atomic_exch(p, v); }
  std::uint32_t atomic_cas(std::uint32_t* p, std::uint32_t e, std::uint32_t d) const {
    return host_.atomic_cas(p, e, d);
  }
  void fence() const { host_.fence(); }
  void relax() const { host_.relax(); }
  std::uint16_t load16(const std::uint16_t* p) const { return host_.load16(p); }
  void store16(std::uint16_t* p, std::uint16_t v) const { host_.store16(p, v); }
  std::uint16_t atomic_cas16(std::uint16_t* p, std::uint16_t e, std::uint16_t d) const {
    return host_.atomic_cas16(p, e, d);
  }
  std::uint64_t load64(const std::uint64_t* p) const { return host_.load64(p); }
  void store64(std::uint64_t* p, std::uint64_t v) const { host_.store64(p, v); }
  void store128(std::uint64_t* p, std::uint64_t lo, std::uint64_t hi) const { host_.store128(p, lo, hi); }
  std::uint64_t atomic_cas64(std::uint64_t* p, std::uint64_t e, std::uint64_t d) const {
    return host_.atomic_cas64(p, e, d);
  }
  std::uint64_t atomic_add64(std::uint64_t* p, std::uint64_t v) const { return host_.atomic_add64(p, v); }
  std::uint64_t atomic_exch64(std::uint64_t* p, std::uint64_t v) const { return host_.atomic_exch64(p, v); }
  std::uint64_t atomic_and64(std::uint64_t* p, std::uint64_t v) const { return host_.atomic_and64(p, v); }
  std::uint64_t atomic_and64_release(std::uint64_t* p, std::uint64_t v) const {
    return host_.atomic_and64_release(p, v);
  }

  BlockRank block_rank() const;
  bool block_sync_or(bool pred) const;
  std::uint64_t block_broadcast(std::uint64_t v, bool root) const;

 private:
  friend class EmulatedGrid;
  EmulatedGrid* grid_ = nullptr;
  unsigned block_ = 0;
  unsigned rank_ = 0;          // thread index in the block
  unsigned global_warp_ = 0;
  std::uint32_t group_ = 0;
  HostThread host_{};
};

// Launches a function on emulated threads (one std::thread each) and provides
// the collectives. Not reusable concurrently: one launch at a time.
class EmulatedGrid {
 public:
  static inline double deadlock_seconds = 60.0;

  // Runs f(acc, global_thread_index) on every thread (b, r) of `blocks` x
  // `threads_per_block` for which group_of(r) != 0; group_of(r) is the lane
  // mask of r's first group (it must contain r's lane, and all lanes of a
  // group must get the same mask). Returns when every thread has returned.
  template <class F>
  void run(unsigned blocks, unsigned threads_per_block, const std::function<std::uint32_t(unsigned)>& group_of,
           const F& f) {
    threads_per_block_ = threads_per_block;
    const unsigned warps = (threads_per_block + 31u) / 32u;
    states_.assign(blocks, detail::BlockState{});
    for (auto& b : states_) b.warps.assign(warps, detail::WarpState{});
    std::vector<EmulatedThread> accs;
    for (unsigned b = 0; b < blocks; ++b) {
      for (unsigned r = 0; r < threads_per_block; ++r) {
        const std::uint32_t g = group_of(r);
        if (g == 0) continue;
        if (((g >> (r % 32u)) & 1u) == 0u) fail("a thread's group does not contain its lane");
        EmulatedThread t;
        t.grid_ = this;
        t.block_ = b;
        t.rank_ = r;
        t.global_warp_ = b * warps + r / 32u;
        t.group_ = g;
        accs.push_back(t);
        states_[b].live += 1;
        states_[b].warps[r / 32u].launched |= 1u << (r % 32u);
      }
    }
    std::vector<std::thread> threads;
    threads.reserve(accs.size());
    for (const EmulatedThread& t : accs) {
      threads.emplace_back([this, t, &f] {
        f(t, t.block_ * threads_per_block_ + t.rank_);
        exit_thread(t);
      });
    }
    for (auto& th : threads) th.join();
  }

  // Every thread of every warp runs, in one group per warp (the threads of a
  // partial last warp form a partial group).
  template <class F>
  void run(unsigned blocks, unsigned threads_per_block, const F& f) {
    const unsigned tpb = threads_per_block;
    run(blocks, tpb, [tpb](unsigned r) { return full_group(tpb, r); }, f);
  }

  // The lanes of r's warp that exist in a block of `threads_per_block`.
  static std::uint32_t full_group(unsigned threads_per_block, unsigned r) {
    const unsigned first = r / 32u * 32u;
    const unsigned n = threads_per_block - first < 32u ? threads_per_block - first : 32u;
    return n == 32u ? 0xffffffffu : ((1u << n) - 1u);
  }

 private:
  friend class EmulatedThread;
  using Lock = std::unique_lock<std::mutex>;

  [[noreturn]] static void fail(const char* what) {
    std::fprintf(stderr, "EmulatedGrid: %s\n", what);
    std::abort();
  }

  template <class Done>
  void wait(Lock& lock, const Done& done, const char* what) {
    const auto deadline = std::chrono::steady_clock::now() +
                          std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                              std::chrono::duration<double>(deadlock_seconds));
    while (!done()) {
      if (cv_.wait_until(lock, deadline) == std::cv_status::timeout && !done()) fail(what);
    }
  }

  detail::WarpState& warp_of(const EmulatedThread& t) { return states_[t.block_].warps[t.rank_ / 32u]; }

  // A barrier of exactly the lanes of `mask`; returns every lane's value.
  std::array<std::uint64_t, 32> exchange(const EmulatedThread& t, std::uint32_t mask, std::uint64_t v) {
    const unsigned lane = t.lane_id();
    if (((mask >> lane) & 1u) == 0u) fail("a lane calls a collective with a mask that excludes it");
    Lock lock(mutex_);
    detail::WarpState& w = warp_of(t);
    if ((mask & ~w.launched) != 0u) fail("collective mask names lanes that were not launched");
    detail::Rendezvous& r = w.collectives[mask];
    r.in[lane] = v;
    r.arrived |= 1u << lane;
    const std::uint64_t gen = r.generation;
    if (r.arrived == mask) {
      r.out = r.in;
      r.arrived = 0;
      ++r.generation;
      cv_.notify_all();
    } else {
      wait(lock, [&] { return r.generation != gen; }, "warp collective deadlock (a lane of the mask never came)");
    }
    return r.out;
  }

  // __activemask after reconvergence: the lanes of the caller's group that
  // arrive before every other lane of the group arrived or exited.
  std::uint32_t converge(const EmulatedThread& t) {
    const unsigned lane = t.lane_id();
    Lock lock(mutex_);
    detail::WarpState& w = warp_of(t);
    detail::Rendezvous& r = w.convergence[t.group_];
    r.arrived |= 1u << lane;
    const std::uint64_t gen = r.generation;
    const std::uint32_t group = t.group_;
    auto complete = [&] { return ((r.arrived | w.exited) & group) == (group & w.launched); };
    if (complete()) {
      r.out[0] = r.arrived;
      r.arrived = 0;
      ++r.generation;
      cv_.notify_all();
    } else {
      wait(lock, [&] { return r.generation != gen; }, "active_mask deadlock (a lane of the group neither came nor exited)");
    }
    return static_cast<std::uint32_t>(r.out[0]);
  }

  // A barrier of the block's live threads; completes rounds that only waited
  // for threads that have now exited.
  void finish_block_round_if_complete(detail::BlockState& b) {
    detail::Rendezvous& r = b.barrier;
    if (r.arrived_count == 0 || r.arrived_count < b.live) return;
    r.ranks_out = r.ranks_in;
    r.any_out = r.any_in;
    r.root_out = r.root_in;
    r.ranks_in.clear();
    r.any_in = false;
    r.root_in = 0;
    r.arrived_count = 0;
    ++r.generation;
    cv_.notify_all();
  }

  struct BlockResult {
    std::vector<unsigned> ranks;
    bool any;
    std::uint64_t root;
  };
  BlockResult block_round(const EmulatedThread& t, bool pred, std::uint64_t v, bool root) {
    Lock lock(mutex_);
    detail::BlockState& b = states_[t.block_];
    detail::Rendezvous& r = b.barrier;
    r.ranks_in.push_back(t.rank_);
    r.any_in = r.any_in || pred;
    if (root) r.root_in = v;
    r.arrived_count += 1;
    const std::uint64_t gen = r.generation;
    finish_block_round_if_complete(b);
    wait(lock, [&] { return r.generation != gen; }, "block barrier deadlock (a live thread never came)");
    return {r.ranks_out, r.any_out, r.root_out};
  }

  void exit_thread(const EmulatedThread& t) {
    Lock lock(mutex_);
    detail::BlockState& b = states_[t.block_];
    detail::WarpState& w = b.warps[t.rank_ / 32u];
    w.exited |= 1u << t.lane_id();
    b.live -= 1;
    // Groups waiting in active_mask for this lane can now complete.
    for (auto& [group, r] : w.convergence) {
      if (r.arrived != 0u && ((r.arrived | w.exited) & group) == (group & w.launched)) {
        r.out[0] = r.arrived;
        r.arrived = 0;
        ++r.generation;
      }
    }
    finish_block_round_if_complete(b);
    cv_.notify_all();
  }

  std::mutex mutex_;
  std::condition_variable cv_;
  std::vector<detail::BlockState> states_;
  unsigned threads_per_block_ = 0;
};

inline std::uint32_t EmulatedThread::active_mask() const { return grid_->converge(*this); }

inline std::uint32_t EmulatedThread::ballot(std::uint32_t mask, bool pred) const {
  const auto all = grid_->exchange(*this, mask, pred ? 1u : 0u);
  std::uint32_t out = 0;
  for (unsigned l = 0; l < 32; ++l) {
    if (((mask >> l) & 1u) != 0u && all[l] != 0u) out |= 1u << l;
  }
  return out;
}

inline std::uint32_t EmulatedThread::shfl(std::uint32_t mask, std::uint32_t v, unsigned lane) const {
  const auto all = grid_->exchange(*this, mask, v);
  // Like __shfl_sync, reading a lane outside the mask is undefined; here it
  // fails loudly.
  if (lane >= 32u || ((mask >> lane) & 1u) == 0u) EmulatedGrid::fail("shfl from a lane outside the mask");
  return static_cast<std::uint32_t>(all[lane]);
}

inline std::uint32_t EmulatedThread::match_any(std::uint32_t mask, std::uint32_t v) const {
  const auto all = grid_->exchange(*this, mask, v);
  std::uint32_t out = 0;
  for (unsigned l = 0; l < 32; ++l) {
    if (((mask >> l) & 1u) != 0u && all[l] == v) out |= 1u << l;
  }
  return out;
}

inline std::uint32_t EmulatedThread::reduce_or(std::uint32_t mask, std::uint32_t v) const {
  const auto all = grid_->exchange(*this, mask, v);
  std::uint32_t out = 0;
  for (unsigned l = 0; l < 32; ++l) {
    if (((mask >> l) & 1u) != 0u) out |= static_cast<std::uint32_t>(all[l]);
  }
  return out;
}

inline void EmulatedThread::sync_lanes(std::uint32_t mask) const { (void)grid_->exchange(*this, mask, 0); }

inline BlockRank EmulatedThread::block_rank() const {
  const auto r = grid_->block_round(*this, false, 0, false);
  unsigned below = 0;
  for (unsigned x : r.ranks) below += x < rank_ ? 1u : 0u;
  return {below, static_cast<unsigned>(r.ranks.size())};
}

inline bool EmulatedThread::block_sync_or(bool pred) const { return grid_->block_round(*this, pred, 0, false).any; }

inline std::uint64_t EmulatedThread::block_broadcast(std::uint64_t v, bool root) const {
  return grid_->block_round(*this, false, v, root).root;
}

static_assert(Accelerator<EmulatedThread>);
static_assert(MixedWidthAtomics<EmulatedThread>);
static_assert(BlockAccelerator<EmulatedThread>);

}  // namespace manyalloc::heap::acc
