// A scheduler: the asynchronous, event-based server of [Lyberis2012] section 5.2.
// Events about local regions are served at once; others are forwarded to the
// parent or to the child that the routing tables name (invariants S1-S3 in
// invariants.hpp). Operations that span schedulers (freeing or packing a
// region whose sub-regions live further down) are reentrant events: a
// Pending record with a token counts the outstanding sub-requests.
#pragma once

#include <cstdint>
#include <deque>
#include <unordered_map>
#include <vector>

#include "gas.hpp"
#include "local_regions.hpp"
#include "mpi_transport.hpp"
#include "protocol.hpp"
#include "topology.hpp"

namespace manyalloc::region::detail {

struct SchedulerTuning {
  RegionWatermarks regions;
  std::uint64_t leaf_pages_hi = 64;  // 1-MiB pages; inner schedulers scale by subtree size
  std::uint64_t leaf_ids_hi = 1024;
  int load_threshold = 4;
};

class Scheduler {
 public:
  Scheduler(MpiTransport& transport, const Topology& topo, const GasMapping& gas, const SchedulerTuning& tuning);
  // Serves until the shutdown protocol completes (all workers finalized).
  void run();

 private:
  enum class Route { local, forward, error };
  Route route_region(std::uint64_t id, int* hop) const;
  Route route_addr(std::uint64_t addr, int* hop) const;

  void dispatch(Message& m, int src);
  void place_region(Message& m);
  void do_rfree(Message& m, bool sub);
  void do_alloc(Message& m);
  void do_free(Message& m);
  void do_info(Message& m);
  void start_pack(Message& m, bool sub);
  void info_sub(Message& m);
  void on_created(Message& m);
  void on_sub_done(Message& m);
  void on_mem_req(Message& m, int src);
  void on_mem_grant(Message& m);
  void on_mem_return(Message& m, int src);
  void release_to_os(std::uint64_t first, std::uint64_t n);
  void on_done();
  void on_exit();
  void reply_stats(Message& m);

  // Replies to the worker (or scheduler) named in m's origin.
  void reply(const Message& m, std::uint64_t status, std::initializer_list<std::uint64_t> args = {},
             const std::uint64_t* payload = nullptr, std::size_t payload_words = 0);
  void send_toward(int dest, Message m);
  void send_to_origin(Message m);
  // A request that needs more memory or ids waits here (5.2).
  void park(Message& m, std::uint64_t need_slabs);
  void fail_parked();
  void check_refill();
  // Flow-back: past the return watermark, whole free pages go to the parent.
  void check_return();
  // Runs the parked requests again (after new memory came in).
  void retry_parked();
  void report_load();

  struct Pending {
    std::uint64_t origin = 0;
    std::uint64_t req = 0;
    bool sub = false;  // answer with op_sub_done instead of op_reply
    std::uint64_t status = 0;
    std::uint64_t outstanding = 0;
    std::vector<Extent> extents;
  };
  std::uint64_t new_pending(const Message& m, bool sub);
  void finish_pending(std::uint64_t token);

  MpiTransport& t_;
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
  bool exit_ = false;
  std::uint64_t messages_ = 0;
};

}  // namespace manyalloc::region::detail
