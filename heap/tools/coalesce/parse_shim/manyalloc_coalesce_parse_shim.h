// Parse-only CUDA declarations for manyalloc-coalesce (force-included by the
// tool, never by a compiler that builds code).
//
// Why: Clang 14 knows CUDA up to 11.5; the CUDA headers installed here (and
// on the GPU machines) are newer and do not parse with it. The tool only
// needs the syntax and the names a kernel uses, not code generation, so it
// parses the host side of a .cu file with CUDA's headers switched off
// (-nocudainc) and this file in their place: the CUDA keywords as Clang's
// attributes, threadIdx & co. and the device math functions from Clang's own
// resource directory (which match its version), and declarations of the
// runtime API and device intrinsics that kernels commonly use. The stub
// headers next to it (cuda_runtime.h, cuda.h, ...) make a file's own
// `#include <cuda_runtime.h>` land here. A name missing from this file makes
// the parse fail, and the tool then leaves the file unchanged and says so:
// add the declaration here (or with -include after `--`).
#pragma once

#define MANYALLOC_COALESCE_PARSING 1
// A CUDA version Clang 14 supports, for its device headers' version checks.
#define CUDA_VERSION 11050
#define CUDART_VERSION 11050
#define __CUDACC_VER_MAJOR__ 11
#define __CUDACC_VER_MINOR__ 5

#define __global__ __attribute__((global))
#define __device__ __attribute__((device))
#define __host__ __attribute__((host))
#define __shared__ __attribute__((shared))
#define __constant__ __attribute__((constant))
#define __managed__ __attribute__((managed))
#define __launch_bounds__(...) __attribute__((launch_bounds(__VA_ARGS__)))
#define __forceinline__ __inline__ __attribute__((always_inline))
#define __noinline__ __attribute__((noinline))
#define __restrict__ __restrict

#include <__clang_cuda_math_forward_declares.h>
#include <climits>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "__clang_cuda_builtin_vars.h"
#include <__clang_cuda_libdevice_declares.h>
#include <__clang_cuda_device_functions.h>
#include <__clang_cuda_math.h>
#include <__clang_cuda_cmath.h>

// Device-side C library (host versions come from the system headers).
extern "C" {
__device__ void* malloc(size_t) __attribute__((nothrow));
__device__ void free(void*) __attribute__((nothrow));
__device__ int printf(const char*, ...);
__device__ void* memcpy(void*, const void*, size_t);
__device__ void* memset(void*, int, size_t);
__device__ void __assertfail(const char*, const char*, unsigned, const char*, size_t);
// What assert() expands to with glibc, for device code.
__device__ void __assert_fail(const char*, const char*, unsigned, const char*) __attribute__((noreturn));
}

// Vector types and launch configuration.
struct dim3 {
  unsigned x, y, z;
  constexpr dim3(unsigned vx = 1, unsigned vy = 1, unsigned vz = 1) : x(vx), y(vy), z(vz) {}
};
struct int2 { int x, y; };
struct int4 { int x, y, z, w; };
struct uint2 { unsigned x, y; };
struct uint3 { unsigned x, y, z; };
struct uint4 { unsigned x, y, z, w; };
struct float2 { float x, y; };
struct float4 { float x, y, z, w; };
struct double2 { double x, y; };

