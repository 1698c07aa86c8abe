#include "plan.hpp"

#include <map>
#include <memory>
#include <set>

#include "clang/AST/Attr.h"
#include "clang/AST/ExprCXX.h"
#include "clang/AST/TypeLoc.h"
#include "clang/AST/RecursiveASTVisitor.h"
#include "clang/Basic/SourceManager.h"

#include "uniformity.hpp"

namespace manyalloc::coalesce_tool {

using namespace clang;

namespace {

enum class CalleeKind { malloc, free, runtime, other };

// Template patterns and their specializations, prototypes and definitions
// all map to one key.
const FunctionDecl* key_of(const FunctionDecl* f) {
  if (f == nullptr) return nullptr;
  if (const FunctionDecl* pattern = f->getTemplateInstantiationPattern()) f = pattern;
  return f->getCanonicalDecl();
}

bool is_c_library(const FunctionDecl* f, llvm::StringRef name) {
  if (f->getName() != name) return false;
  const DeclContext* dc = f->getDeclContext()->getRedeclContext();
  return f->isExternC() || dc->isTranslationUnit() || dc->isStdNamespace();
}

CalleeKind callee_kind(const CallExpr* call) {
  if (const FunctionDecl* f = call->getDirectCallee()) {
    if (f->getQualifiedNameAsString().rfind(runtime_namespace, 0) == 0) return CalleeKind::runtime;
    if (is_c_library(f, "malloc")) return CalleeKind::malloc;
    if (is_c_library(f, "free")) return CalleeKind::free;
    return CalleeKind::other;
  }
  if (const auto* lookup = dyn_cast<UnresolvedLookupExpr>(call->getCallee()->IgnoreParenImpCasts())) {
    const std::string name = lookup->getName().getAsString();
    if (name != "malloc" && name != "free") return CalleeKind::other;
    for (const NamedDecl* d : lookup->decls()) {
      const auto* f = dyn_cast<FunctionDecl>(d->getUnderlyingDecl());
      if (f == nullptr || !is_c_library(f, name)) return CalleeKind::other;
    }
    return name == "malloc" ? CalleeKind::malloc : CalleeKind::free;
  }
  return CalleeKind::other;
}

// The device functions a call may reach (one, or the candidates of a
// dependent call in a template).
std::vector<const FunctionDecl*> callees_of(const CallExpr* call) {
  std::vector<const FunctionDecl*> out;
  if (const FunctionDecl* f = call->getDirectCallee()) {
    out.push_back(key_of(f));
  } else if (const auto* lookup = dyn_cast<UnresolvedLookupExpr>(call->getCallee()->IgnoreParenImpCasts())) {
    for (const NamedDecl* d : lookup->decls()) {
      const NamedDecl* u = d->getUnderlyingDecl();
      if (const auto* t = dyn_cast<FunctionTemplateDecl>(u)) u = t->getTemplatedDecl();
      if (const auto* f = dyn_cast<FunctionDecl>(u)) out.push_back(key_of(f));
    }
  }
  return out;
}

enum class FunctionRole { kernel, device, host_device, other };

FunctionRole role_of(const FunctionDecl* f) {
  if (f->hasAttr<CUDAGlobalAttr>()) return FunctionRole::kernel;
  const bool device = f->hasAttr<CUDADeviceAttr>() && !f->getAttr<CUDADeviceAttr>()->isImplicit();
  const bool host = f->hasAttr<CUDAHostAttr>() && !f->getAttr<CUDAHostAttr>()->isImplicit();
  if (device && host) return FunctionRole::host_device;
  if (device) return FunctionRole::device;
  return FunctionRole::other;
}

struct CallRecord {
  const CallExpr* call;
  const FunctionDecl* caller;  // definition; nullptr inside a lambda or outside any function
  bool in_lambda;
};

// Every call and every function reference of the main file.
class Collector : public RecursiveASTVisitor<Collector> {
 public:
  explicit Collector(ASTContext& context) : sm_(context.getSourceManager()) {}

