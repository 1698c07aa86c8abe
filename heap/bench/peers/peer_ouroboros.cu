// Ouroboros (GPUPeople/Ouroboros @ 9153c55, ICS 2020 [Winter2020]; the commit
// GPUMemManSurvey [Winter2021] pins) as a benchmark baseline, through its public API:
// initialize(bytes) on the host, getDeviceMemoryManager()->malloc / free on
// the device. Two of its instances: OuroPQ (page-based queues, "Ouroboros")
// and OuroCQ (chunk-based queues, "Ouroboros-C"), standard (not virtualized) queues, 16 B - 8 KiB in
// 10 queues; larger requests go to CUDA's device malloc, whose heap Ouroboros
// sets to 500 MB. Known (peers README): its first launch on a fresh heap fills
// its queues (report cold and warm apart), and one kernel that both allocates
// and frees crashes it (churn runs in a child process like everything else).
// Compiled as C++17 with its own flags; the sources are unpacked (and patched
// for CUDA 13, ouroboros-cuda13.diff) from MANYALLOC_PEERS_DIR at configure
// time, never part of the project. Its headers use std::cout without
// including <iostream>.
#include <iostream>
#include <memory>

#include "device/Ouroboros_impl.cuh"
#include "device/MemoryInitialization.cuh"
#include "InstanceDefinitions.cuh"

#include "experiments.cuh"

namespace {
namespace mp = manyalloc::heap::peers;

template <class MemoryManager>
struct OuroborosAdapter {
  struct Handle {
    MemoryManager* m;
    __device__ void* malloc(std::size_t bytes) const { return m->malloc(bytes); }
    __device__ void free(void* p) const {
      if (p != nullptr) m->free(p);
    }
  };

  explicit OuroborosAdapter(std::size_t pool_bytes) : mm_(std::make_unique<MemoryManager>()) {
    mm_->initialize(pool_bytes);
    mp::check(cudaDeviceSynchronize(), "Ouroboros initialize");
  }
  // Its Memory member frees the pool, and exits on a CUDA error: after a kernel
  // fault (the context is gone) it is left alone; the process ends anyway.
  ~OuroborosAdapter() {
    if (cudaDeviceSynchronize() != cudaSuccess) (void)mm_.release();
  }
  Handle handle() const { return Handle{mm_->getDeviceMemoryManager()}; }

  static constexpr bool fresh_heap = true;
  static std::string note(std::size_t) {
    return "requests above 8 KiB go to CUDA's device malloc (heap 500 MB, set by Ouroboros)";
  }

 private:
  std::unique_ptr<MemoryManager> mm_;
};

// The page-based instance runs by default; the chunk-based one when named
// (--allocators ...,Ouroboros-C), to keep the default run short.
const mp::Register ouroboros_p{mp::Entry{"Ouroboros", true, 200, &mp::run_experiment<OuroborosAdapter<OuroPQ>>}};
const mp::Register ouroboros_c{
    mp::Entry{"Ouroboros-C", true, 201, &mp::run_experiment<OuroborosAdapter<OuroCQ>>, /*by_default=*/false}};

}  // namespace
