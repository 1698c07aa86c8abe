// In-process model of ControlTransport (transport.hpp): every rank of a
// layout lives in one process, on one thread. InProcNetwork holds one FIFO
// inbox per rank; InProcTransport is one rank's endpoint on it. Used by the
// scheduler unit tests and the simulator (region/sim), which drive the
// ranks themselves (next_ready), so that a run is deterministic: the same
// driver gives the same messages in the same order.
//
// Guarantees, as for MPI: messages between one (sender, receiver) pair
// arrive in the order sent (one FIFO per receiver keeps that for every pair);
// post never blocks. Receives never wait (in one process, on one thread,
// a waiting receive would wait forever): try_recv_any and try_recv_from say
// when nothing is there.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "transport.hpp"

namespace manyalloc::region::detail {

// Message counts of a run: every message posted, by sender, by receiver and
// by op (the first word of the message; ops >= 32 count as op 0).
struct InProcCounters {
  std::uint64_t messages = 0;
  std::uint64_t words = 0;
  std::vector<std::uint64_t> sent_by_rank;
  std::vector<std::uint64_t> received_by_rank;
  std::array<std::uint64_t, 32> by_op{};
};

class InProcNetwork {
 public:
  explicit InProcNetwork(int ranks) : inbox_(static_cast<std::size_t>(ranks)) {
    counters_.sent_by_rank.assign(inbox_.size(), 0);
    counters_.received_by_rank.assign(inbox_.size(), 0);
  }
  InProcNetwork(const InProcNetwork&) = delete;
  InProcNetwork& operator=(const InProcNetwork&) = delete;

  int size() const { return static_cast<int>(inbox_.size()); }

  // Appends msg to `to`'s inbox. A rank whose inbox was empty joins the
  // ready queue (ranks in the order their first waiting message came).
  void deliver(int from, int to, Message msg) {
    check_rank(from, "sender");
    check_rank(to, "receiver");
    Inbox& in = inbox_[static_cast<std::size_t>(to)];
    if (in.empty()) ready_.push_back(to);
    ++counters_.messages;
    counters_.words += msg.size();
    ++counters_.sent_by_rank[static_cast<std::size_t>(from)];
    ++counters_.received_by_rank[static_cast<std::size_t>(to)];
    ++counters_.by_op[!msg.empty() && msg[0] < counters_.by_op.size() ? msg[0] : 0];
    in.items.emplace_back(from, std::move(msg));
  }

  // The next rank with a waiting message (ready queue order), -1 when none.
  // A rank that still has messages after the driver served it must be
  // handed back with requeue() to stay in the queue.
  int next_ready() {
    while (ready_head_ < ready_.size()) {
      const int r = ready_[ready_head_++];
      if (ready_head_ == ready_.size()) {
        ready_.clear();
        ready_head_ = 0;
      } else if (ready_head_ >= 4096 && 2 * ready_head_ >= ready_.size()) {
        // Drop the consumed front so that the queue stays as long as what waits.
        ready_.erase(ready_.begin(), ready_.begin() + static_cast<std::ptrdiff_t>(ready_head_));
        ready_head_ = 0;
      }
      if (!inbox_[static_cast<std::size_t>(r)].empty()) return r;
    }
    return -1;
  }
  void requeue(int rank) {
    if (!inbox_[static_cast<std::size_t>(rank)].empty()) ready_.push_back(rank);
  }

  bool has_mail(int rank) const { return !inbox_[static_cast<std::size_t>(rank)].empty(); }
  std::size_t waiting(int rank) const { return inbox_[static_cast<std::size_t>(rank)].size(); }
  bool idle() const {
    for (const Inbox& in : inbox_)
      if (!in.empty()) return false;
    return true;
  }

  // Front message of `rank`'s inbox into out; its sender, or -1 when empty.
  int take(int rank, Message& out) {
    Inbox& in = inbox_[static_cast<std::size_t>(rank)];
    if (in.empty()) return -1;
    auto& [src, msg] = in.items[in.head++];
    out = std::move(msg);
    const int from = src;
    in.compact();
    return from;
  }
  // First message from `peer` in `rank`'s inbox (others keep their order).
  bool take_from(int rank, int peer, Message& out) {
    Inbox& in = inbox_[static_cast<std::size_t>(rank)];
    for (std::size_t i = in.head; i < in.items.size(); ++i) {
      if (in.items[i].first != peer) continue;
      out = std::move(in.items[i].second);
      in.items.erase(in.items.begin() + static_cast<std::ptrdiff_t>(i));
      in.compact();
      return true;
    }
    return false;
  }

  const InProcCounters& counters() const { return counters_; }

 private:
  // A FIFO as a vector and a head index: no allocation for the many ranks
  // that never receive (a std::deque allocates when constructed).
  struct Inbox {
    std::vector<std::pair<int, Message>> items;
    std::size_t head = 0;
    bool empty() const { return head == items.size(); }
    std::size_t size() const { return items.size() - head; }
    void compact() {
      if (head == items.size()) items.clear(), head = 0;
    }
  };
  void check_rank(int r, const char* what) const {
    if (r < 0 || r >= size()) throw std::out_of_range(std::string("InProcNetwork: bad ") + what + " rank");
  }
  std::vector<Inbox> inbox_;
  std::vector<int> ready_;
  std::size_t ready_head_ = 0;
  InProcCounters counters_;
};

// One rank's endpoint (the ControlTransport the scheduler is generic over).
class InProcTransport {
 public:
  InProcTransport(InProcNetwork& net, int rank) : net_(&net), rank_(rank) {}
  int rank() const { return rank_; }
  int size() const { return net_->size(); }
  void post(int peer, Message msg) { net_->deliver(rank_, peer, std::move(msg)); }
  void send(int peer, const Message& msg) { net_->deliver(rank_, peer, msg); }
  int try_recv_any(Message& out) { return net_->take(rank_, out); }
  bool try_recv_from(int peer, Message& out) { return net_->take_from(rank_, peer, out); }
  // Delivery is immediate: nothing to progress or complete.
  void poll() {}
  void flush() {}

 private:
  InProcNetwork* net_;
  int rank_;
};

static_assert(ControlTransport<InProcTransport>);

}  // namespace manyalloc::region::detail