// Runtime API (host).
typedef struct CUstream_st* cudaStream_t;
typedef struct CUevent_st* cudaEvent_t;
enum cudaError_t { cudaSuccess = 0, cudaErrorMemoryAllocation = 2, cudaErrorInvalidValue = 1 };
typedef enum cudaError_t cudaError;
enum cudaMemcpyKind {
  cudaMemcpyHostToHost = 0, cudaMemcpyHostToDevice = 1, cudaMemcpyDeviceToHost = 2,
  cudaMemcpyDeviceToDevice = 3, cudaMemcpyDefault = 4
};
enum cudaLimit { cudaLimitStackSize = 0, cudaLimitPrintfFifoSize = 1, cudaLimitMallocHeapSize = 2 };
enum cudaDeviceAttr { cudaDevAttrClockRate = 13, cudaDevAttrMultiProcessorCount = 16 };
struct cudaDeviceProp {
  char name[256];
  size_t totalGlobalMem;
  int multiProcessorCount;
  int clockRate;
  int major;
  int minor;
  int warpSize;
  int maxThreadsPerBlock;
};
extern "C" {
int __cudaPushCallConfiguration(dim3 grid, dim3 block, size_t shmem = 0, cudaStream_t stream = 0);
cudaError_t cudaMalloc(void** ptr, size_t bytes);
cudaError_t cudaMallocManaged(void** ptr, size_t bytes, unsigned flags = 1);
cudaError_t cudaMallocHost(void** ptr, size_t bytes);
cudaError_t cudaFree(void* ptr);
cudaError_t cudaFreeHost(void* ptr);
cudaError_t cudaMemcpy(void* dst, const void* src, size_t bytes, cudaMemcpyKind kind);
cudaError_t cudaMemcpyAsync(void* dst, const void* src, size_t bytes, cudaMemcpyKind kind, cudaStream_t s = 0);
cudaError_t cudaMemset(void* dst, int value, size_t bytes);
cudaError_t cudaDeviceSynchronize(void);
cudaError_t cudaDeviceReset(void);
cudaError_t cudaDeviceSetLimit(cudaLimit limit, size_t value);
cudaError_t cudaDeviceGetLimit(size_t* value, cudaLimit limit);
cudaError_t cudaGetDeviceProperties(cudaDeviceProp* prop, int device);
cudaError_t cudaDeviceGetAttribute(int* value, cudaDeviceAttr attr, int device);
cudaError_t cudaGetDevice(int* device);
cudaError_t cudaSetDevice(int device);
cudaError_t cudaGetDeviceCount(int* count);
cudaError_t cudaGetLastError(void);
cudaError_t cudaPeekAtLastError(void);
const char* cudaGetErrorString(cudaError_t error);
cudaError_t cudaEventCreate(cudaEvent_t* event);
cudaError_t cudaEventDestroy(cudaEvent_t event);
cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t stream = 0);
cudaError_t cudaEventSynchronize(cudaEvent_t event);
cudaError_t cudaEventElapsedTime(float* ms, cudaEvent_t start, cudaEvent_t end);
cudaError_t cudaStreamCreate(cudaStream_t* stream);
cudaError_t cudaStreamDestroy(cudaStream_t stream);
cudaError_t cudaStreamSynchronize(cudaStream_t stream);
}
template <class T>
cudaError_t cudaMalloc(T** ptr, size_t bytes) { return cudaMalloc(reinterpret_cast<void**>(ptr), bytes); }
template <class T>
cudaError_t cudaMallocManaged(T** ptr, size_t bytes, unsigned flags = 1) {
  return cudaMallocManaged(reinterpret_cast<void**>(ptr), bytes, flags);
}
template <class T>
cudaError_t cudaMemcpyToSymbol(const T& symbol, const void* src, size_t bytes, size_t offset = 0,
                               cudaMemcpyKind kind = cudaMemcpyHostToDevice);
template <class T>
cudaError_t cudaMemcpyFromSymbol(void* dst, const T& symbol, size_t bytes, size_t offset = 0,
                                 cudaMemcpyKind kind = cudaMemcpyDeviceToHost);

// Device intrinsics.
__device__ void __syncthreads(void);
__device__ void __syncwarp(unsigned mask = 0xffffffffu);
__device__ void __nanosleep(unsigned);
__device__ unsigned __activemask(void);
__device__ unsigned __ballot_sync(unsigned, int);
__device__ int __any_sync(unsigned, int);
__device__ int __all_sync(unsigned, int);
__device__ unsigned __match_any_sync(unsigned, unsigned);
#define MANYALLOC_COALESCE_SHUFFLES(T)                                                   \
  __device__ T __shfl_sync(unsigned, T, int, int = 32);                                  \
  __device__ T __shfl_up_sync(unsigned, T, unsigned, int = 32);                          \
  __device__ T __shfl_down_sync(unsigned, T, unsigned, int = 32);                        \
  __device__ T __shfl_xor_sync(unsigned, T, int, int = 32);
MANYALLOC_COALESCE_SHUFFLES(int)
MANYALLOC_COALESCE_SHUFFLES(unsigned)
MANYALLOC_COALESCE_SHUFFLES(long long)
MANYALLOC_COALESCE_SHUFFLES(unsigned long long)
MANYALLOC_COALESCE_SHUFFLES(float)
MANYALLOC_COALESCE_SHUFFLES(double)
#undef MANYALLOC_COALESCE_SHUFFLES
#define MANYALLOC_COALESCE_ATOMICS(T)                                                    \
  __device__ T atomicAdd(T*, T);                                                         \
  __device__ T atomicSub(T*, T);                                                         \
  __device__ T atomicExch(T*, T);                                                        \
  __device__ T atomicMin(T*, T);                                                         \
  __device__ T atomicMax(T*, T);                                                         \
  __device__ T atomicAnd(T*, T);                                                         \
  __device__ T atomicOr(T*, T);                                                          \
  __device__ T atomicXor(T*, T);                                                         \
  __device__ T atomicCAS(T*, T, T);
MANYALLOC_COALESCE_ATOMICS(int)
MANYALLOC_COALESCE_ATOMICS(unsigned)
MANYALLOC_COALESCE_ATOMICS(unsigned long long)
#undef MANYALLOC_COALESCE_ATOMICS
__device__ float atomicAdd(float*, float);
__device__ double atomicAdd(double*, double);
__device__ float atomicExch(float*, float);
__device__ unsigned atomicInc(unsigned*, unsigned);
__device__ unsigned atomicDec(unsigned*, unsigned);
