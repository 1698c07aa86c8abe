// Probe: upstream mallocMC 2.6.0's Scatter (its default configuration, 2 GiB
// access blocks, as the peers benchmark builds it: heap/bench/peers/peer_mallocmc.cu)
// in loop.cuh's sequence. C++17, -DALPAKA_ACC_GPU_CUDA_ENABLED, alpaka's and
// mallocMC's include directories and the Boost headers (run.sh).
#include <alpaka/alpaka.hpp>
#include <mallocMC/mallocMC.hpp>
#include <memory>
#include "loop.cuh"
using Dim = alpaka::DimInt<1>;
using Idx = std::size_t;
using Acc = alpaka::AccGpuCudaRt<Dim, Idx>;
struct Config : mallocMC::CreationPolicies::ScatterConf::DefaultScatterConfig {
  static constexpr std::uint32_t accessblocksize = 2u << 30;
};
using Allocator = mallocMC::Allocator<Acc, mallocMC::CreationPolicies::Scatter<Config>, mallocMC::DistributionPolicies::Noop,
                                      mallocMC::OOMPolicies::ReturnNull, mallocMC::ReservePoolPolicies::AlpakaBuf<Acc>,
                                      mallocMC::AlignmentPolicies::Shrink<>>;
struct Adapter {
  mutable Allocator::AllocatorHandle h;
  __device__ void* alloc(unsigned bytes) const { const Acc acc(alpaka::Vec<Dim, Idx>{Idx{1}}); return h.malloc(acc, bytes); }
  __device__ void free(void* p) const { if (p != nullptr) { const Acc acc(alpaka::Vec<Dim, Idx>{Idx{1}}); h.free(acc, p); } }
};
struct Holder {
  alpaka::Platform<Acc> platform{};
  alpaka::Dev<Acc> dev{alpaka::getDevByIdx(platform, 0)};
  alpaka::Queue<Acc, alpaka::Blocking> queue{dev};
  Allocator allocator{dev, queue, size_t{16} << 30};
  Holder() { CK(cudaDeviceSynchronize()); }
  Adapter adapter() { return Adapter{allocator.getAllocatorHandle()}; }
};
int main(int argc, char** argv) { return probe_main([] { return std::make_unique<Holder>(); }, argc, argv); }
