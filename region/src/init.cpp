// mr_init / mr_finalize: settings and layout (options.*), the library's own
// communicators, the global address space, and the scheduler loop on
// scheduler ranks. Every failure of mr_init leaves a reason for
// mr_last_error and for the calls that follow it.
#include <mpi.h>
#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdio>
#include <vector>

#include "last_error.hpp"
#include "manyalloc/region/mpi_interop.h"
#include "manyalloc/region/region.h"
#include "options.hpp"
#include "runtime.hpp"
#include "scheduler.hpp"

using namespace manyalloc::region::detail;

namespace {

// mr_init failed on this rank for `why`; later calls repeat the reason.
mr_status init_failed(Runtime& rt, const char* why) {
  rt.init_failed = true;
  std::snprintf(rt.init_failure, sizeof rt.init_failure, "%s", why);
  return fail(MR_ERR_INIT, "%s", why);
}

mr_status init(Runtime& rt, int* argc, char*** argv, const mr_config* cfg) {
  if (rt.initialized) return fail(MR_ERR_INIT, "mr_init: already initialised (once per process)");
  if (rt.finalized)
    return fail(MR_ERR_INIT, "mr_init: called after mr_finalize (the library is initialised once per process)");
  int inited = 0, mpi_done = 0;
  MPI_Finalized(&mpi_done);
  if (mpi_done) return fail(MR_ERR_INIT, "mr_init: MPI has already been finalised");
  MPI_Initialized(&inited);
  if (!inited) {
    // Funnelled: only this thread will call MPI through the library (the
    // other threads' calls stop at the thread check, region.h).
    MPI_Init_thread(argc, argv, MPI_THREAD_FUNNELED, &rt.mpi_thread_level);
    rt.we_initialized_mpi = true;
  } else {
    MPI_Query_thread(&rt.mpi_thread_level);
  }
  // Settings are checked before any collective, so that a bad value fails
  // on every rank alike (all ranks read the same environment).
  char why[sizeof rt.init_failure];
  Settings s;
  if (!resolve_settings(cfg, s, why, sizeof why)) return init_failed(rt, why);
  int world = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rt.rank);
  MPI_Comm_size(MPI_COMM_WORLD, &world);
  if (!check_layout(s, world, why, sizeof why)) return init_failed(rt, why);
  const auto topo = Topology::make(world, s.levels, s.fanout);
  if (!topo) {
    std::snprintf(why, sizeof why, "mr_init: no layout of %d levels, fanout %d for %d ranks", s.levels, s.fanout,
                  world);
    return init_failed(rt, why);
  }
  rt.topo = *topo;
  // The library's communicators first: every later collective and message
  // of the library is on them, never on the application's (isolation).
  const bool worker = !rt.topo.is_scheduler(rt.rank);
  rt.transport = std::make_unique<MpiTransport>(worker);
  rt.gas = map_global_address_space(s.gas_bytes, s.transfer == MR_TRANSFER_AUTO, s.force_remote,
                                    rt.transport->world_comm_handle());
  if (rt.gas.base == 0) {
    rt.transport.reset();
    std::snprintf(why, sizeof why,
                  "mr_init: could not map the global address space (%llu MiB) at one address on every rank "
                  "(%d candidate addresses tried); a smaller MANYALLOC_REGION_GAS_MIB or mr_config.gas_bytes may fit",
                  static_cast<unsigned long long>(s.gas_bytes >> 20), rt.gas.attempts);
    return init_failed(rt, why);
  }
  rt.owner = pthread_self();
  rt.owner_tid = static_cast<long>(syscall(SYS_gettid));
  rt.initialized = true;
  rt.init_failed = false;
  // Failures (region.h): every rank is alive here (the GAS check above was
  // a collective), so the pidfds opened now name the right processes (W1).
  {
    std::vector<int> watched;
    if (worker) {
      watched.push_back(rt.topo.leaf_of(rt.rank));
      for (int w = 0; w < rt.topo.nworkers; ++w) watched.push_back(rt.topo.worker_rank(w));
    } else {
      watched = rt.topo.neighbours(rt.rank);
    }
    rt.watch.watch(rt.transport->exchange_identities(), rt.rank, watched);
    rt.transport->report_errors_to(&rt.watch);
  }
  if (worker) {
    rt.leaf = rt.topo.leaf_of(rt.rank);
    rt.prefault = Prefaulter(rt.gas.base, rt.gas.shared && s.prefault == MR_PREFAULT_ON);
    rt.xfers = TransferState{};
    rt.xfers.sent_to.assign(static_cast<std::size_t>(rt.topo.nworkers), 0);
    rt.xfers.taken_from.assign(static_cast<std::size_t>(rt.topo.nworkers), 0);
    return MR_OK;
  }
  SchedulerTuning tuning;
  if (s.leaf_pages_hi > 0) tuning.leaf_pages_hi = s.leaf_pages_hi;
  if (s.region_slabs_hi > 0) tuning.regions.region_hi = s.region_slabs_hi;
  if (s.load_threshold > 0) tuning.load_threshold = s.load_threshold;
  tuning.release_pages = &release_gas_slabs;
  Scheduler<MpiTransport> sched(*rt.transport, rt.topo, rt.gas, tuning);
  sched.run(&rt.watch);
  rt.sched_received = sched.core().received();
  rt.sched_failure = sched.core().first_failure();
  return MR_OK;
}

