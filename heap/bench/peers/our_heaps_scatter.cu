// Our Scatter configurations and CUDA's device malloc in the peers
// benchmark (the adapter: our_heaps.cuh). One line per configuration; the
// number is its table column.
#include "our_heaps.cuh"

namespace {
using namespace manyalloc::heap::peers::ours;

const mp::Register our_scatter_heaps[] = {
    mp::Register(ours<CudaHeap<ma::heap::CreationPolicies::Scatter<>>>("Scatter", 0)),
    mp::Register(ours<CudaHeap<ma::heap::CreationPolicies::Scatter<>, ma::heap::DistributionPolicies::XMallocSIMD<4096>>>(
        "Scatter+XMallocSIMD", 1)),
    // Upstream's frees order nothing: this is the configuration that does
    // what they do (the report compares both with upstream).
    mp::Register(ours<CudaHeap<ma::heap::CreationPolicies::Scatter<ma::heap::CreationPolicies::ScatterRelaxedFreesConfig>>>(
        "Scatter+RelaxedFrees", 2)),
    mp::Register(ours<DeviceMallocHeap>("DeviceMalloc", 6)),
};

}  // namespace
