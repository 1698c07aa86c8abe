#include "rewrite.hpp"

#include <algorithm>
#include <regex>
#include <sstream>

#include "clang/AST/Decl.h"
#include "clang/AST/Expr.h"
#include "clang/AST/Stmt.h"
#include "clang/AST/TypeLoc.h"
#include "clang/Basic/SourceManager.h"
#include "clang/Lex/Lexer.h"
#include "clang/Rewrite/Core/Rewriter.h"

namespace manyalloc::coalesce_tool {

using namespace clang;

namespace {

constexpr const char* runtime_header = "manyalloc/heap/coalesce/runtime.hpp";
constexpr const char* session_line =
    "const manyalloc::heap::coalesce::Session manyalloc_coalesce_session;  // manyalloc-coalesce: heaps up until main "
    "returns";

class Editor {
 public:
  Editor(ASTContext& context) : sm_(context.getSourceManager()), lang_(context.getLangOpts()) {
    rewriter_.setSourceMgr(context.getSourceManager(), context.getLangOpts());
  }

  // Location in the main file where a (possibly macro-argument) location is
  // spelled; invalid when it comes from a macro body or another file.
  SourceLocation file_location(SourceLocation loc) const {
    if (loc.isMacroID()) {
      if (!sm_.isMacroArgExpansion(loc)) return {};
      loc = sm_.getSpellingLoc(loc);
      if (loc.isMacroID()) return {};
    }
    return sm_.isInMainFile(loc) ? loc : SourceLocation{};
  }

  // Replaces the callee expression of `call` (e.g. `malloc`, `std::malloc`);
  // false (and nothing changed) when it is not written in this file.
  bool replace_callee(const CallExpr* call, const std::string& name) {
    const Expr* callee = call->getCallee()->IgnoreParenImpCasts();
    const SourceLocation b = file_location(callee->getBeginLoc());
    const SourceLocation e = file_location(callee->getEndLoc());
    if (b.isInvalid() || e.isInvalid()) return false;
    return !rewriter_.ReplaceText(CharSourceRange::getTokenRange(b, e), name);
  }

  bool insert_before(SourceLocation loc, const std::string& text) {
    loc = file_location(loc);
    if (loc.isInvalid()) return false;
    return !rewriter_.InsertTextBefore(loc, text);
  }

  bool insert_after_token(SourceLocation loc, const std::string& text) {
    loc = file_location(loc);
    if (loc.isInvalid()) return false;
    return !rewriter_.InsertTextAfterToken(loc, text);
  }

  // Orders report lines by their position in the file.
  bool before(SourceLocation a, SourceLocation b) const {
    return sm_.isBeforeInTranslationUnit(sm_.getExpansionLoc(a), sm_.getExpansionLoc(b));
  }

  std::string where(SourceLocation loc) const {
    const PresumedLoc p = sm_.getPresumedLoc(sm_.getExpansionLoc(loc));
    if (p.isInvalid()) return "?";
    return std::string(p.getFilename()) + ":" + std::to_string(p.getLine()) + ":" + std::to_string(p.getColumn());
  }

  std::string result(const std::string& original, bool& changed) const {
    const RewriteBuffer* buffer = rewriter_.getRewriteBufferFor(sm_.getMainFileID());
    changed = buffer != nullptr;
    return buffer != nullptr ? std::string(buffer->begin(), buffer->end()) : original;
  }