  bool TraverseDecl(Decl* d) {
    if (d == nullptr) return true;
    if (!isa<TranslationUnitDecl>(d) && !isa<NamespaceDecl>(d) && !isa<LinkageSpecDecl>(d) &&
        !sm_.isInMainFile(sm_.getExpansionLoc(d->getLocation()))) {
      return true;
    }
    auto* f = dyn_cast<FunctionDecl>(d);
    if (f != nullptr && f->doesThisDeclarationHaveABody()) {
      functions.push_back(f);
      stack_.push_back(f);
      const bool ok = RecursiveASTVisitor::TraverseDecl(d);
      stack_.pop_back();
      return ok;
    }
    return RecursiveASTVisitor::TraverseDecl(d);
  }

  bool TraverseLambdaExpr(LambdaExpr* lambda) {
    ++lambda_depth_;
    const bool ok = RecursiveASTVisitor::TraverseLambdaExpr(lambda);
    --lambda_depth_;
    return ok;
  }

  bool VisitCallExpr(CallExpr* call) {
    calls.push_back({call, stack_.empty() ? nullptr : stack_.back(), lambda_depth_ > 0});
    if (const Expr* callee = call->getCallee()) direct_callees.insert(callee->IgnoreParenImpCasts());
    return true;
  }

  bool VisitDeclRefExpr(DeclRefExpr* ref) {
    if (const auto* f = dyn_cast<FunctionDecl>(ref->getDecl())) references.push_back({ref, key_of(f)});
    return true;
  }

  bool VisitUnresolvedLookupExpr(UnresolvedLookupExpr* lookup) {
    for (const NamedDecl* d : lookup->decls()) {
      const NamedDecl* u = d->getUnderlyingDecl();
      if (const auto* t = dyn_cast<FunctionTemplateDecl>(u)) u = t->getTemplatedDecl();
      if (const auto* f = dyn_cast<FunctionDecl>(u)) references.push_back({lookup, key_of(f)});
    }
    return true;
  }

  std::vector<FunctionDecl*> functions;
  std::vector<CallRecord> calls;
  std::set<const Expr*> direct_callees;
  std::vector<std::pair<const Expr*, const FunctionDecl*>> references;

 private:
  const SourceManager& sm_;
  std::vector<const FunctionDecl*> stack_;
  int lambda_depth_ = 0;
};

class Oracle : public ParameterOracle {
 public:
  bool uniform_on_entry(const ParmVarDecl* param) const override {
    const auto* f = dyn_cast<FunctionDecl>(param->getDeclContext());
    auto it = uniform.find({key_of(f), param->getFunctionScopeIndex()});
    return it != uniform.end() && it->second;
  }
  std::map<std::pair<const FunctionDecl*, unsigned>, bool> uniform;
};

enum class Entry { unset, always, flag, never };

struct DeviceFunction {
  const FunctionDecl* definition;
  FunctionRole role;
  std::unique_ptr<FunctionUniformity> analysis;
  Entry entry = Entry::unset;
  std::string entry_why;  // why not always
  bool escapes = false;
  std::string escape_why;
  bool flag_parameter = false;
};

class Planner {
 public:
  Planner(ASTContext& context, UnprovenCalls unproven)
      : context_(context), sm_(context.getSourceManager()), unproven_(unproven), collector_(context) {}

  Plan run() {
    collector_.TraverseDecl(context_.getTranslationUnitDecl());
    find_functions();
    find_escapes();
    settle_parameters();
    settle_entries();
    settle_flag_parameters();
    decide_calls();
    find_main();
    return std::move(plan_);
  }

 private:
  DeviceFunction* device(const FunctionDecl* key) {
    auto it = functions_.find(key);
    return it == functions_.end() ? nullptr : &it->second;
  }
  DeviceFunction* caller_of(const CallRecord& r) {
    if (r.in_lambda || r.caller == nullptr) return nullptr;
    DeviceFunction* d = device(key_of(r.caller));
    return d != nullptr && d->definition == r.caller ? d : nullptr;
  }
  std::string where(const Stmt* s) const {
    const PresumedLoc p = sm_.getPresumedLoc(sm_.getExpansionLoc(s->getBeginLoc()));
    return std::to_string(p.getLine());
  }

  void find_functions() {
    for (FunctionDecl* f : collector_.functions) {
      const FunctionRole role = role_of(f);
      if (role != FunctionRole::kernel && role != FunctionRole::device) continue;
      DeviceFunction& d = functions_[key_of(f)];
      d.definition = f;
      d.role = role;
      if (role == FunctionRole::kernel) d.entry = Entry::always;
      for (unsigned i = 0; i < f->getNumParams(); ++i) oracle_.uniform[{key_of(f), i}] = role == FunctionRole::device;
    }
  }

