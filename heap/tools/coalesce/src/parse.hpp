// Parsing a .cu file for manyalloc-coalesce: Clang 14 in CUDA mode, host
// side only, CUDA's own headers replaced by the parse shim (see
// parse_shim/manyalloc_coalesce_parse_shim.h for why).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "clang/Frontend/ASTUnit.h"

namespace manyalloc::coalesce_tool {

struct ParseSettings {
  std::string shim_dir;      // holds manyalloc_coalesce_parse_shim.h and the stub CUDA headers
  std::string resource_dir;  // Clang 14's resource directory (__clang_cuda_*.h)
  std::string runtime_include_dir;  // holds manyalloc/heap/coalesce/runtime.hpp (searched last)
  std::vector<std::string> extra_args;  // after `--` on the command line (-I, -D, ...)
};

struct ParseResult {
  std::unique_ptr<clang::ASTUnit> unit;  // null when the file did not parse
  unsigned errors = 0;
};

// Parses `text` as the contents of `path` (so that its own includes resolve
// relative to it). Diagnostics go to stderr.
ParseResult parse(const std::string& path, const std::string& text, const ParseSettings& settings);

}  // namespace manyalloc::coalesce_tool
