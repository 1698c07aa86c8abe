// What the heap probes under docs/results/heap/peers share: a SizeClassSlabs
// heap through the host class and its alloc/free kernels, with probe_kernels.cuh
// (request sizes, L2 flush, launch timer).
// Built by hand: nvcc -std=c++20 -O3 -arch=sm_90 --expt-relaxed-constexpr with
// the heap and common include directories and a generated build_config.hpp.
#pragma once
#include <cstdio>
#include <vector>
#include <algorithm>
#include "manyalloc/heap/heap.hpp"
#include "manyalloc/heap/creation/size_class_slabs.hpp"
#include "probe_kernels.cuh"
namespace ma = manyalloc;
namespace cp = ma::heap::CreationPolicies;
template <class Creation = cp::SizeClassSlabs<>>
using ProbeHeap = ma::heap::Allocator<Creation, ma::heap::DistributionPolicies::NoOp, ma::heap::OOMPolicies::ReturnNull,
                                      ma::heap::ReservePoolPolicies::CudaMalloc, ma::heap::AlignmentPolicies::Shrink<16>>;
using Heap = ProbeHeap<>;
// CUDA errors: the back end's check (throws with the call named).
#define CK(x) manyalloc::heap::acc::cuda_check((x), #x)
template <class H> __global__ void alloc_k(H h, void** p, unsigned n, unsigned bytes) {
  unsigned i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) { ma::heap::acc::CudaThread a; p[i] = h.alloc(a, probe_size(i, bytes)); } }
// One thread's request of `bytes` into *slot, and its free.
template <class H> __global__ void one_alloc_k(H h, void** slot, size_t bytes) { ma::heap::acc::CudaThread a; *slot = h.alloc(a, bytes); }
template <class H> __global__ void one_free_k(H h, void** slot) { ma::heap::acc::CudaThread a; h.dealloc(a, *slot); }
template <class H> __global__ void free_k(H h, void** p, unsigned n) {
  unsigned i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) { ma::heap::acc::CudaThread a; h.dealloc(a, p[i]); } }
