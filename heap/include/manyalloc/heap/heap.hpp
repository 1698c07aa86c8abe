// The many-core heap: include this one header. The CUDA policies are
// included only when the translation unit is compiled by nvcc.
#pragma once

#include "manyalloc/heap/acc/concepts.hpp"
#include "manyalloc/heap/acc/host_thread.hpp"
#include "manyalloc/heap/alignment/noop.hpp"
#include "manyalloc/heap/alignment/shrink.hpp"
#include "manyalloc/heap/allocator.hpp"
#include "manyalloc/heap/creation/host_malloc.hpp"
#include "manyalloc/heap/creation/list_based.hpp"
#include "manyalloc/heap/creation/multi_list.hpp"
#include "manyalloc/heap/creation/scatter.hpp"
#include "manyalloc/heap/creation/size_class_slabs.hpp"
#include "manyalloc/heap/distribution/dynamic_warp.hpp"
#include "manyalloc/heap/distribution/noop.hpp"
#include "manyalloc/heap/distribution/uniform.hpp"
#include "manyalloc/heap/distribution/xmalloc_simd.hpp"
#include "manyalloc/heap/oom/bad_alloc_exception.hpp"
#include "manyalloc/heap/oom/return_null.hpp"
#include "manyalloc/heap/reserve_pool/host_pool.hpp"
#include "manyalloc/heap/reserve_pool/host_virtual_memory.hpp"

#if defined(__CUDACC__)
#include "manyalloc/heap/acc/cuda.hpp"
#include "manyalloc/heap/creation/device_malloc.hpp"
#include "manyalloc/heap/reserve_pool/cuda_malloc.hpp"
#include "manyalloc/heap/reserve_pool/cuda_set_limits.hpp"
#include "manyalloc/heap/reserve_pool/cuda_virtual_memory.hpp"
#endif
