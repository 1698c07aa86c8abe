// Must not compile: the list heaps align their chunks to 16 bytes only.
#include "manyalloc/heap/heap.hpp"
using namespace manyalloc::heap;
using Heap = Allocator<CreationPolicies::ListBased<>, DistributionPolicies::NoOp, OOMPolicies::ReturnNull,
                       ReservePoolPolicies::HostPool, AlignmentPolicies::Shrink<64>>;
int main() { Heap heap(1 << 20); }
