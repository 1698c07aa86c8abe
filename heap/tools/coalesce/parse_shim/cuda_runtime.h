// Parse-only stand-in for CUDA's cuda_runtime.h (manyalloc-coalesce): see manyalloc_coalesce_parse_shim.h.
#pragma once
#include "manyalloc_coalesce_parse_shim.h"
