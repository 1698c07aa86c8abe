// The simulator's driver (sim.hpp): every worker runs its phase script one
// request at a time, as a worker's blocking mr_* call does; a phase ends when
// every worker finished it (the barrier); then the workers finalize (op_done)
// and the shutdown protocol runs to its end.
#include "sim.hpp"

#include <chrono>
#include <stdexcept>

#include "inproc_cluster.hpp"
#include "manyalloc/region/region.h"

namespace manyalloc::region::sim {

using namespace detail;

namespace {

struct WorkerState {
  std::vector<std::uint64_t> regions;
  std::vector<std::uint64_t> objects;
  int next = 0;        // index of the step in flight (or next to send)
  bool busy = false;   // a request is in flight
};

class Driver {
 public:
  Driver(const SimConfig& cfg, const Pattern& pat)
      : pat_(pat), c_(cfg.levels, cfg.fanout, cfg.params.workers, cfg.gas_bytes, cfg.tuning) {
    w_.resize(static_cast<std::size_t>(cfg.params.workers));
    for (WorkerState& s : w_) {
      s.regions.assign(static_cast<std::size_t>(pat.region_slots()), 0);
      s.objects.assign(static_cast<std::size_t>(pat.object_slots()), 0);
    }
  }

  SimResult run() {
    SimResult r;
    const Topology& t = c_.topo();
    r.schedulers = t.nsched;
    r.leaves = t.nleaves;
    r.workers = t.nworkers;
    c_.start();
    pump();
    for (phase_ = 0; phase_ < pat_.phases(); ++phase_) {
      for (int w = 0; w < t.nworkers; ++w) {
        w_[static_cast<std::size_t>(w)].next = 0;
        issue(w);
      }
      pump();
      for (const WorkerState& s : w_)
        if (s.busy) return fail(r, "a request was never answered (phase " + std::to_string(phase_) + ")");
    }
    for (int w = 0; w < t.nworkers; ++w) {
      const int rank = t.worker_rank(w);
      c_.endpoint(rank).post(t.leaf_of(rank), DoneNotice{static_cast<std::uint64_t>(rank)}.encode());
    }
    pump();
    r.requests = requests_;
    r.alloc_requests = alloc_requests_;
    r.objects = objects_;
    r.bytes = bytes_;
    r.fails = fails_;
    r.messages = c_.net().counters().messages;
    r.words = c_.net().counters().words;
    for (int s = 0; s < t.nsched; ++s) r.received.push_back(c_.core(s).received());
    r.verified = true;
    for (int s = 0; s < t.nsched; ++s) {
      const SchedulerCore& core = c_.core(s);
      if (!core.exited()) return fail(r, "scheduler " + std::to_string(s) + " did not exit");
      if (core.pending() != 0 || core.parked() != 0)
        return fail(r, "scheduler " + std::to_string(s) + " ended with pending or parked requests");
      // Every region of the pattern is freed: only the root remains.
      if (core.regions().region_count() != (s == 0 ? 1u : 0u))
        return fail(r, "scheduler " + std::to_string(s) + " still holds regions");
    }
    if (!c_.net().idle()) return fail(r, "messages left undelivered");
    if (fails_ != 0) return fail(r, std::to_string(fails_) + " requests failed");
    return r;
  }

 private:
  static SimResult& fail(SimResult& r, std::string why) {
    r.verified = false;
    r.why_not = std::move(why);
    return r;
  }

  void pump() {
    c_.pump([this](int rank) { on_reply(rank); });
  }

  std::uint64_t region_ref(int w, Ref ref) const {
    if (ref.slot == root_slot) return MR_ROOT_REGION;
    const int who = ref.worker < 0 ? w : ref.worker;
    return w_[static_cast<std::size_t>(who)].regions[static_cast<std::size_t>(ref.slot)];
  }
  std::uint64_t object_ref(int w, Ref ref) const {
    const int who = ref.worker < 0 ? w : ref.worker;
    return w_[static_cast<std::size_t>(who)].objects[static_cast<std::size_t>(ref.slot)];
  }

  // Sends worker w's current step as the request its mr_* call would send.
  void issue(int w) {
    WorkerState& s = w_[static_cast<std::size_t>(w)];
    const Step st = pat_.step(w, phase_, s.next);
    if (st.kind == Kind::none) return;  // done with this phase
    const int rank = c_.worker_rank(w);
    const ReplyTo to{static_cast<std::uint64_t>(rank), ++seq_};
    Message m;
    switch (st.kind) {
      case Kind::ralloc: m = RallocRequest{to, region_ref(w, st.region), -1}.encode(); break;
      case Kind::alloc: m = AllocRequest{to, region_ref(w, st.region), st.size, st.count}.encode(); break;
      case Kind::free: m = FreeRequest{to, object_ref(w, st.object)}.encode(); break;
      // A worker with a shared GAS; with private memory mr_rfree sends a
      // pack request first (worker.cpp, rfree), which is not simulated.
      case Kind::rfree: m = RfreeRequest{to, region_ref(w, st.region)}.encode(); break;
      case Kind::pack: {
        PackRequest p{to, {}, {}};
        for (int i = 0; i < st.nregions; ++i) p.regions.push_back(region_ref(w, st.regions[static_cast<std::size_t>(i)]));
        for (int i = 0; i < st.nobjects; ++i) p.objects.push_back(object_ref(w, st.objects[static_cast<std::size_t>(i)]));
        m = p.encode();
        break;
      }
      case Kind::none: return;
    }
    ++requests_;
    if (st.kind == Kind::ralloc || st.kind == Kind::alloc) ++alloc_requests_;
    s.busy = true;
    c_.endpoint(rank).post(c_.topo().leaf_of(rank), std::move(m));
  }

  // Every reply waiting at worker rank `rank`: one, since a worker has one
  // request in flight.
  void on_reply(int rank) {
    const int w = c_.topo().worker_index(rank);
    WorkerState& s = w_[static_cast<std::size_t>(w)];
    Message m;
    while (c_.endpoint(rank).try_recv_any(m) >= 0) {
      const Step st = pat_.step(w, phase_, s.next);
      const std::uint64_t status = StatusReply::decode(m).status;
      if (status != MR_OK) {
        ++fails_;
      } else if (st.kind == Kind::ralloc) {
        s.regions[static_cast<std::size_t>(st.out_slot)] = RallocReply::decode(m).region;
      } else if (st.kind == Kind::alloc) {
        const AllocReply a = AllocReply::decode(m);
        objects_ += a.addresses.size();
        bytes_ += st.size * st.count;
        for (std::uint64_t k = 0; k < st.keep && k < a.addresses.size(); ++k)
          s.objects[static_cast<std::size_t>(st.out_slot) + k] = a.addresses[k];
      }
      s.busy = false;
      ++s.next;
      issue(w);
    }
  }

  const Pattern& pat_;
  InProcCluster c_;
  std::vector<WorkerState> w_;
  int phase_ = 0;
  std::uint64_t seq_ = 0;
  std::uint64_t requests_ = 0, alloc_requests_ = 0, objects_ = 0, bytes_ = 0, fails_ = 0;
};

}  // namespace

SimResult run_sim(const SimConfig& cfg) {
  auto pat = make_pattern(cfg.pattern, cfg.params);
  if (!pat) throw std::invalid_argument("unknown pattern '" + cfg.pattern + "' (list, barnes-hut, delaunay)");
  Driver d(cfg, *pat);
  const auto t0 = std::chrono::steady_clock::now();
  SimResult r = d.run();
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return r;
}

}  // namespace manyalloc::region::sim
