// Upstream mallocMC 2.6.0 [mallocMC] (alpaka-group/mallocMC @ bffe2aa, with its bundled
// alpaka 1.0.0-dev) as a benchmark baseline, through its public API:
// mallocMC::Allocator<Acc, Scatter, Noop, ReturnNull, AlpakaBuf<Acc>, Shrink<>>
// constructed on an alpaka device and queue; on the device the handle's
// malloc(acc, bytes) / free(acc, p). Our kernels are plain CUDA kernels, so
// each call builds the CUDA accelerator object the way alpaka's own kernel
// launcher does (AccGpuCudaRt from the thread-element extent 1).
//
// Access blocks: its default (2 GiB) when the pool is at least 8 GiB; below
// that 256 MiB, since a pool smaller than one access block plus metadata gets
// no access block at all and crashes (peers README). Compiled as C++17 with
// -DALPAKA_ACC_GPU_CUDA_ENABLED and its own include directories; needs the
// Boost headers (predef, config, core). The sources are unpacked from
// MANYALLOC_PEERS_DIR at configure time, never part of the project.
#include <alpaka/alpaka.hpp>
#include <mallocMC/mallocMC.hpp>

#include <memory>

#include "experiments.cuh"

namespace {
namespace mp = manyalloc::heap::peers;

using Dim = alpaka::DimInt<1>;
using Idx = std::size_t;
using Acc = alpaka::AccGpuCudaRt<Dim, Idx>;

template <std::uint32_t AccessBlock>
struct HeapConfig : mallocMC::CreationPolicies::ScatterConf::DefaultScatterConfig {
  static constexpr std::uint32_t accessblocksize = AccessBlock;
};

template <std::uint32_t AccessBlock>
struct MallocMcAdapter {
  using Allocator =
      mallocMC::Allocator<Acc, mallocMC::CreationPolicies::Scatter<HeapConfig<AccessBlock>>,
                          mallocMC::DistributionPolicies::Noop, mallocMC::OOMPolicies::ReturnNull,
                          mallocMC::ReservePoolPolicies::AlpakaBuf<Acc>, mallocMC::AlignmentPolicies::Shrink<>>;

  struct Handle {
    mutable typename Allocator::AllocatorHandle h;
    __device__ void* malloc(std::size_t bytes) const {
      const Acc acc(alpaka::Vec<Dim, Idx>{Idx{1}});
      return h.malloc(acc, bytes);
    }
    __device__ void free(void* p) const {
      if (p == nullptr) return;
      const Acc acc(alpaka::Vec<Dim, Idx>{Idx{1}});
      h.free(acc, p);
    }
  };

  explicit MallocMcAdapter(std::size_t pool_bytes)
      : dev_(alpaka::getDevByIdx(platform_, 0)), queue_(dev_),
        allocator_(std::make_unique<Allocator>(dev_, queue_, pool_bytes)) {
    mp::check(cudaDeviceSynchronize(), "mallocMC heap initialisation");
  }
  // After a kernel fault (the context is gone) alpaka's buffers would throw
  // from their destructors: leave them; the process ends anyway.
  ~MallocMcAdapter() {
    if (cudaDeviceSynchronize() != cudaSuccess) (void)allocator_.release();
  }
  Handle handle() const { return Handle{allocator_->getAllocatorHandle()}; }

  static constexpr bool fresh_heap = true;
  static std::string note(std::size_t) {
    return "access block " + std::to_string(AccessBlock >> 20) + " MiB";
  }

 private:
  alpaka::Platform<Acc> platform_{};
  alpaka::Dev<Acc> dev_;
  alpaka::Queue<Acc, alpaka::Blocking> queue_;
  std::unique_ptr<Allocator> allocator_;
};

void run_mallocmc(const mp::RunContext& c, const std::string& experiment) {
  const double pool_gib = experiment == "usable" ? c.opt.usable_gib : c.opt.pool_gib;
  if (pool_gib >= 8) mp::run_experiment<MallocMcAdapter<(2u << 30)>>(c, experiment);
  else mp::run_experiment<MallocMcAdapter<(256u << 20)>>(c, experiment);
}

const mp::Register mallocmc{mp::Entry{"mallocMC", true, 300, &run_mallocmc}};

}  // namespace
