#include "uniformity.hpp"

#include <algorithm>
#include <array>

#include "clang/AST/Attr.h"
#include "clang/AST/ExprCXX.h"
#include "clang/AST/LambdaCapture.h"
#include "clang/AST/StmtCXX.h"
#include "clang/Basic/SourceManager.h"
#include "clang/Lex/Lexer.h"

namespace manyalloc::coalesce_tool {

using namespace clang;

namespace {

// CUDA's built-in index variables: the same in every thread of a block
// except threadIdx.
constexpr std::array<const char*, 4> block_uniform_builtins = {"blockIdx", "blockDim", "gridDim", "warpSize"};

// Functions that are pure in their arguments (device math and the usual
// min/max spellings): uniform arguments give a uniform result.
constexpr std::array<const char*, 18> pure_functions = {
    "min", "max", "umin", "umax", "llmin", "llmax", "ullmin", "ullmax", "fmin",
    "fmax", "fminf", "fmaxf", "abs", "labs", "llabs", "fabs", "fabsf", "__popc"};

bool is_pure_function_name(llvm::StringRef name) {
  return std::any_of(pure_functions.begin(), pure_functions.end(), [&](const char* n) { return name == n; });
}

bool is_const_reference(QualType t) {
  return t->isLValueReferenceType() && t.getNonReferenceType().isConstQualified();
}

}  // namespace

FunctionUniformity::FunctionUniformity(const FunctionDecl& function, ASTContext& context,
                                       const ParameterOracle& oracle)
    : function_(function), context_(context), oracle_(oracle) {
  if (const Stmt* body = function_.getBody()) index(body, nullptr);
}

std::string FunctionUniformity::text(const Stmt* s) const {
  const SourceManager& sm = context_.getSourceManager();
  // The text as written: inside a macro argument where it is spelled there,
  // else the whole macro use.
  CharSourceRange range = Lexer::makeFileCharRange(CharSourceRange::getTokenRange(s->getSourceRange()), sm,
                                                   context_.getLangOpts());
  if (range.isInvalid()) range = sm.getExpansionRange(s->getSourceRange());
  std::string t = Lexer::getSourceText(range, sm, context_.getLangOpts()).str();
  std::replace(t.begin(), t.end(), '\n', ' ');
  if (t.size() > 60) t = t.substr(0, 57) + "...";
  return t;
}

bool FunctionUniformity::is_local(const VarDecl* var) const {
  if (var == nullptr || !var->hasLocalStorage()) return false;
  return var->getParentFunctionOrMethod() == &function_ ||
         var->getDeclContext() == static_cast<const DeclContext*>(&function_);
}

void FunctionUniformity::index(const Stmt* s, const Stmt* parent) {
  if (s == nullptr) return;
  parents_[s] = parent;
  if (const auto* lambda = dyn_cast<LambdaExpr>(s)) {
    // A lambda's body is another function, but what it captures by
    // reference it may change.
    for (const LambdaCapture& capture : lambda->captures()) {
      if (!capture.capturesVariable() || capture.getCaptureKind() != LCK_ByRef) continue;
      if (const auto* v = dyn_cast<VarDecl>(capture.getCapturedVar())) {
        escaped_[v] = "a lambda captures it by reference";
      }
    }
    return;
  }
  if (const auto* u = dyn_cast<UnaryExprOrTypeTraitExpr>(s)) {
    (void)u;
    return;  // unevaluated operand: nothing in it runs
  }
  if (isa<ReturnStmt>(s) || isa<GotoStmt>(s) || isa<IndirectGotoStmt>(s)) exits_.push_back(s);
  if (isa<BreakStmt>(s) || isa<ContinueStmt>(s)) loop_exits_.push_back(s);
  if (const auto* ds = dyn_cast<DeclStmt>(s)) {
    for (const Decl* d : ds->decls()) {
      if (const auto* v = dyn_cast<VarDecl>(d)) {
        if (!v->hasLocalStorage()) continue;
        if (v->getType()->isArrayType()) {
          escaped_[v] = "an array (its elements live in memory)";
        } else if (v->getType()->isReferenceType()) {
          escaped_[v] = "a reference";
        }
        definitions_.push_back({v, v->getInit(), ds});
      }
    }
  }
  if (const auto* ref = dyn_cast<DeclRefExpr>(s)) classify_use(ref);
  for (const Stmt* child : s->children()) index(child, s);
}

// A use of a local either reads it, defines it (assignment, ++/--), or lets
// it escape (address, non-const reference, non-const method): escaped
// variables are thread-dependent for good.
void FunctionUniformity::classify_use(const DeclRefExpr* ref) {
  const auto* var = dyn_cast<VarDecl>(ref->getDecl());
  if (!is_local(var)) return;
  // The use is that of the whole member path (`s.a.b` stores into or reads
  // from s as much as `s` does).
  const Stmt* child = ref;
  const Stmt* p = parents_[ref];
  while (p != nullptr) {
    const auto* member = dyn_cast<MemberExpr>(p);
    const auto* cast = dyn_cast<ImplicitCastExpr>(p);
    if (isa<ParenExpr>(p) || (member != nullptr && !member->isArrow()) ||
        (cast != nullptr && (cast->getCastKind() == CK_NoOp || cast->getCastKind() == CK_UncheckedDerivedToBase ||
                             cast->getCastKind() == CK_DerivedToBase))) {
      child = p;
      p = parents_[p];
      continue;
    }
    break;
  }
  if (p == nullptr) return;
  if (const auto* cast = dyn_cast<ImplicitCastExpr>(p)) {
    if (cast->getCastKind() == CK_ArrayToPointerDecay) {
      escaped_[var] = "an array (its elements live in memory)";
    }
    return;  // LValueToRValue and other conversions read the value
  }
  if (const auto* bo = dyn_cast<BinaryOperator>(p)) {
    if (bo->isAssignmentOp() && bo->getLHS()->IgnoreParens() == child) {
      definitions_.push_back({var, bo->getRHS(), bo});
    }
    return;
  }
  if (const auto* uo = dyn_cast<UnaryOperator>(p)) {
    if (uo->isIncrementDecrementOp()) {
      definitions_.push_back({var, nullptr, uo});
    } else if (uo->getOpcode() == UO_AddrOf) {
      escaped_[var] = "its address is taken";
    }
    return;
  }
  if (const auto* me = dyn_cast<MemberExpr>(p)) {
    (void)me;
    return;  // an arrow member: the variable (a pointer) is read
  }
  if (const auto* call = dyn_cast<CallExpr>(p)) {
    if (const auto* member_call = dyn_cast<CXXMemberCallExpr>(call)) {
      if (call->getCallee()->IgnoreParens() == child) {  // s.method(): the path ends in the callee
        const CXXMethodDecl* method = member_call->getMethodDecl();
        if (method == nullptr || !method->isConst()) escaped_[var] = "a non-const member function is called on it";
        return;
      }
    }
    const FunctionDecl* callee = call->getDirectCallee();
    for (unsigned i = 0; i < call->getNumArgs(); ++i) {
      if (call->getArg(i)->IgnoreParens() != child) continue;
      if (callee != nullptr && i < callee->getNumParams() && is_const_reference(callee->getParamDecl(i)->getType())) {
        return;
      }
      escaped_[var] = "it is passed by reference to '" + (callee ? callee->getNameAsString() : std::string("?")) + "'";
      return;
    }
    return;  // the callee expression itself
  }
  if (isa<CXXConstructExpr>(p) || isa<ReturnStmt>(p)) return;
  if (const auto* ds = dyn_cast<DeclStmt>(p)) {
    for (const Decl* d : ds->decls()) {
      const auto* v = dyn_cast<VarDecl>(d);
      if (v != nullptr && v->getInit() != nullptr && v->getInit()->IgnoreParens() == child &&
          v->getType()->isReferenceType() && !is_const_reference(v->getType())) {
        escaped_[var] = "a non-const reference is bound to it";
      }
    }
    return;
  }
  escaped_[var] = "it is used in a way the analysis does not follow ('" + text(p) + "')";
}

const Stmt* FunctionUniformity::parent(const Stmt* s) const {
  auto it = parents_.find(s);
  return it == parents_.end() ? nullptr : it->second;
}

bool FunctionUniformity::inside(const Stmt* s, const Stmt* ancestor) const {
  for (const Stmt* p = s; p != nullptr; p = parent(p)) {
    if (p == ancestor) return true;
  }
  return false;
}

void FunctionUniformity::run() {
  thread_dependent_ = escaped_;
  for (int round = 0; round < 64; ++round) {
    bool changed = false;
    divergent_exits_.clear();
    for (const Stmt* exit : exits_) {
      if (!path(exit, function_.getBody()).uniform) divergent_exits_.push_back(exit);
    }
    for (const Definition& d : definitions_) {
      if (thread_dependent_.count(d.var) != 0u) continue;
      Verdict v = d.value != nullptr ? value(d.value) : Verdict::yes();
      if (v.uniform) v = reached_uniformly(d.where);
      if (!v.uniform) {
        thread_dependent_[d.var] = "assigned at line " +
                                   std::to_string(context_.getSourceManager().getPresumedLineNumber(
                                       d.where->getBeginLoc())) +
                                   " ('" + text(d.where) + "'): " + v.why;
        changed = true;
      }
    }
    if (!changed) break;
  }
}

Verdict FunctionUniformity::variable(const VarDecl* var) const {
  const std::string name = var->getNameAsString();
  if (name == "threadIdx") return Verdict::no("'threadIdx' differs between the threads of a block");
  for (const char* b : block_uniform_builtins) {
    if (name == b && !var->hasLocalStorage()) return Verdict::yes();
  }
  if (var->isConstexpr()) return Verdict::yes();
  if (is_local(var)) {
    if (var->getType()->isReferenceType()) return Verdict::no("'" + name + "' is a reference (reads memory)");
    auto it = thread_dependent_.find(var);
    if (it != thread_dependent_.end()) return Verdict::no("'" + name + "' is thread-dependent: " + it->second);
    if (const auto* param = dyn_cast<ParmVarDecl>(var)) {
      if (function_.hasAttr<CUDAGlobalAttr>()) return Verdict::yes();  // kernel arguments: one value per launch
      if (!oracle_.uniform_on_entry(param)) {
        return Verdict::no("parameter '" + name + "' is not passed a uniform value at every call site");
      }
    }
    return Verdict::yes();
  }
  if (var->hasAttr<CUDAConstantAttr>()) return Verdict::yes();
  if (var->getType().isConstQualified() && !var->getType().isVolatileQualified() && var->getInit() != nullptr &&
      var->getInit()->isConstantInitializer(context_, false)) {
    return Verdict::yes();
  }
  if (var->hasAttr<CUDASharedAttr>()) return Verdict::no("'" + name + "' is __shared__ memory");
  return Verdict::no("'" + name + "' is a variable in memory that threads may write");
}

Verdict FunctionUniformity::call(const CallExpr* c) const {
  std::string name;
  bool known = false;
  if (const FunctionDecl* callee = c->getDirectCallee()) {
    name = callee->getNameAsString();
    known = callee->isConstexpr() || is_pure_function_name(name);
  } else if (const auto* lookup = dyn_cast<UnresolvedLookupExpr>(c->getCallee()->IgnoreParenImpCasts())) {
    name = lookup->getName().getAsString();
    known = is_pure_function_name(name);
  }
  if (!known) {
    return Verdict::no("calls '" + (name.empty() ? text(c->getCallee()) : name) +
                       "', not known to give every thread the same result");
  }
  for (const Expr* arg : c->arguments()) {
    Verdict v = value(arg);
    if (!v.uniform) return v;
  }
  return Verdict::yes();
}

Verdict FunctionUniformity::value(const Expr* e) const {
  if (e == nullptr) return Verdict::yes();
  e = e->IgnoreParens();
  if (isa<IntegerLiteral>(e) || isa<FloatingLiteral>(e) || isa<CharacterLiteral>(e) || isa<StringLiteral>(e) ||
      isa<CXXBoolLiteralExpr>(e) || isa<CXXNullPtrLiteralExpr>(e) || isa<UnaryExprOrTypeTraitExpr>(e) ||
      isa<SizeOfPackExpr>(e) || isa<TypeTraitExpr>(e) || isa<CXXNoexceptExpr>(e) || isa<GNUNullExpr>(e) ||
      isa<ImplicitValueInitExpr>(e) || isa<CXXScalarValueInitExpr>(e)) {
    return Verdict::yes();
  }
  if (const auto* ref = dyn_cast<DeclRefExpr>(e)) {
    const ValueDecl* d = ref->getDecl();
    if (isa<EnumConstantDecl>(d) || isa<NonTypeTemplateParmDecl>(d)) return Verdict::yes();
    if (const auto* var = dyn_cast<VarDecl>(d)) return variable(var);
    if (isa<FunctionDecl>(d)) return Verdict::yes();  // a function's address
    return Verdict::no("'" + text(e) + "' is not known to be the same in every thread");
  }
  if (const auto* pseudo = dyn_cast<PseudoObjectExpr>(e)) return value(pseudo->getSyntacticForm());
  if (const auto* opaque = dyn_cast<OpaqueValueExpr>(e)) return value(opaque->getSourceExpr());
  if (const auto* prop = dyn_cast<MSPropertyRefExpr>(e)) return value(prop->getBaseExpr());
  if (const auto* member = dyn_cast<MemberExpr>(e)) {
    if (member->isArrow()) return Verdict::no("'" + text(e) + "' reads memory through a pointer");
    if (const auto* var = dyn_cast<VarDecl>(member->getMemberDecl())) return variable(var);  // static member
    return value(member->getBase());
  }
  if (const auto* bo = dyn_cast<BinaryOperator>(e)) {
    if (bo->isAssignmentOp()) return Verdict::no("'" + text(e) + "' assigns");
    Verdict l = value(bo->getLHS());
    if (!l.uniform) return l;
    return value(bo->getRHS());
  }
  if (const auto* uo = dyn_cast<UnaryOperator>(e)) {
    if (uo->getOpcode() == UO_Deref) return Verdict::no("'" + text(e) + "' reads memory through a pointer");
    if (uo->getOpcode() == UO_AddrOf) return Verdict::no("'" + text(e) + "' is an address (per thread for locals)");
    if (uo->isIncrementDecrementOp()) return Verdict::no("'" + text(e) + "' changes a variable");
    return value(uo->getSubExpr());
  }
  if (const auto* co = dyn_cast<AbstractConditionalOperator>(e)) {
    for (const Expr* part : {co->getCond(), co->getTrueExpr(), co->getFalseExpr()}) {
      Verdict v = value(part);
      if (!v.uniform) return v;
    }
    return Verdict::yes();
  }
  if (const auto* ce = dyn_cast<CastExpr>(e)) return value(ce->getSubExpr());
  if (isa<ArraySubscriptExpr>(e)) return Verdict::no("'" + text(e) + "' reads memory (an array element)");
  if (const auto* c = dyn_cast<CallExpr>(e)) return call(c);
  if (const auto* ctor = dyn_cast<CXXConstructExpr>(e)) {
    const CXXConstructorDecl* decl = ctor->getConstructor();
    if (decl == nullptr || !(decl->isTrivial() || decl->isConstexpr())) {
      return Verdict::no("constructs '" + ctor->getType().getAsString() + "' with a constructor not known to be pure");
    }
    for (const Expr* arg : ctor->arguments()) {
      Verdict v = value(arg);
      if (!v.uniform) return v;
    }
    return Verdict::yes();
  }
  if (const auto* unresolved = dyn_cast<CXXUnresolvedConstructExpr>(e)) {
    for (const Expr* arg : unresolved->arguments()) {
      Verdict v = value(arg);
      if (!v.uniform) return v;
    }
    return Verdict::yes();
  }
  if (const auto* list = dyn_cast<ParenListExpr>(e)) {
    for (unsigned i = 0; i < list->getNumExprs(); ++i) {
      Verdict v = value(list->getExpr(i));
      if (!v.uniform) return v;
    }
    return Verdict::yes();
  }
  if (const auto* full = dyn_cast<FullExpr>(e)) return value(full->getSubExpr());
  if (const auto* temp = dyn_cast<MaterializeTemporaryExpr>(e)) return value(temp->getSubExpr());
  if (const auto* bind = dyn_cast<CXXBindTemporaryExpr>(e)) return value(bind->getSubExpr());
  if (const auto* def = dyn_cast<CXXDefaultArgExpr>(e)) return value(def->getExpr());
  if (const auto* subst = dyn_cast<SubstNonTypeTemplateParmExpr>(e)) return value(subst->getReplacement());
  return Verdict::no("'" + text(e) + "' is not a form the analysis proves uniform");
}

Verdict FunctionUniformity::loop_is_uniform(const Stmt* loop) const {
  const Expr* cond = nullptr;
  const Stmt* body = nullptr;
  if (const auto* w = dyn_cast<WhileStmt>(loop)) {
    cond = w->getCond();
    body = w->getBody();
  } else if (const auto* f = dyn_cast<ForStmt>(loop)) {
    cond = f->getCond();
    body = f->getBody();
  } else if (const auto* d = dyn_cast<DoStmt>(loop)) {
    cond = d->getCond();
    body = d->getBody();
  }
  const unsigned line = context_.getSourceManager().getPresumedLineNumber(loop->getBeginLoc());
  if (cond != nullptr) {
    Verdict v = value(cond);
    if (!v.uniform) {
      return Verdict::no("in a loop (line " + std::to_string(line) + ") whose condition '" + text(cond) +
                         "' is thread-dependent: " + v.why);
    }
  }
  // A break that leaves this loop under a thread-dependent condition makes
  // the trip count thread-dependent; a continue does not (see
  // reached_uniformly), nor does a break out of an inner switch or loop.
  for (const Stmt* exit : loop_exits_) {
    if (!isa<BreakStmt>(exit) || !inside(exit, body) || innermost_breakable(exit) != loop) continue;
    Verdict v = path(exit, loop);
    if (!v.uniform) {
      return Verdict::no("in a loop (line " + std::to_string(line) + ") that threads may leave early: " + v.why);
    }
  }
  for (const Stmt* exit : exits_) {
    if (!inside(exit, body)) continue;
    Verdict v = path(exit, loop);
    if (!v.uniform) {
      return Verdict::no("in a loop (line " + std::to_string(line) + ") that threads may leave early: " + v.why);
    }
  }
  return Verdict::yes();
}

// Walks from s up to stop (exclusive) and checks every guard on the way.
Verdict FunctionUniformity::path(const Stmt* s, const Stmt* stop) const {
  const SourceManager& sm = context_.getSourceManager();
  auto guard = [&](const Expr* cond, const char* what) -> Verdict {
    Verdict v = value(cond);
    if (v.uniform) return v;
    return Verdict::no(std::string(what) + " (line " + std::to_string(sm.getPresumedLineNumber(cond->getBeginLoc())) +
                       ") on '" + text(cond) + "': " + v.why);
  };
  for (const Stmt* cur = s; cur != nullptr && cur != stop;) {
    const Stmt* p = parent(cur);
    if (p == nullptr || p == stop) break;  // stop's own guards are the caller's business
    if (const auto* is = dyn_cast<IfStmt>(p)) {
      if (cur == is->getThen() || cur == is->getElse()) {
        Verdict v = guard(is->getCond(), "under a branch");
        if (!v.uniform) return v;
      }
    } else if (isa<WhileStmt>(p) || isa<ForStmt>(p) || isa<DoStmt>(p)) {
      const auto* f = dyn_cast<ForStmt>(p);
      if (f == nullptr || cur != f->getInit()) {
        Verdict v = loop_is_uniform(p);
        if (!v.uniform) return v;
      }
    } else if (const auto* range_for = dyn_cast<CXXForRangeStmt>(p)) {
      if (cur == range_for->getBody()) {
        return Verdict::no("in a range-based for loop (line " +
                           std::to_string(sm.getPresumedLineNumber(p->getBeginLoc())) + "), not analysed");
      }
    } else if (const auto* sw = dyn_cast<SwitchStmt>(p)) {
      if (cur == sw->getBody()) {
        Verdict v = guard(sw->getCond(), "under a switch");
        if (!v.uniform) return v;
      }
    } else if (const auto* co = dyn_cast<AbstractConditionalOperator>(p)) {
      if (cur == co->getTrueExpr() || cur == co->getFalseExpr()) {
        Verdict v = guard(co->getCond(), "under a ?: condition");
        if (!v.uniform) return v;
      }
    } else if (const auto* bo = dyn_cast<BinaryOperator>(p)) {
      if (bo->isLogicalOp() && cur == bo->getRHS()) {
        Verdict v = guard(bo->getLHS(), "behind a short-circuit operand");
        if (!v.uniform) return v;
      }
    }
    cur = p;
  }
  return Verdict::yes();
}

const Stmt* FunctionUniformity::innermost_breakable(const Stmt* s) const {
  for (const Stmt* p = parent(s); p != nullptr; p = parent(p)) {
    if (isa<WhileStmt>(p) || isa<ForStmt>(p) || isa<DoStmt>(p) || isa<CXXForRangeStmt>(p) || isa<SwitchStmt>(p)) {
      return p;
    }
  }
  return nullptr;
}

Verdict FunctionUniformity::reached_uniformly(const Stmt* stmt) const {
  Verdict v = path(stmt, function_.getBody());
  if (!v.uniform) return v;
  const SourceManager& sm = context_.getSourceManager();
  // A continue under a thread-dependent condition skips the rest of its
  // iteration for some threads: what follows it in the loop body is reached
  // unevenly, the next iteration's start is not.
  for (const Stmt* exit : loop_exits_) {
    if (!isa<ContinueStmt>(exit)) continue;
    const Stmt* loop = parent(exit);
    while (loop != nullptr && !(isa<WhileStmt>(loop) || isa<ForStmt>(loop) || isa<DoStmt>(loop) ||
                                isa<CXXForRangeStmt>(loop))) {
      loop = parent(loop);
    }
    if (loop == nullptr || !inside(stmt, loop) || !sm.isBeforeInTranslationUnit(exit->getBeginLoc(), stmt->getBeginLoc())) {
      continue;
    }
    if (!path(exit, loop).uniform) {
      return Verdict::no("after a continue that only some threads take (line " +
                         std::to_string(sm.getPresumedLineNumber(exit->getBeginLoc())) + ")");
    }
  }
  for (const Stmt* exit : divergent_exits_) {
    // A goto may jump backwards: everything in the function is affected.
    bool affected = !isa<ReturnStmt>(exit) || sm.isBeforeInTranslationUnit(exit->getBeginLoc(), stmt->getBeginLoc());
    for (const Stmt* p = parent(exit); p != nullptr && !affected; p = parent(p)) {
      if ((isa<WhileStmt>(p) || isa<ForStmt>(p) || isa<DoStmt>(p)) && inside(stmt, p)) affected = true;
    }
    if (affected) {
      return Verdict::no("after a return/goto that only some threads take (line " +
                         std::to_string(sm.getPresumedLineNumber(exit->getBeginLoc())) + ")");
    }
  }
  return Verdict::yes();
}

}  // namespace manyalloc::coalesce_tool
