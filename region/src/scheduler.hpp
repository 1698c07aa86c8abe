// A scheduler: the asynchronous, event-based server of [Lyberis2012] section 5.2.
// Events about local regions are served at once; others are forwarded to the
// parent or to the child that the routing tables name (invariants S1-S3 in
// invariants.hpp). Operations that span schedulers (freeing or packing a
// region whose sub-regions live further down) are reentrant events: a
// Pending record with a token counts the outstanding sub-requests.
//
// Two parts:
//   SchedulerCore  the event server as a state machine without a transport:
//                  handle() takes one received message and appends what it
//                  sends to an outbox, in order. Deterministic: the same
//                  messages in the same order give the same outbox.
//   Scheduler<T>   the core driven by a ControlTransport (transport.hpp):
//                  MpiTransport in the library, InProcTransport in unit
//                  tests and the simulator. step()/serve() let a driver move
//                  a scheduler one message at a time; run() is the MPI loop.
#pragma once

#include <array>
#include <cstdint>
#include <deque>
#include <unordered_map>
#include <utility>
#include <vector>

#include "gas.hpp"
#include "inproc_transport.hpp"
#include "local_regions.hpp"
#include "mpi_transport.hpp"
#include "peer_watch.hpp"
#include "sched_messages.hpp"
#include "topology.hpp"

namespace manyalloc::region::detail {

// Gives the memory of slabs [first, first + n) back to the operating system
// (M4); false with errno when refused. release_gas_slabs in the library; none
// (nothing released) in tests and the simulator, whose GAS is not mapped.
using ReleasePages = bool (*)(const GasMapping& gas, std::uint64_t first, std::uint64_t n);

struct SchedulerTuning {
  RegionWatermarks regions;
  std::uint64_t leaf_pages_hi = 64;  // 1-MiB pages; inner schedulers scale by subtree size
  std::uint64_t leaf_ids_hi = 1024;
  int load_threshold = 4;
  ReleasePages release_pages = nullptr;
};

class SchedulerCore {
 public:
  // self: this scheduler's world rank. The GAS is only read for its bounds
  // (routing of addresses) unless gas.shared (poison in checked builds,
  // release_pages), so a simulation passes an unmapped one.
  SchedulerCore(int self, const Topology& topo, const GasMapping& gas, const SchedulerTuning& tuning);

  // What the scheduler does before its first message: a leaf without
  // workers is done at once, and the first refill is asked for.
  void start();
  // One message received from world rank `src`; malformed ones are dropped.
  void handle(Message& m, int src);
  // Messages to send, as (destination rank, message), in the order sent;
  // the driver posts them and clears the vector.
  std::vector<std::pair<int, Message>>& outbox() { return out_; }
  // The shutdown protocol reached this scheduler (op_exit, or the top once
  // everything is done).
  bool exited() const { return exit_; }
  const MessageCounts& received() const { return received_; }
  int rank() const { return self_; }
  const LocalRegions& regions() const { return regions_; }
  // Requests waiting for memory or ids (5.2), and pending reentrant events.
  std::size_t parked() const { return parked_.size(); }
  std::size_t pending() const { return pending_.size(); }
  // Last reported subtree load of each child scheduler (placement input).
  const std::vector<std::uint64_t>& child_loads() const { return child_load_; }
  // Rank `rank` has died or exited (region.h, "Failures"; rules F1-F5 in
  // invariants.hpp), found by this scheduler's watch (src < 0) or told by
  // neighbour `src` (op_failed). Acts on it where it is a neighbour (F1-F3),
  // ends pending events (F4), and tells the other neighbours (F5).
  // Idempotent.
  void peer_failed(int rank, int src = -1, std::uint64_t found_by = ~std::uint64_t{0});
  bool failed(int rank) const { return rank >= 0 && rank < topo_.world && dead_[static_cast<std::size_t>(rank)] != 0; }
  // The first failed rank this scheduler found or heard of, -1 for none.
  int first_failure() const { return first_failure_; }
  // Requests answered with MR_ERR_PEER_FAILED because their next hop had failed.
  std::uint64_t bounced() const { return bounced_; }

 private:
  enum class Route { local, forward, error };
  Route route_region(std::uint64_t id, int* hop) const;
  Route route_addr(std::uint64_t addr, int* hop) const;

  // Every message this scheduler sends goes through post (F1: none to a
  // failed rank; a request is answered for it instead).
  void post(int dest, Message m) {
    if (dead_[static_cast<std::size_t>(dest)] != 0) return bounce(dest, std::move(m));
    out_.emplace_back(dest, std::move(m));
  }
  void bounce(int dest, Message m);
  void dispatch(Message& m, int src);
  void route_request(Message& m, std::uint64_t op);
  void place_region(const CreateDown& c, Message&& raw);
  void do_rfree(const RfreeRequest& r, const RfreeSub* sub);
  void do_alloc(const AllocRequest& a, Message& raw);
  void start_pack(const ReplyTo& to, const std::vector<std::uint64_t>& ids, const std::vector<std::uint64_t>& objects,
                  bool sub, bool whole_pools);
  void info_sub(const InfoSub& s);
  void child_gone(const ChildGone& g);
  void on_created(const Created& c);
  void on_sub_done(SubDone d);
  void on_mem_req(const MemReq& r, Message& raw);
  void on_mem_grant(const MemGrant& g);
  void on_mem_return(const MemReturn& r, int src);
  void release_to_os(std::uint64_t first, std::uint64_t n);
  void on_done();
  void on_exit();
  void reply_stats(const StatsRequest& s, Message& raw);

