// Must not compile: XMallocSIMD for 8 KiB pages on a Scatter heap of 4 KiB pages.
#include "manyalloc/heap/heap.hpp"
using namespace manyalloc::heap;
using Heap = Allocator<CreationPolicies::Scatter<>, DistributionPolicies::XMallocSIMD<8192>, OOMPolicies::ReturnNull,
                       ReservePoolPolicies::HostPool, AlignmentPolicies::Shrink<16>>;
int main() { Heap heap(1 << 20); }
