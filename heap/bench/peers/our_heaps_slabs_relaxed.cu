// SizeClassSlabs with RelaxedFreesConfig in the peers benchmark (the
// adapter: our_heaps.cuh; the other configurations: our_heaps_slabs.cu).
#include "manyalloc/heap/creation/size_class_slabs.hpp"
#include "our_heaps.cuh"

namespace {
using namespace manyalloc::heap::peers::ours;

const mp::Register our_relaxed_slab_heaps[] = {
    mp::Register(ours<CudaHeap<ma::heap::CreationPolicies::SizeClassSlabs<ma::heap::CreationPolicies::RelaxedFreesConfig>>>(
        "SizeClassSlabs+RelaxedFrees", 5)),
};

}  // namespace
