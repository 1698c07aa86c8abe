// What manyalloc-coalesce changes in one file and why: every device-side
// malloc/free of the file's kernels and device functions, classified with
// the uniformity analysis and the call graph ([Blach2022] 3.1).
//
//   uniform   every thread of the block reaches the call equally often with
//             the same size -> the uniform coalescing entry point
//   flagged   uniform inside a device function that is called both from
//             uniform and from thread-dependent code: the function gets the
//             paper's optional argument (`bool manyalloc_coalesce = false`),
//             uniform call sites pass true (or their own flag)
//   dynamic   anything not proven -> the dynamic coalescing entry point
//   kept      the same, left as CUDA's malloc (--unproven=keep)
//   left      a call the tool does not touch (in a macro body, a lambda, a
//             __host__ __device__ function), with the reason
// Every free in a kernel or device function becomes the runtime's free,
// which tells the origins apart by address.
#pragma once

#include <string>
#include <vector>

#include "clang/AST/ASTContext.h"
#include "clang/AST/Decl.h"
#include "clang/AST/Expr.h"

namespace manyalloc::coalesce_tool {

enum class UnprovenCalls { dynamic, keep };

enum class AllocationKind { uniform, flagged, dynamic, kept, left, already_rewritten };

struct AllocationSite {
  const clang::CallExpr* call;
  AllocationKind kind;
  std::string function;  // enclosing function's name
  std::string why;
};

struct FreeSite {
  const clang::CallExpr* call;
  bool rewrite;  // false: left as it is (why says so)
  std::string why;
};

struct FlagArgument {
  const clang::CallExpr* call;
  const char* argument;  // "true" or the caller's own flag
};

struct Plan {
  std::vector<AllocationSite> allocations;
  std::vector<FreeSite> frees;
  std::vector<const clang::FunctionDecl*> flag_parameters;  // get `bool manyalloc_coalesce = false`
  std::vector<FlagArgument> flag_arguments;
  const clang::FunctionDecl* main = nullptr;
  bool main_has_session = false;
  std::vector<std::string> notes;  // function-level remarks for the report
};

inline constexpr const char* flag_parameter_name = "manyalloc_coalesce";
inline constexpr const char* runtime_namespace = "manyalloc::heap::coalesce::";

Plan make_plan(clang::ASTContext& context, UnprovenCalls unproven);

}  // namespace manyalloc::coalesce_tool