  // Sends a reply (encoded) toward its origin.
  void reply(const ReplyTo& to, std::uint64_t status) { send_toward(to.origin, StatusReply{to, status}.encode()); }
  void send_toward(std::uint64_t dest, Message m);
  // A request that needs more memory or ids waits here (5.2).
  void park(Message&& m, std::uint64_t need_slabs);
  // Answers every parked request with `status` (an mr_status).
  void fail_parked(std::uint64_t status);
  void check_refill();
  // Flow-back: past the return watermark, whole free pages go to the parent.
  void check_return();
  // Runs the parked requests again (after new memory came in).
  void retry_parked();
  void report_load();

  struct Pending {
    ReplyTo to;
    bool sub = false;  // answer with op_sub_done instead of op_reply
    std::uint64_t status = 0;
    std::uint64_t outstanding = 0;
    std::vector<Extent> extents;
  };
  std::uint64_t new_pending(const ReplyTo& to, bool sub);
  void finish_pending(std::uint64_t token);

  Topology topo_;
  int self_;
  int depth_;
  GasMapping gas_;
  SchedulerTuning tuning_;
  std::uint64_t slabs_hi_ = 0, slabs_lo_ = 0, ids_hi_ = 0, ids_lo_ = 0;
  // Free slabs above which whole free pages flow back to the parent, down
  // to slabs_hi_ (2 x slabs_hi_: a refill, which stops at slabs_hi_, never
  // triggers a return by itself).
  std::uint64_t slabs_return_ = 0;
  // Free slab count at the last check_return that found no whole page to
  // give (fragmented free ranges): no new scan until it changes.
  std::uint64_t return_scanned_at_ = ~std::uint64_t{0};
  // Top scheduler, shared GAS: pages returned to it go back to the
  // operating system (M4); off after the kernel refused once.
  bool release_returned_ = true;
  LocalRegions regions_;

  RangeSet<slab_key_bits> granted_slabs_;                        // S1
  RangeSet<id_key_bits> granted_ids_;
  RangeMap<std::uint64_t, slab_key_bits> delegated_slabs_;       // value: child rank
  RangeMap<std::uint64_t, id_key_bits> delegated_ids_;

  std::unordered_map<std::uint64_t, Pending> pending_;
  std::uint64_t next_token_ = 1;
  std::deque<Message> parked_;
  std::uint64_t parked_need_ = 0;
  bool mem_outstanding_ = false;

  std::vector<std::uint64_t> child_load_;  // last reported subtree loads
  std::uint64_t reported_load_ = 0;
  int done_count_ = 0;
  std::vector<char> done_;  // by world rank: the child reported done (or failed, F2)
  std::vector<char> dead_;   // by world rank: failed neighbours (F1)
  std::vector<char> known_;  // by world rank: failures heard of (F5)
  bool parent_failed_ = false;
  std::uint64_t bounced_ = 0;
  int first_failure_ = -1;
  bool exit_ = false;
  MessageCounts received_;
  std::vector<std::pair<int, Message>> out_;
};

template <ControlTransport T>
class Scheduler {
 public:
  Scheduler(T& transport, const Topology& topo, const GasMapping& gas, const SchedulerTuning& tuning)
      : t_(transport), core_(transport.rank(), topo, gas, tuning) {}
  // SchedulerCore::start, its messages posted.
  void start();
  // Takes one waiting message, handles it and posts what it sends; false
  // when none was waiting.
  bool step();
  // Steps until no message is waiting; returns the messages handled.
  std::size_t serve();
  // The watch found `rank` failed (SchedulerCore::peer_failed); the answers
  // and notices posted, and sends still pending to it forgotten where the
  // transport can.
  void peer_failed(int rank);
  // start(), then serves until the shutdown protocol completes (all workers
  // finalized), polling politely when idle; flushes before returning. With
  // a watch, checks it every few milliseconds and hands its failures in.
  void run(PeerWatch* watch = nullptr);
  bool exited() const { return core_.exited(); }
  const SchedulerCore& core() const { return core_; }

 private:
  void post_outbox();
  T& t_;
  SchedulerCore core_;
  Message in_;
};

// Instantiated in scheduler.cpp (MpiTransport only where MPI is linked).
extern template class Scheduler<InProcTransport>;
extern template class Scheduler<MpiTransport>;

}  // namespace manyalloc::region::detail
