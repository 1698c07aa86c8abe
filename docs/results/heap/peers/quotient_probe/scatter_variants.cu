// Probe: Scatter alloc and free launches, the sequence of
// ../free_variants_probe/free_variants.cu (L2 flushed between alloc and free,
// medians of 11 launches after one) without 8 KiB (whole pages in Scatter),
// for the heap headers it is built against.
#include "manyalloc/heap/creation/scatter.hpp"
#include "../probe_common.cuh"
#define PROBE_HEAP_TYPE ProbeHeap<cp::Scatter<>>
#define PROBE_SKIP_8K 1
#include "../free_variants_probe/free_variants.cu"
