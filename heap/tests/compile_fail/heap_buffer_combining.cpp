// Must not compile: HeapBuffer hands out single frames, DynamicWarp combines a warp's requests.
#include "manyalloc/heap/heap.hpp"
using namespace manyalloc::heap;
using Heap = Allocator<CreationPolicies::HeapBuffer<>, DistributionPolicies::DynamicWarp, OOMPolicies::ReturnNull,
                       ReservePoolPolicies::HostPool, AlignmentPolicies::Shrink<16>>;
int main() { Heap heap(1 << 24); }
