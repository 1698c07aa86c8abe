// Must not compile: a type that is no CreationPolicy, rejected by its concept.
#include "manyalloc/heap/heap.hpp"
using namespace manyalloc::heap;
struct NotAPolicy {};
using Heap = Allocator<NotAPolicy, DistributionPolicies::NoOp, OOMPolicies::ReturnNull,
                       ReservePoolPolicies::HostPool, AlignmentPolicies::Shrink<16>>;
int main() { Heap heap(1 << 20); }