  // A device function whose address is taken, or that is called from code
  // the analysis does not see, may run in any context.
  void find_escapes() {
    for (const auto& [expr, key] : collector_.references) {
      DeviceFunction* d = device(key);
      if (d == nullptr || d->role == FunctionRole::kernel) continue;
      if (collector_.direct_callees.count(expr) == 0u) {
        d->escapes = true;
        d->escape_why = "its address is taken at line " + where(expr);
      }
    }
    for (const CallRecord& r : collector_.calls) {
      if (caller_of(r) != nullptr) continue;
      for (const FunctionDecl* key : callees_of(r.call)) {
        DeviceFunction* d = device(key);
        if (d == nullptr || d->role == FunctionRole::kernel) continue;
        d->escapes = true;
        d->escape_why = "it is called at line " + where(r.call) + " from code the analysis does not follow";
      }
    }
    for (auto& [key, d] : functions_) {
      if (!d.escapes) continue;
      for (unsigned i = 0; i < d.definition->getNumParams(); ++i) oracle_.uniform[{key, i}] = false;
    }
  }

  void analyse_all() {
    for (auto& [key, d] : functions_) {
      d.analysis = std::make_unique<FunctionUniformity>(*d.definition, context_, oracle_);
      d.analysis->run();
    }
  }

  // Parameters of device functions: uniform while every call site passes a
  // uniform argument (optimistic start, shrinks to a fixed point).
  void settle_parameters() {
    for (int round = 0; round < 32; ++round) {
      analyse_all();
      bool changed = false;
      for (const CallRecord& r : collector_.calls) {
        DeviceFunction* caller = caller_of(r);
        if (caller == nullptr) continue;
        for (const FunctionDecl* key : callees_of(r.call)) {
          DeviceFunction* d = device(key);
          if (d == nullptr || d->role == FunctionRole::kernel) continue;
          for (unsigned i = 0; i < d->definition->getNumParams(); ++i) {
            bool& u = oracle_.uniform[{key, i}];
            if (!u) continue;
            const bool passed = i < r.call->getNumArgs() ? caller->analysis->value(r.call->getArg(i)).uniform
                                                         : d->definition->getParamDecl(i)->hasDefaultArg();
            if (!passed) {
              u = false;
              changed = true;
            }
          }
        }
      }
      if (!changed) return;
    }
  }

  // Why the paper's optional argument cannot be added to d (empty: it can).
  std::string flag_obstacle(const DeviceFunction& d) {
    const FunctionDecl* f = d.definition;
    if (isa<CXXMethodDecl>(f)) return "it is a member function";
    if (f->getDescribedFunctionTemplate() != nullptr || f->isTemplated()) return "it is a template";
    if (f->isVariadic()) return "it is variadic";
    if (f->getPreviousDecl() != nullptr || f->getMostRecentDecl() != f) return "it has a separate declaration";
    const FunctionTypeLoc type = f->getFunctionTypeLoc();
    if (!type || type.getRParenLoc().isMacroID() || !sm_.isInMainFile(type.getRParenLoc())) {
      return "its parameter list is not written in this file";
    }
    for (const CallRecord& r : collector_.calls) {
      for (const FunctionDecl* key : callees_of(r.call)) {
        if (key != key_of(f)) continue;
        if (r.call->getRParenLoc().isMacroID()) return "it is called from a macro at line " + where(r.call);
        if (r.call->getNumArgs() != f->getNumParams()) {
          return "the call at line " + where(r.call) + " leaves default arguments out";
        }
      }
    }
    return {};
  }

