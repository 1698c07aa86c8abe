// Turns a Plan into the new text of the file: callee names replaced (the
// arguments stay as written, macros in them included), the flag parameter
// and arguments inserted, the runtime include and main's Session added.
// Only the main file changes.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "clang/AST/ASTContext.h"

#include "plan.hpp"

namespace manyalloc::coalesce_tool {

enum class SessionPolicy { automatic, always, never };

struct RewriteResult {
  std::string text;                  // the whole new file
  bool changed = false;
  std::vector<std::string> report;   // one line per decision, "file:line:col: ..."
  std::size_t uniform = 0, flagged = 0, dynamic = 0, kept = 0, left = 0, frees = 0, already_rewritten = 0;
  bool session_added = false;
};

RewriteResult rewrite(clang::ASTContext& context, const Plan& plan, UnprovenCalls unproven, SessionPolicy session,
                      const std::string& original_text);

}  // namespace manyalloc::coalesce_tool