const char* thread_level_name(int level) {
  if (level == MPI_THREAD_SINGLE) return "MPI_THREAD_SINGLE";
  if (level == MPI_THREAD_FUNNELED) return "MPI_THREAD_FUNNELED";
  if (level == MPI_THREAD_SERIALIZED) return "MPI_THREAD_SERIALIZED";
  if (level == MPI_THREAD_MULTIPLE) return "MPI_THREAD_MULTIPLE";
  return "unknown";
}

}  // namespace

mr_status Runtime::wrong_thread(const char* call) const {
  return fail(MR_ERR_THREAD,
              "%s: called from thread %ld, but only thread %ld (the one that called mr_init) may call the library: "
              "it is funnelled (MPI thread level %s), so calls from other threads are refused",
              call, static_cast<long>(syscall(SYS_gettid)), owner_tid, thread_level_name(mpi_thread_level));
}

mr_status Runtime::not_initialized(const char* call) const {
  if (finalized) return fail(MR_ERR_NOT_INITIALIZED, "%s: called after mr_finalize", call);
  if (init_failed)
    return fail(MR_ERR_NOT_INITIALIZED, "%s: the library is not initialised because mr_init failed (%s)", call,
                init_failure);
  return fail(MR_ERR_NOT_INITIALIZED, "%s: called before mr_init", call);
}

extern "C" {

mr_status mr_init(int* argc, char*** argv, const mr_config* cfg) {
  return finish("mr_init", init(runtime(), argc, argv, cfg));
}

mr_status mr_finalize(void) {
  Runtime& rt = runtime();
  if (!rt.initialized) {
    if (rt.finalized || !rt.init_failed) return finish("mr_finalize", rt.not_initialized("mr_finalize"));
    // After a failed mr_init: only MPI, when mr_init initialised it.
    if (rt.we_initialized_mpi) MPI_Finalize();
    rt.we_initialized_mpi = false;
    rt.finalized = true;
    return MR_OK;
  }
  if (!rt.on_owner_thread()) return finish("mr_finalize", rt.wrong_thread("mr_finalize"));
  // After a failure (region.h, "Failures") the steps that need a failed
  // rank are skipped, and mr_finalize says which rank it was.
  mr_status status = MR_OK;
  rt.call = "mr_finalize";
  if (rt.is_worker()) {
    status = drain_transfers();
    rt.watch.poll();
    rt.take_notices();
    if (!rt.watch.failed(rt.leaf))
      rt.transport->send(rt.leaf, DoneNotice{static_cast<std::uint64_t>(rt.rank)}.encode());
    else if (status == MR_OK)
      status = rt.peer_failure(rt.leaf);
    // Any failure this worker knows of, even one its own calls never needed.
    for (int r = 0; r < rt.topo.world && status == MR_OK; ++r)
      if (rt.watch.failed(r)) status = rt.peer_failure(r);
  } else if (rt.sched_failure >= 0) {
    // A scheduler that served on after a failure.
    status = rt.peer_failure(rt.sched_failure);
  }
  rt.transport->report_errors_to(nullptr);
  if (status == MR_OK) {
    rt.transport.reset();
    rt.watch = PeerWatch{};
    unmap_global_address_space(rt.gas);
  } else {
    // After a failure, receives and sends of transfers that never ended may
    // still be posted into the GAS and the transport's buffers: both stay
    // (a leak, once per process) rather than be written after they are gone.
    (void)rt.transport.release();
  }
  rt.initialized = false;
  rt.finalized = true;
  // After a failure MPI is left initialised: MPI_Finalize may wait for the
  // dead rank forever (OpenMPI 4.1's closing fence does, at random).
  if (rt.we_initialized_mpi && status == MR_OK) MPI_Finalize();
  rt.we_initialized_mpi = false;
  return finish("mr_finalize", status);
}

int mr_is_worker(void) { return runtime().is_worker() ? 1 : 0; }
int mr_worker_id(void) { return runtime().is_worker() ? runtime().topo.worker_index(runtime().rank) : -1; }
int mr_num_workers(void) { return runtime().initialized ? runtime().topo.nworkers : 0; }
int mr_num_schedulers(void) { return runtime().initialized ? runtime().topo.nsched : 0; }
int mr_scheduler_levels(void) { return runtime().initialized ? runtime().topo.levels : 0; }

MPI_Comm mr_worker_comm(void) {
  Runtime& rt = runtime();
  if (!rt.is_worker()) return MPI_COMM_NULL;
  return *static_cast<MPI_Comm*>(rt.transport->user_worker_comm_handle());
}

}  // extern "C"
