#include "parse.hpp"

#include "clang/Basic/Diagnostic.h"
#include "clang/Frontend/TextDiagnosticPrinter.h"
#include "clang/Tooling/Tooling.h"
#include "llvm/Support/raw_ostream.h"

namespace manyalloc::coalesce_tool {

namespace {

// Counts errors while printing every diagnostic as Clang would.
class CountingPrinter : public clang::TextDiagnosticPrinter {
 public:
  CountingPrinter() : clang::TextDiagnosticPrinter(llvm::errs(), new clang::DiagnosticOptions()) {}
  void HandleDiagnostic(clang::DiagnosticsEngine::Level level, const clang::Diagnostic& info) override {
    if (level >= clang::DiagnosticsEngine::Error) ++errors;
    clang::TextDiagnosticPrinter::HandleDiagnostic(level, info);
  }
  unsigned errors = 0;
};

}  // namespace

ParseResult parse(const std::string& path, const std::string& text, const ParseSettings& settings) {
  // Host side only: device-only calls are then checked lazily (never, as no
  // device code is generated), so host and device overloads coexist; sm_70
  // is any architecture Clang 14 knows; -nocudainc/-nocudalib keep CUDA's
  // installation out of it entirely.
  std::vector<std::string> args = {"-xcuda",
                                   "--cuda-host-only",
                                   "-nocudainc",
                                   "-nocudalib",
                                   "--cuda-gpu-arch=sm_70",
                                   "-std=c++20",
                                   "-w",
                                   "-Wno-unknown-cuda-version",
                                   "-ferror-limit=20",
                                   "-resource-dir",
                                   settings.resource_dir,
                                   "-I" + settings.shim_dir,
                                   "-include",
                                   settings.shim_dir + "/manyalloc_coalesce_parse_shim.h"};
  args.insert(args.end(), settings.extra_args.begin(), settings.extra_args.end());
  // Rewritten files include the runtime header: found without the caller's
  // -I, after every directory the caller names.
  args.push_back("-idirafter");
  args.push_back(settings.runtime_include_dir);
  CountingPrinter printer;
  ParseResult result;
  result.unit = clang::tooling::buildASTFromCodeWithArgs(
      text, args, path, "manyalloc-coalesce", std::make_shared<clang::PCHContainerOperations>(),
      clang::tooling::getClangStripDependencyFileAdjuster(), clang::tooling::FileContentMappings(), &printer);
  result.errors = printer.errors;
  if (result.unit == nullptr && result.errors == 0) result.errors = 1;
  if (result.errors != 0) result.unit.reset();
  return result;
}

}  // namespace manyalloc::coalesce_tool