 private:
  const SourceManager& sm_;
  const LangOptions& lang_;
  Rewriter rewriter_;
};

// Where the runtime include goes: before the file's first #include (so the
// runtime's declarations precede the code), else at the top.
std::string add_runtime_include(const std::string& text) {
  const std::string line = std::string("#include \"") + runtime_header + "\"  // added by manyalloc-coalesce\n";
  std::istringstream in(text);
  std::string l;
  std::size_t offset = 0;
  bool in_block_comment = false;
  static const std::regex include_line(R"(^\s*#\s*include\b.*)");
  while (std::getline(in, l)) {
    const bool starts_inside = in_block_comment;
    for (std::size_t i = 0; i + 1 < l.size(); ++i) {
      if (!in_block_comment && l[i] == '/' && l[i + 1] == '/') break;
      if (!in_block_comment && l[i] == '/' && l[i + 1] == '*') in_block_comment = true, ++i;
      else if (in_block_comment && l[i] == '*' && l[i + 1] == '/') in_block_comment = false, ++i;
    }
    if (!starts_inside && std::regex_match(l, include_line)) return text.substr(0, offset) + line + text.substr(offset);
    offset += l.size() + 1;
  }
  // No include: after the comment lines that open the file.
  std::istringstream again(text);
  offset = 0;
  in_block_comment = false;
  while (std::getline(again, l)) {
    const std::size_t first = l.find_first_not_of(" \t");
    const bool comment = in_block_comment || first == std::string::npos || l.compare(first, 2, "//") == 0 ||
                         l.compare(first, 2, "/*") == 0;
    if (!comment) break;
    if (l.find("/*") != std::string::npos) in_block_comment = true;
    if (l.find("*/") != std::string::npos) in_block_comment = false;
    offset += l.size() + 1;
  }
  offset = std::min(offset, text.size());
  return text.substr(0, offset) + line + text.substr(offset);
}

bool has_runtime_include(const std::string& text) {
  static const std::regex include(R"((^|\n)\s*#\s*include\s*[<"]manyalloc/heap/coalesce/runtime\.hpp[>"])");
  return std::regex_search(text, include);
}

const char* kind_word(AllocationKind k) {
  switch (k) {
    case AllocationKind::uniform: return "uniform";
    case AllocationKind::flagged: return "flagged";
    case AllocationKind::dynamic: return "dynamic";
    case AllocationKind::kept: return "kept";
    case AllocationKind::left: return "left";
    case AllocationKind::already_rewritten: return "already rewritten";
  }
  return "?";
}

}  // namespace

RewriteResult rewrite(ASTContext& context, const Plan& plan, UnprovenCalls unproven, SessionPolicy session,
                      const std::string& original_text) {
  RewriteResult out;
  Editor editor(context);
  std::vector<std::pair<SourceLocation, std::string>> located;
  const std::string ns = runtime_namespace;
  bool uses_runtime = false;

  for (const AllocationSite& a : plan.allocations) {
    std::string line = editor.where(a.call->getBeginLoc()) + ": malloc in '" + a.function + "': ";
    AllocationKind kind = a.kind;
    std::string why = a.why;
    bool ok = true;
    switch (a.kind) {
      case AllocationKind::uniform:
        ok = editor.replace_callee(a.call, ns + "uniform_malloc");
        break;
      case AllocationKind::dynamic:
        ok = editor.replace_callee(a.call, ns + "dynamic_malloc");
        break;
      case AllocationKind::flagged:
        ok = editor.replace_callee(a.call, ns + (unproven == UnprovenCalls::keep ? "malloc_uniform_if_else_plain"
                                                                                 : "malloc_uniform_if")) &&
             editor.insert_before(a.call->getRParenLoc(), std::string(", ") + flag_parameter_name);
        break;
      default:
        break;
    }
    if (!ok) {
      kind = AllocationKind::left;
      why = "'malloc' is spelled in a macro body or another file: rewrite the macro by hand (" + a.why + ")";
    }
    switch (kind) {
      case AllocationKind::uniform: ++out.uniform; uses_runtime = true; break;
      case AllocationKind::flagged: ++out.flagged; uses_runtime = true; break;
      case AllocationKind::dynamic: ++out.dynamic; uses_runtime = true; break;
      case AllocationKind::kept: ++out.kept; break;
      case AllocationKind::left: ++out.left; break;
      case AllocationKind::already_rewritten: ++out.already_rewritten; uses_runtime = true; break;
    }
    const char* target = kind == AllocationKind::uniform   ? " -> uniform_malloc"
                         : kind == AllocationKind::dynamic ? " -> dynamic_malloc"
                         : kind == AllocationKind::flagged ? " -> malloc_uniform_if(..., manyalloc_coalesce)"
                                                           : "";
    if (kind == AllocationKind::already_rewritten) {
      line = editor.where(a.call->getBeginLoc()) + ": " + why + " in '" + a.function + "': already rewritten";
    } else {
      line += std::string(kind_word(kind)) + target + ": " + why;
    }
    located.emplace_back(a.call->getBeginLoc(), line);
  }
  for (const FreeSite& f : plan.frees) {
    if (f.rewrite && editor.replace_callee(f.call, ns + "free")) {
      ++out.frees;
      uses_runtime = true;
      located.emplace_back(f.call->getBeginLoc(), editor.where(f.call->getBeginLoc()) + ": free -> " + ns + "free");
    } else {
      located.emplace_back(f.call->getBeginLoc(),
                           editor.where(f.call->getBeginLoc()) + ": free left as it is: " +
                               (f.why.empty() ? std::string("spelled in a macro body or another file") : f.why));
    }
  }
  for (const FunctionDecl* f : plan.flag_parameters) {
    const FunctionTypeLoc type = f->getFunctionTypeLoc();
    const std::string param = std::string(f->getNumParams() == 0 ? "" : ", ") + "bool " + flag_parameter_name +
                              " = false";
    editor.insert_before(type.getRParenLoc(), param);
  }
  for (const FlagArgument& a : plan.flag_arguments) {
    const std::string arg = std::string(a.call->getNumArgs() == 0 ? "" : ", ") + a.argument;
    editor.insert_before(a.call->getRParenLoc(), arg);
    located.emplace_back(a.call->getBeginLoc(), editor.where(a.call->getBeginLoc()) + ": passes " +
                                                    (std::string(a.argument) == "true" ? "true" : "its own flag") +
                                                    " as " + flag_parameter_name +
                                                    " (every thread that enters the caller makes this call)");
  }
  std::stable_sort(located.begin(), located.end(),
                   [&](const auto& a, const auto& b) { return editor.before(a.first, b.first); });
  for (auto& [loc, line] : located) out.report.push_back(std::move(line));
  for (const std::string& note : plan.notes) out.report.push_back(note);

  const bool add_session = plan.main != nullptr && !plan.main_has_session &&
                           (session == SessionPolicy::always || (session == SessionPolicy::automatic && uses_runtime));
  if (add_session) {
    const auto* body = dyn_cast<CompoundStmt>(plan.main->getBody());
    std::string indent = "  ";
    if (body != nullptr && !body->body_empty()) {
      const SourceManager& sm = context.getSourceManager();
      const unsigned column = sm.getPresumedColumnNumber(sm.getExpansionLoc((*body->body_begin())->getBeginLoc()));
      if (column > 1) indent = std::string(column - 1, ' ');
    }
    if (body != nullptr && editor.insert_after_token(body->getLBracLoc(), "\n" + indent + session_line)) {
      out.session_added = true;
      uses_runtime = true;
      out.report.push_back(editor.where(plan.main->getBeginLoc()) +
                           ": main: Session added (heaps set up before the first statement, torn down on every "
                           "return)");
    } else {
      out.report.push_back(editor.where(plan.main->getBeginLoc()) + ": main: could not add the Session (body not "
                           "written in this file)");
    }
  } else if (plan.main != nullptr && plan.main_has_session) {
    out.report.push_back(editor.where(plan.main->getBeginLoc()) + ": main: Session already there");
  } else if (plan.main != nullptr) {
    out.report.push_back(editor.where(plan.main->getBeginLoc()) +
                         ": main: no Session added (nothing in this file uses the heaps; --session=always adds it)");
  }

  bool changed = false;
  out.text = editor.result(original_text, changed);
  if (uses_runtime && !has_runtime_include(out.text)) {
    out.text = add_runtime_include(out.text);
    changed = true;
  }
  out.changed = changed && out.text != original_text;
  return out;
}

}  // namespace manyalloc::coalesce_tool
