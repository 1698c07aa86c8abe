// Parse-only stand-in for CUDA's device_launch_parameters.h (manyalloc-coalesce): see manyalloc_coalesce_parse_shim.h.
#pragma once
#include "manyalloc_coalesce_parse_shim.h"
