// Which ranks of the job have died or exited (region.h, "Failures";
// README.md, "Failures"). No MPI here: the identities come from mr_init's
// allgather (MpiTransport::exchange_identities) and MPI-reported errors are
// handed in by the caller.
//
// Rules:
//   W1  A rank is watched by its process when it runs on this host (same
//       host key: hostname, boot id and pid namespace): a pidfd opened while
//       every rank is alive (inside mr_init, after a collective) names that
//       very process, so a reused pid can never look alive.
//   W2  A rank is failed once: poll() reports each newly failed rank exactly
//       once (found by its process or handed in by note_failed), and
//       failed() stays true for good.
//   W3  Only poll() and note_failed() change the state. poll() looks at the
//       processes at most once per check_interval_ns (one poll(2) with a
//       zero timeout; without pidfds a kill and a /proc read per rank), so
//       the library's waits may call it as often as they like; in between
//       it only hands out failures noted meanwhile.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace manyalloc::region::detail {

// What every rank tells the others about itself at mr_init.
struct PeerIdentity {
  std::uint64_t host_key = 0;  // equal iff the same kernel and pid namespace
  std::uint64_t pid = 0;
};

// This process's identity.
PeerIdentity own_identity();

class PeerWatch {
 public:
  PeerWatch() = default;
  ~PeerWatch();
  PeerWatch(const PeerWatch&) = delete;
  PeerWatch& operator=(const PeerWatch&) = delete;
  PeerWatch(PeerWatch&& o) noexcept;
  PeerWatch& operator=(PeerWatch&& o) noexcept;

  // Sizes the table for every world rank (all alive) and watches `ranks`
  // of those on this host (W1); ranks elsewhere are known failed only
  // through note_failed().
  void watch(const std::vector<PeerIdentity>& all, int self, const std::vector<int>& ranks);
  // Ranks that failed since the last call (W2, W3).
  std::vector<int> poll();
  // Marks `rank` failed for `why` (an MPI error naming it); true when it
  // was not failed before. The next poll() reports it.
  bool note_failed(int rank, const std::string& why);
  // An MPI error that names no rank (a wildcard probe): every wait of the
  // library fails from now on with `why`.
  void note_broken(const std::string& why);
  const std::string& broken() const { return broken_; }
  bool failed(int rank) const {
    return rank >= 0 && static_cast<std::size_t>(rank) < peers_.size() && peers_[static_cast<std::size_t>(rank)].failed;
  }
  bool any_failed() const { return failures_ != 0 || !broken_.empty(); }
  // How `rank` was found failed ("process 1234 on this host exited"), or "".
  const std::string& why(int rank) const;
  // Ranks watched by process (tests and diagnostics).
  int watched() const { return watched_; }
  static constexpr std::uint64_t check_interval_ns = 2'000'000;

 private:
  struct Peer {
    int fd = -1;          // pidfd, or -1 when not watched by process
    std::uint64_t pid = 0;
    bool by_kill = false;  // no pidfd_open on this kernel: kill(pid, 0)
    bool failed = false;
    std::string why;
  };
  void close_all();
  std::vector<Peer> peers_;
  std::vector<int> unreported_;  // failed, not yet returned by poll()
  std::string broken_;
  int watched_ = 0;
  int failures_ = 0;
  std::uint64_t last_check_ns_ = 0;  // steady clock (W3)
};

}  // namespace manyalloc::region::detail
