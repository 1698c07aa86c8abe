// Must not compile: an alignment that does not divide Scatter's page size.
#include "manyalloc/heap/heap.hpp"
using namespace manyalloc::heap;
using Heap = Allocator<CreationPolicies::Scatter<>, DistributionPolicies::NoOp, OOMPolicies::ReturnNull,
                       ReservePoolPolicies::HostPool, AlignmentPolicies::Shrink<8192>>;
int main() { Heap heap(1 << 20); }
