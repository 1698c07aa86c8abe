// Platform macros shared by host and CUDA device code.
//
// MANYALLOC_FN marks a function that runs on the host and, when compiled by
// nvcc, on the device too. These macros only annotate; they never change
// behaviour between translation units.
#pragma once

#if defined(__CUDACC__)
#define MANYALLOC_FN __host__ __device__
#define MANYALLOC_DEVICE_FN __device__
#define MANYALLOC_INLINE __forceinline__
#else
#define MANYALLOC_FN
#define MANYALLOC_DEVICE_FN
#define MANYALLOC_INLINE inline __attribute__((always_inline))
#endif

namespace manyalloc {

// True while compiling the device pass of nvcc. Host-only code paths are
// guarded with `if constexpr (!on_device)` or with the overloads of a back end.
#if defined(__CUDA_ARCH__)
inline constexpr bool on_device = true;
#else
inline constexpr bool on_device = false;
#endif

}  // namespace manyalloc
