// The simulator's exact-match check: one pattern (pattern.hpp) run on real
// MPI through the public mr_* calls, then the same pattern in the simulator
// on rank 0; the messages every scheduler received, op by op, must be equal.
//
//   mpiexec -n <schedulers + workers> region_sim_mpi_check [pattern]
//
// Every worker runs its phase scripts: each step is the mr_* call whose
// request the simulator sends (mr_ralloc with MR_NO_HINT, mr_alloc or
// mr_balloc, mr_free, mr_rfree, mr_send: its pack). After its steps a
// worker receives the transfers its peers sent it in the phase (mr_recv;
// no scheduler message), the workers share their tables of region ids and
// kept addresses (MPI_Allgather on mr_worker_comm(): later phases name
// other workers' regions) and meet in mr_barrier. The counts are read when
// the shutdown protocol has ended every scheduler (Runtime::sched_received),
// so no message is still in flight. Why they do not depend on timing: see
// pattern.hpp ("Determinism"); the layout must keep refills to the first
// one per scheduler (the check's sizes do, with the default watermarks).
#include <mpi.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "manyalloc/region/mpi_interop.h"
#include "manyalloc/region/region.h"
#include "runtime.hpp"
#include "sim.hpp"

namespace {

using namespace manyalloc::region;

struct Tables {
  int nregions = 0, nobjects = 0;
  std::vector<std::uint64_t> regions, objects;  // own
  std::vector<std::uint64_t> all_regions, all_objects;  // every worker's, after each phase
  std::uint64_t region(int me, sim::Ref r) const {
    if (r.slot == sim::root_slot) return MR_ROOT_REGION;
    if (r.worker < 0 || r.worker == me) return regions[static_cast<std::size_t>(r.slot)];
    return all_regions[static_cast<std::size_t>(r.worker * nregions + r.slot)];
  }
  std::uint64_t object(int me, sim::Ref r) const {
    if (r.worker < 0 || r.worker == me) return objects[static_cast<std::size_t>(r.slot)];
    return all_objects[static_cast<std::size_t>(r.worker * nobjects + r.slot)];
  }
};

long run_worker(const sim::Pattern& pat, int me, int nw) {
  long fails = 0;
  Tables t;
  t.nregions = pat.region_slots();
  t.nobjects = pat.object_slots();
  t.regions.assign(static_cast<std::size_t>(t.nregions), 0);
  t.objects.assign(static_cast<std::size_t>(t.nobjects), 0);
  t.all_regions.assign(static_cast<std::size_t>(t.nregions * nw), 0);
  t.all_objects.assign(static_cast<std::size_t>(t.nobjects * nw), 0);
  MPI_Comm comm = mr_worker_comm();
  std::vector<void*> batch;
  for (int phase = 0; phase < pat.phases(); ++phase) {
    for (int i = 0;; ++i) {
      const sim::Step st = pat.step(me, phase, i);
      if (st.kind == sim::Kind::none) break;
      mr_status s = MR_OK;
      switch (st.kind) {
        case sim::Kind::ralloc: {
          mr_rid_t id = 0;
          s = mr_ralloc(t.region(me, st.region), MR_NO_HINT, &id);
          t.regions[static_cast<std::size_t>(st.out_slot)] = id;
          break;
        }
        case sim::Kind::alloc:
          batch.assign(st.count, nullptr);
          s = st.count == 1 ? mr_alloc(st.size, t.region(me, st.region), batch.data())
                            : mr_balloc(st.size, t.region(me, st.region), static_cast<int>(st.count), batch.data());
          for (std::uint64_t k = 0; k < st.keep; ++k)
            t.objects[static_cast<std::size_t>(st.out_slot) + k] = reinterpret_cast<std::uint64_t>(batch[k]);
          break;
        case sim::Kind::free: s = mr_free(reinterpret_cast<void*>(t.object(me, st.object))); break;
        case sim::Kind::rfree: s = mr_rfree(t.region(me, st.region)); break;
        case sim::Kind::pack: {
          mr_rid_t regs[sim::Step::max_refs];
          void* objs[sim::Step::max_refs];
          for (int k = 0; k < st.nregions; ++k) regs[k] = t.region(me, st.regions[static_cast<std::size_t>(k)]);
          for (int k = 0; k < st.nobjects; ++k)
            objs[k] = reinterpret_cast<void*>(t.object(me, st.objects[static_cast<std::size_t>(k)]));
          s = mr_send(st.peer, regs, st.nregions, objs, st.nobjects);
          break;
        }
        case sim::Kind::none: break;
      }
      if (s != MR_OK) {
        ++fails;
        std::fprintf(stderr, "worker %d phase %d step %d: %s\n", me, phase, i, mr_last_error());
      }
    }
    // The transfers sent to this worker in this phase, sender by sender.
    for (int v = 0; v < nw; ++v) {
      if (v == me) continue;
      for (int i = 0;; ++i) {
        const sim::Step st = pat.step(v, phase, i);
        if (st.kind == sim::Kind::none) break;
        if (st.kind != sim::Kind::pack || st.peer != me) continue;
        mr_rid_t regs[sim::Step::max_refs];
        void* objs[sim::Step::max_refs];
        int nr = 0, no = 0;
        if (mr_recv(v, regs, sim::Step::max_refs, &nr, objs, sim::Step::max_refs, &no) != MR_OK) ++fails;
      }
    }
    MPI_Allgather(t.regions.data(), t.nregions, MPI_UINT64_T, t.all_regions.data(), t.nregions, MPI_UINT64_T, comm);
    MPI_Allgather(t.objects.data(), t.nobjects, MPI_UINT64_T, t.all_objects.data(), t.nobjects, MPI_UINT64_T, comm);
    if (mr_barrier() != MR_OK) ++fails;
  }
  return fails;
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  // The pattern: the first argument, else REGION_SIM_CHECK_PATTERN (ctest), else list.
  const char* env_pattern = std::getenv("REGION_SIM_CHECK_PATTERN");
  const std::string pattern = argc > 1 ? argv[1] : env_pattern != nullptr ? env_pattern : "list";
  if (mr_init(&argc, &argv, nullptr) != MR_OK) {
    std::fprintf(stderr, "mr_init: %s\n", mr_last_error());
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  detail::Runtime& rt = detail::runtime();
  int rank = 0, world = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &world);
  sim::PatternParams params;
  params.workers = mr_num_workers();
  auto pat = sim::make_pattern(pattern, params);
  if (!pat) {
    if (rank == 0) std::fprintf(stderr, "unknown pattern %s\n", pattern.c_str());
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  long fails = 0;
  if (mr_is_worker()) fails = run_worker(*pat, mr_worker_id(), params.workers);
  const detail::Topology topo = rt.topo;
  const std::uint64_t gas_bytes = rt.gas.bytes;
  const bool scheduler = !mr_is_worker();
  mr_finalize();  // workers: op_done; schedulers: after serving (inside mr_init)

  // Per rank: the scheduler's counts by op (zeros on workers), then fails.
  std::vector<std::uint64_t> mine(detail::op_limit + 1, 0);
  if (scheduler)
    for (std::size_t op = 0; op < detail::op_limit; ++op) mine[op] = rt.sched_received.by_op[op];
  mine[detail::op_limit] = static_cast<std::uint64_t>(fails);
  std::vector<std::uint64_t> all(rank == 0 ? mine.size() * static_cast<std::size_t>(world) : 0);
  MPI_Gather(mine.data(), static_cast<int>(mine.size()), MPI_UINT64_T, all.data(), static_cast<int>(mine.size()),
             MPI_UINT64_T, 0, MPI_COMM_WORLD);
  int rc = 0;
  if (rank == 0) {
    sim::SimConfig cfg;
    cfg.pattern = pattern;
    cfg.params = params;
    cfg.levels = topo.levels;
    cfg.fanout = topo.fanout;
    cfg.gas_bytes = gas_bytes;
    const sim::SimResult r = sim::run_sim(cfg);
    std::uint64_t mpi_fails = 0, mpi_total = 0, sim_total = 0, mismatches = 0;
    for (int k = 0; k < world; ++k) mpi_fails += all[static_cast<std::size_t>(k) * mine.size() + detail::op_limit];
    for (int s = 0; s < topo.nsched; ++s) {
      for (std::size_t op = 0; op < detail::op_limit; ++op) {
        const std::uint64_t m = all[static_cast<std::size_t>(s) * mine.size() + op];
        const std::uint64_t x = r.received[static_cast<std::size_t>(s)].by_op[op];
        mpi_total += m;
        sim_total += x;
        if (m == 0 && x == 0) continue;
        if (m != x) ++mismatches;
        std::printf("scheduler %d op %-11s mpi %llu sim %llu%s\n", s, detail::op_name(op),
                    static_cast<unsigned long long>(m), static_cast<unsigned long long>(x),
                    m != x ? "  MISMATCH" : "");
      }
    }
    std::printf("{\"suite\":\"region-sim\",\"experiment\":\"exact-match\",\"pattern\":\"%s\",\"threads\":%d,"
                "\"schedulers\":%d,\"levels\":%d,\"fanout\":%d,\"mpi_scheduler_messages\":%llu,"
                "\"sim_scheduler_messages\":%llu,\"mismatches\":%llu,\"mpi_fails\":%llu,\"sim_verified\":%s}\n",
                pattern.c_str(), params.workers, topo.nsched, topo.levels, topo.fanout,
                static_cast<unsigned long long>(mpi_total), static_cast<unsigned long long>(sim_total),
                static_cast<unsigned long long>(mismatches), static_cast<unsigned long long>(mpi_fails),
                r.verified ? "true" : "false");
    rc = mismatches == 0 && mpi_fails == 0 && r.verified ? 0 : 1;
    std::printf(rc == 0 ? "exact match\n" : "NO MATCH\n");
  }
  MPI_Finalize();
  return rc;
}