  // Entry uniformity: kernels always; a device function takes what its call
  // sites give (all uniform: always; none: never; both: the optional flag).
  void settle_entries() {
    for (int round = 0; round < 64; ++round) {
      bool changed = false;
      for (auto& [key, d] : functions_) {
        if (d.entry != Entry::unset) continue;
        if (d.escapes) {
          d.entry = Entry::never;
          d.entry_why = d.escape_why;
          changed = true;
          continue;
        }
        bool waiting = false, any = false, some_uniform = false, some_divergent = false, some_flag = false;
        std::string divergent_why;
        for (const CallRecord& r : collector_.calls) {
          const auto callees = callees_of(r.call);
          if (std::find(callees.begin(), callees.end(), key) == callees.end()) continue;
          DeviceFunction* caller = caller_of(r);
          any = true;
          const Verdict reached = caller->analysis->reached_uniformly(r.call);
          if (!reached.uniform) {
            some_divergent = true;
            if (divergent_why.empty()) divergent_why = "the call at line " + where(r.call) + " is " + reached.why;
            continue;
          }
          switch (caller->entry) {
            case Entry::unset: waiting = true; break;
            case Entry::always: some_uniform = true; break;
            case Entry::flag: some_flag = true; break;
            case Entry::never:
              some_divergent = true;
              if (divergent_why.empty()) {
                divergent_why = "the call at line " + where(r.call) + " is in '" +
                                caller->definition->getNameAsString() + "', which is not entered uniformly";
              }
              break;
          }
        }
        if (waiting) continue;
        if (!any) {
          d.entry = Entry::never;
          d.entry_why = "it has no call site in this file";
        } else if (!some_divergent && !some_flag) {
          d.entry = Entry::always;
        } else if (!some_uniform && !some_flag) {
          d.entry = Entry::never;
          d.entry_why = divergent_why;
        } else {
          const std::string obstacle = flag_obstacle(d);
          if (obstacle.empty()) {
            d.entry = Entry::flag;
          } else {
            d.entry = Entry::never;
            d.entry_why = "it is called from uniform and from thread-dependent code (" + divergent_why +
                          ") and cannot take the coalescing flag: " + obstacle;
          }
        }
        changed = true;
      }
      if (!changed) break;
    }
    for (auto& [key, d] : functions_) {
      if (d.entry == Entry::unset) {
        d.entry = Entry::never;
        d.entry_why = "its calls form a cycle (recursion)";
      }
    }
  }

  bool uniform_allocation_inside(const DeviceFunction& d, const CallRecord& r) {
    return callee_kind(r.call) == CalleeKind::malloc && r.call->getNumArgs() == 1 &&
           d.analysis->reached_uniformly(r.call).uniform && d.analysis->value(r.call->getArg(0)).uniform;
  }

  // A flag-taking function gets the parameter only where it has something
  // to pass it to (a uniform malloc or a uniform call of another one).
  void settle_flag_parameters() {
    for (bool changed = true; changed;) {
      changed = false;
      for (const CallRecord& r : collector_.calls) {
        DeviceFunction* caller = caller_of(r);
        if (caller == nullptr || caller->entry != Entry::flag || caller->flag_parameter) continue;
        bool needs = uniform_allocation_inside(*caller, r);
        if (!needs && caller->analysis->reached_uniformly(r.call).uniform) {
          for (const FunctionDecl* key : callees_of(r.call)) {
            const DeviceFunction* callee = device(key);
            needs = needs || (callee != nullptr && callee->flag_parameter);
          }
        }
        if (needs) {
          caller->flag_parameter = true;
          changed = true;
        }
      }
    }
    for (auto& [key, d] : functions_) {
      if (d.flag_parameter) plan_.flag_parameters.push_back(d.definition);
    }
  }

