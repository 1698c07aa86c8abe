// mr_init / mr_finalize: layout, global address space, transport, and the
// scheduler loop on scheduler ranks.
#include <mpi.h>

#include <cstdlib>

#include "manyalloc/common/env_options.hpp"
#include "manyalloc/region/mpi_interop.h"
#include "manyalloc/region/region.h"
#include "runtime.hpp"
#include "scheduler.hpp"

using namespace manyalloc::region::detail;

namespace {
long env_long(const char* name, long fallback) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == '\0') return fallback;
  char* end = nullptr;
  const long x = std::strtol(v, &end, 10);
  return (end != nullptr && *end == '\0') ? x : fallback;
}

// A two-way mr_config setting: the explicit field when nonzero (one of
// `values`), else MANYALLOC_REGION_<name> read by the common options parser
// (`names`, unset or empty: the first); 0 for a value that is neither.
int choice(int field, const char* name, const char* const (&names)[3], const int (&values)[2]) {
  if (field != 0) return field == values[0] || field == values[1] ? field : 0;
  const manyalloc::env::Value v =
      manyalloc::env::read("MANYALLOC_REGION_", {name, manyalloc::env::Kind::choice, 0, names, ""});
  return v.valid ? values[v.number] : 0;
}
constexpr const char* kTransferNames[3] = {"auto", "copy", nullptr};
constexpr int kTransferValues[2] = {MR_TRANSFER_AUTO, MR_TRANSFER_COPY};
constexpr const char* kPrefaultNames[3] = {"on", "off", nullptr};
constexpr int kPrefaultValues[2] = {MR_PREFAULT_ON, MR_PREFAULT_OFF};
}  // namespace

extern "C" {

mr_status mr_init(int* argc, char*** argv, const mr_config* cfg) {
  Runtime& rt = runtime();
  if (rt.initialized) return MR_ERR_INIT;
  int inited = 0;
  MPI_Initialized(&inited);
  if (!inited) {
    MPI_Init(argc, argv);
    rt.we_initialized_mpi = true;
  }
  mr_config c{};
  if (cfg != nullptr) c = *cfg;
  const int levels = c.levels > 0 ? c.levels : static_cast<int>(env_long("MANYALLOC_REGION_LEVELS", 1));
  const int fanout = c.fanout > 0 ? c.fanout : static_cast<int>(env_long("MANYALLOC_REGION_FANOUT", 4));
  const std::uint64_t gas_bytes =
      c.gas_bytes > 0 ? c.gas_bytes
                      : static_cast<std::uint64_t>(env_long("MANYALLOC_REGION_GAS_MIB", 64 * 1024)) << 20;
  // Transfer mode: the explicit field, else MANYALLOC_REGION_TRANSFER
  // (copy | auto), default auto; prefault likewise (on | off), default on.
  // Decided before any collective so that a bad value fails on every rank
  // alike.
  const int transfer = choice(c.transfer, "transfer", kTransferNames, kTransferValues);
  const int prefault = choice(c.prefault, "prefault", kPrefaultNames, kPrefaultValues);
  if (transfer == 0 || prefault == 0) return MR_ERR_INIT;
  int world = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rt.rank);
  MPI_Comm_size(MPI_COMM_WORLD, &world);
  auto topo = Topology::make(world, levels, fanout);
  if (!topo || gas_bytes % page_bytes != 0 || gas_bytes == 0) return MR_ERR_INIT;
  rt.topo = *topo;
  // The library's communicators first: every later collective and message
  // of the library is on them, never on the application's (isolation).
  const bool worker = !rt.topo.is_scheduler(rt.rank);
  rt.transport = std::make_unique<MpiTransport>(worker);
  rt.gas = map_global_address_space(gas_bytes, transfer == MR_TRANSFER_AUTO, rt.transport->world_comm_handle());
  if (rt.gas.base == 0) {
    rt.transport.reset();
    return MR_ERR_INIT;
  }
  rt.initialized = true;
  if (worker) {
    rt.leaf = rt.topo.leaf_of(rt.rank);
    rt.prefault = Prefaulter(rt.gas.base, rt.gas.shared && prefault == MR_PREFAULT_ON);
    return MR_OK;
  }
  SchedulerTuning tuning;
  if (c.leaf_pages_hi > 0) tuning.leaf_pages_hi = c.leaf_pages_hi;
  if (c.region_slabs_hi > 0) tuning.regions.region_hi = c.region_slabs_hi;
  if (c.load_threshold > 0) tuning.load_threshold = c.load_threshold;
  Scheduler sched(*rt.transport, rt.topo, rt.gas, tuning);
  sched.run();
  return MR_OK;
}

mr_status mr_finalize(void) {
  Runtime& rt = runtime();
  if (!rt.initialized) {
    if (rt.we_initialized_mpi) MPI_Finalize();
    rt.we_initialized_mpi = false;
    return MR_ERR_INIT;
  }
  if (rt.is_worker()) {
    rt.transport->worker_barrier();
    rt.transport->send(rt.leaf, make_msg(op_done, static_cast<std::uint64_t>(rt.rank), 0));
  }
  rt.transport.reset();
  unmap_global_address_space(rt.gas);
  rt.initialized = false;
  if (rt.we_initialized_mpi) MPI_Finalize();
  rt.we_initialized_mpi = false;
  return MR_OK;
}

int mr_is_worker(void) { return runtime().is_worker() ? 1 : 0; }
int mr_worker_id(void) { return runtime().is_worker() ? runtime().topo.worker_index(runtime().rank) : -1; }
int mr_num_workers(void) { return runtime().initialized ? runtime().topo.nworkers : 0; }
int mr_num_schedulers(void) { return runtime().initialized ? runtime().topo.nsched : 0; }
int mr_scheduler_levels(void) { return runtime().initialized ? runtime().topo.levels : 0; }

const char* mr_strerror(mr_status s) {
  switch (s) {
    case MR_OK: return "ok";
    case MR_ERR_NO_REGION: return "no such region";
    case MR_ERR_INVALID_POINTER: return "not the start of a live object";
    case MR_ERR_NO_MEMORY: return "global address space exhausted";
    case MR_ERR_BAD_ARGUMENT: return "bad argument";
    case MR_ERR_NOT_WORKER: return "call made on a scheduler rank";
    case MR_ERR_INIT: return "initialisation failed or missing";
    case MR_ERR_TRUNCATED: return "more regions or objects received than room given";
  }
  return "unknown status";
}

MPI_Comm mr_worker_comm(void) {
  Runtime& rt = runtime();
  if (!rt.is_worker()) return MPI_COMM_NULL;
  return *static_cast<MPI_Comm*>(rt.transport->user_worker_comm_handle());
}

}  // extern "C"
