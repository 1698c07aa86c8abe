// A whole scheduler tree in one process over InProcNetwork: the layout of
// an MPI run (Topology), one Scheduler<InProcTransport> per scheduler rank,
// and an endpoint for every worker rank, which the caller drives (unit
// tests send requests by hand; the simulator runs request generators).
// Nothing is mapped: the GAS is a range of numbers (schedulers never touch
// the memory they hand out, slab_pool.hpp, and release_pages is none).
#pragma once

#include <memory>
#include <stdexcept>
#include <vector>

#include "inproc_transport.hpp"
#include "scheduler.hpp"
#include "topology.hpp"

namespace manyalloc::region::detail {

class InProcCluster {
 public:
  // A fake GAS base: aligned, non-zero, never dereferenced.
  static constexpr std::uint64_t fake_gas_base = std::uint64_t{1} << 44;

  InProcCluster(int levels, int fanout, int workers, std::uint64_t gas_bytes, const SchedulerTuning& tuning)
      : topo_(layout(levels, fanout, workers)), net_(topo_.world), failed_(static_cast<std::size_t>(topo_.world), 0) {
    gas_.base = fake_gas_base;
    gas_.bytes = gas_bytes;
    gas_.shared = false;
    SchedulerTuning t = tuning;
    t.release_pages = nullptr;
    endpoints_.reserve(static_cast<std::size_t>(topo_.world));
    for (int r = 0; r < topo_.world; ++r) endpoints_.emplace_back(net_, r);
    for (int s = 0; s < topo_.nsched; ++s)
      sched_.push_back(std::make_unique<Scheduler<InProcTransport>>(endpoints_[static_cast<std::size_t>(s)], topo_,
                                                                     gas_, t));
  }

  // Schedulers in a tree of `levels` levels with `fanout` children each, then
  // the workers: the world an MPI run of the same layout has.
  static Topology layout(int levels, int fanout, int workers) {
    long nsched = 0, width = 1;
    for (int l = 0; l < levels; ++l, width *= fanout) nsched += width;
    auto t = Topology::make(static_cast<int>(nsched) + workers, levels, fanout);
    if (!t) throw std::invalid_argument("InProcCluster: no such layout (levels 1-8, fanout >= 1, workers >= 1)");
    return *t;
  }

  const Topology& topo() const { return topo_; }
  InProcNetwork& net() { return net_; }
  InProcTransport& endpoint(int rank) { return endpoints_[static_cast<std::size_t>(rank)]; }
  Scheduler<InProcTransport>& scheduler(int s) { return *sched_[static_cast<std::size_t>(s)]; }
  const SchedulerCore& core(int s) const { return sched_[static_cast<std::size_t>(s)]->core(); }
  int worker_rank(int index) const { return topo_.worker_rank(index); }

  // Every scheduler's start() (the first refills), in rank order.
  void start() {
    for (auto& s : sched_) s->start();
  }
  // Rank `rank` dies (region.h, "Failures"): what waits for it and what is
  // sent to it later is dropped, and its live neighbour schedulers (its
  // parent or leaf, its child schedulers) learn of it as their PeerWatch
  // would tell them (Scheduler::peer_failed); the others hear of it through
  // their notices (F5) as the cluster is pumped.
  void fail(int rank) {
    failed_[static_cast<std::size_t>(rank)] = 1;
    drop_mail(rank);
    for (int s = 0; s < topo_.nsched; ++s) {
      if (failed_[static_cast<std::size_t>(s)] != 0) continue;
      if (topo_.is_neighbour(s, rank)) sched_[static_cast<std::size_t>(s)]->peer_failed(rank);
    }
  }
  bool failed(int rank) const { return failed_[static_cast<std::size_t>(rank)] != 0; }

  // Serves scheduler messages in ready order, one message per turn, until
  // none waits at any scheduler (mail of failed ranks is dropped). Messages to workers stay in their inboxes;
  // their ranks are handed to on_worker(rank) when given (the simulator),
  // else left for the caller to take. Returns the messages handled.
  template <class OnWorker>
  std::size_t pump(OnWorker&& on_worker) {
    std::size_t n = 0;
    for (int r = net_.next_ready(); r >= 0; r = net_.next_ready()) {
      if (failed_[static_cast<std::size_t>(r)] != 0) {
        drop_mail(r);
        continue;
      }
      if (!topo_.is_scheduler(r)) {
        on_worker(r);
        continue;
      }
      if (sched_[static_cast<std::size_t>(r)]->step()) ++n;
      net_.requeue(r);
    }
    return n;
  }
  std::size_t pump() {
    return pump([](int) {});
  }

 private:
  void drop_mail(int rank) {
    Message m;
    while (endpoints_[static_cast<std::size_t>(rank)].try_recv_any(m) >= 0) {
    }
  }
  Topology topo_;
  InProcNetwork net_;
  std::vector<char> failed_;
  GasMapping gas_;
  std::vector<InProcTransport> endpoints_;
  std::vector<std::unique_ptr<Scheduler<InProcTransport>>> sched_;
};

}  // namespace manyalloc::region::detail