  void decide_calls() {
    for (const CallRecord& r : collector_.calls) {
      DeviceFunction* caller = caller_of(r);
      const CalleeKind kind = callee_kind(r.call);
      if (caller == nullptr) {
        // Outside analysed device code: host code keeps its own malloc;
        // report device-side calls the tool cannot reach.
        if (kind != CalleeKind::malloc && kind != CalleeKind::free) continue;
        const FunctionRole role = r.caller != nullptr ? role_of(r.caller) : FunctionRole::other;
        std::string why;
        if (r.in_lambda && role != FunctionRole::other) {
          why = "inside a lambda (not analysed)";
        } else if (role == FunctionRole::host_device) {
          why = "in a __host__ __device__ function (the entry points are device-only)";
        } else {
          continue;
        }
        const std::string name = r.caller != nullptr ? r.caller->getNameAsString() : std::string("?");
        if (kind == CalleeKind::malloc) plan_.allocations.push_back({r.call, AllocationKind::left, name, why});
        if (kind == CalleeKind::free) plan_.frees.push_back({r.call, false, why});
        continue;
      }
      const std::string name = caller->definition->getNameAsString();
      if (kind == CalleeKind::runtime) {
        const std::string callee = r.call->getDirectCallee()->getNameAsString();
        if (callee != "free") plan_.allocations.push_back({r.call, AllocationKind::already_rewritten, name, callee});
        continue;
      }
      if (kind == CalleeKind::free) {
        plan_.frees.push_back({r.call, true, {}});
        continue;
      }
      if (kind == CalleeKind::malloc) {
        plan_.allocations.push_back(decide_allocation(*caller, r));
        continue;
      }
      // A call of a function that took the flag.
      if (!caller->analysis->reached_uniformly(r.call).uniform) continue;
      for (const FunctionDecl* key : callees_of(r.call)) {
        const DeviceFunction* callee = device(key);
        if (callee == nullptr || !callee->flag_parameter) continue;
        if (caller->entry == Entry::always) {
          plan_.flag_arguments.push_back({r.call, "true"});
        } else if (caller->flag_parameter) {
          plan_.flag_arguments.push_back({r.call, flag_parameter_name});
        }
        break;
      }
    }
  }

  AllocationSite decide_allocation(const DeviceFunction& d, const CallRecord& r) {
    const std::string name = d.definition->getNameAsString();
    const AllocationKind unproven = unproven_ == UnprovenCalls::keep ? AllocationKind::kept : AllocationKind::dynamic;
    if (r.call->getNumArgs() != 1) return {r.call, unproven, name, "malloc with an unusual argument list"};
    const Verdict reached = d.analysis->reached_uniformly(r.call);
    if (!reached.uniform) return {r.call, unproven, name, "not reached by every thread alike: " + reached.why};
    const Expr* size = r.call->getArg(0);
    const Verdict same = d.analysis->value(size);
    if (!same.uniform) {
      return {r.call, unproven, name, "size '" + d.analysis->text(size) + "' is thread-dependent: " + same.why};
    }
    const std::string proven = "every thread of the block reaches it with the same size '" +
                               d.analysis->text(size) + "'";
    switch (d.entry) {
      case Entry::always:
        return {r.call, AllocationKind::uniform, name,
                d.role == FunctionRole::kernel ? proven
                                               : proven + " (every call of '" + name + "' is made by all threads)"};
      case Entry::flag:
        return {r.call, AllocationKind::flagged, name,
                "uniform inside '" + name + "', which is called from uniform and from thread-dependent code: "
                "coalesced where the caller passes " + flag_parameter_name + " = true"};
      default:
        return {r.call, unproven, name, "uniform inside '" + name + "', but " + d.entry_why};
    }
  }

  void find_main() {
    for (FunctionDecl* f : collector_.functions) {
      if (!f->isMain() || f->getBody() == nullptr) continue;
      plan_.main = f;
      if (const auto* body = dyn_cast<CompoundStmt>(f->getBody())) {
        for (const Stmt* s : body->body()) {
          const auto* ds = dyn_cast<DeclStmt>(s);
          if (ds == nullptr) continue;
          for (const Decl* decl : ds->decls()) {
            const auto* v = dyn_cast<VarDecl>(decl);
            if (v != nullptr && v->getType().getCanonicalType().getUnqualifiedType().getAsString().find(
                                    "manyalloc::heap::coalesce::Session") != std::string::npos) {
              plan_.main_has_session = true;
            }
          }
        }
      }
    }
    for (auto& [key, d] : functions_) {
      if (d.role == FunctionRole::device && d.entry == Entry::flag && d.flag_parameter) {
        plan_.notes.push_back("'" + d.definition->getNameAsString() + "' gets the parameter 'bool " +
                              flag_parameter_name + " = false' (called from uniform and from thread-dependent code)");
      }
    }
  }

  ASTContext& context_;
  const SourceManager& sm_;
  UnprovenCalls unproven_;
  Collector collector_;
  Oracle oracle_;
  std::map<const FunctionDecl*, DeviceFunction> functions_;
  Plan plan_;
};

}  // namespace

Plan make_plan(ASTContext& context, UnprovenCalls unproven) { return Planner(context, unproven).run(); }

}  // namespace manyalloc::coalesce_tool
