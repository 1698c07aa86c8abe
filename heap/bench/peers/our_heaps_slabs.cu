// Our SizeClassSlabs configurations in the peers benchmark (the adapter:
// our_heaps.cuh), but RelaxedFreesConfig (our_heaps_slabs_relaxed.cu, a
// file of its own so that a 2-core build compiles the configurations in two
// halves of about the same time). One line per configuration; the number is
// its table column.
#include "manyalloc/heap/creation/size_class_slabs.hpp"
#include "our_heaps.cuh"

namespace {
using namespace manyalloc::heap::peers::ours;

const mp::Register our_slab_heaps[] = {
    mp::Register(ours<CudaHeap<ma::heap::CreationPolicies::SizeClassSlabs<>>>("SizeClassSlabs", 3)),
    mp::Register(ours<CudaHeap<ma::heap::CreationPolicies::SizeClassSlabs<ma::heap::CreationPolicies::FineSizeClassesConfig>>>(
        "SizeClassSlabs+FineClasses", 4)),
};

}  // namespace
