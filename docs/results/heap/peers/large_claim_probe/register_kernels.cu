// The shared probe kernels (probe_common.cuh) instantiated for the default
// SizeClassSlabs heap, compiled only to read their register counts
// (ptxas_registers.txt): nvcc -std=c++20 -O3 -arch=sm_90 --expt-relaxed-constexpr
// -I<tree>/heap/include -I<tree>/common/include -I<generated> -c register_kernels.cu --resource-usage
#include "../probe_common.cuh"
template __global__ void alloc_k<Heap::Handle>(Heap::Handle, void**, unsigned, unsigned);
template __global__ void free_k<Heap::Handle>(Heap::Handle, void**, unsigned);
