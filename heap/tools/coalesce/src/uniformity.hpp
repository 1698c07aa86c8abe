// Uniformity analysis of one kernel or device function ([Blach2022] 3.1,
// "relatively simple patterns"): which expressions have the same value in
// every thread of a block, and which statements every thread of the block
// reaches the same number of times.
//
// Rules (sound, not complete: whatever is not proven is "thread-dependent"):
//  - uniform values: literals, sizeof/alignof, enumerators, template
//    parameters, blockIdx/blockDim/gridDim/warpSize, constexpr and
//    __constant__ variables, by-value parameters of a kernel, parameters of a
//    device function that every call site passes a uniform value (the
//    caller's analysis, through ParameterOracle), locals whose every
//    assignment stores a uniform value in uniform control flow, and
//    operators, casts and min/max/constexpr calls over uniform operands;
//  - thread-dependent: threadIdx, any load through a pointer, an array or a
//    reference, globals that are not constant, other calls, and any variable
//    whose address escapes (address taken, bound to a non-const reference,
//    captured by reference in a lambda);
//  - a statement is reached uniformly when every enclosing if/switch/loop
//    condition and every ?:, && and || guard on the way to it is uniform,
//    every loop around it has no break/return/goto under a thread-dependent
//    condition, no continue under one precedes it in its loop body, and no
//    return under a thread-dependent condition may run before it (nor any
//    goto under one anywhere in the function: it may jump back).
#pragma once

#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "clang/AST/ASTContext.h"
#include "clang/AST/Decl.h"
#include "clang/AST/Expr.h"
#include "clang/AST/Stmt.h"

namespace manyalloc::coalesce_tool {

// Whether a device function's parameter is uniform on entry (decided by the
// analyses of its callers).
class ParameterOracle {
 public:
  virtual ~ParameterOracle() = default;
  virtual bool uniform_on_entry(const clang::ParmVarDecl* param) const = 0;
};

// A verdict with the reason when it is negative (for the report).
struct Verdict {
  bool uniform = true;
  std::string why;  // empty when uniform
  static Verdict yes() { return {}; }
  static Verdict no(std::string reason) { return {false, std::move(reason)}; }
};

class FunctionUniformity {
 public:
  FunctionUniformity(const clang::FunctionDecl& function, clang::ASTContext& context, const ParameterOracle& oracle);

  // Iterates the variable assumptions to a fixed point (call once).
  void run();

  Verdict value(const clang::Expr* expr) const;
  // Whether every thread that enters the function reaches `stmt` equally
  // often (the function's entry counts as uniform).
  Verdict reached_uniformly(const clang::Stmt* stmt) const;

  const clang::FunctionDecl& function() const { return function_; }
  std::string text(const clang::Stmt* s) const;

 private:
  struct Definition {
    const clang::VarDecl* var;
    const clang::Expr* value;  // nullptr: ++/-- (depends on the variable itself)
    const clang::Stmt* where;
  };

  void index(const clang::Stmt* s, const clang::Stmt* parent);
  void classify_use(const clang::DeclRefExpr* ref);
  const clang::Stmt* parent(const clang::Stmt* s) const;
  Verdict path(const clang::Stmt* s, const clang::Stmt* stop) const;
  Verdict loop_is_uniform(const clang::Stmt* loop) const;
  bool inside(const clang::Stmt* s, const clang::Stmt* ancestor) const;
  const clang::Stmt* innermost_breakable(const clang::Stmt* s) const;
  Verdict variable(const clang::VarDecl* var) const;
  Verdict call(const clang::CallExpr* call) const;
  bool is_local(const clang::VarDecl* var) const;

  const clang::FunctionDecl& function_;
  clang::ASTContext& context_;
  const ParameterOracle& oracle_;
  std::map<const clang::Stmt*, const clang::Stmt*> parents_;
  std::vector<Definition> definitions_;
  std::map<const clang::VarDecl*, std::string> escaped_;      // var -> why
  std::map<const clang::VarDecl*, std::string> thread_dependent_;  // fixed point result
  std::vector<const clang::Stmt*> exits_;       // return / goto statements
  std::vector<const clang::Stmt*> loop_exits_;  // break / continue statements
  std::vector<const clang::Stmt*> divergent_exits_;  // returns/gotos under a thread-dependent condition
};

}  // namespace manyalloc::coalesce_tool
