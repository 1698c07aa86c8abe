// manyalloc-coalesce: rewrites device-side malloc/free of a CUDA file to the
// manyalloc heap's coalescing entry points ([Blach2022] 3.1). See
// heap/tools/coalesce/README.md.
//
// Rule: the file is written only after it parsed without error and the whole
// rewrite is known; in place, through a temporary file and a rename, so a
// failure never leaves a half-written file.
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "llvm/Support/raw_ostream.h"

#include "parse.hpp"
#include "plan.hpp"
#include "rewrite.hpp"

namespace fs = std::filesystem;
using namespace manyalloc::coalesce_tool;

namespace {

constexpr int exit_done = 0;
constexpr int exit_not_rewritten = 1;
constexpr int exit_usage = 2;

void usage(std::ostream& os) {
  os << "usage: manyalloc-coalesce [options] FILE.cu [-- CLANG_ARGS...]\n"
        "  Rewrites malloc/free in the kernels and device functions of FILE.cu to the\n"
        "  manyalloc heap's coalescing entry points and adds the heaps' Session to main.\n"
        "  -o PATH                  write the result to PATH ('-': standard output);\n"
        "                           default: rewrite FILE.cu in place\n"
        "  --unproven=dynamic|keep  calls not proven uniform: dynamic coalescing (default)\n"
        "                           or left as CUDA's malloc\n"
        "  --session=auto|always|never  add the Session to main when the file uses the\n"
        "                           heaps (auto, default), always, or never\n"
        "  --report=PATH            the decisions and their reasons (default: standard error)\n"
        "  --fail-unless-uniform    exit 1 (file unchanged) when a malloc is not rewritten\n"
        "                           to the uniform entry point (for builds that rely on it)\n"
        "  --shim-dir=DIR           parse shim (default: next to the installed tool)\n"
        "  --resource-dir=DIR       Clang 14 resource directory\n"
        "  CLANG_ARGS               include paths and macros the file needs (-I, -D)\n"
        "exit status: 0 done (changed or not), 1 not parsed or not written (FILE unchanged),\n"
        "             2 usage\n";
}

bool read_file(const std::string& path, std::string& text) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  std::ostringstream s;
  s << in.rdbuf();
  text = s.str();
  return static_cast<bool>(in) || in.eof();
}

// Writes through a temporary file in the same directory and renames it over
// `path`, so readers see the old or the new file, never a partial one.
bool write_file(const std::string& path, const std::string& text, std::string& error) {
  const fs::path target(path);
  const fs::path temp = target.parent_path() / ("." + target.filename().string() + ".manyalloc-coalesce.tmp");
  {
    std::ofstream out(temp, std::ios::binary | std::ios::trunc);
    if (!out || !(out << text) || !out.flush()) {
      error = "cannot write " + temp.string();
      std::error_code ignored;
      fs::remove(temp, ignored);
      return false;
    }
  }
  std::error_code ec;
  if (fs::exists(target)) fs::permissions(temp, fs::status(target).permissions(), ec);
  fs::rename(temp, target, ec);
  if (ec) {
    error = "cannot replace " + path + ": " + ec.message();
    fs::remove(temp, ec);
    return false;
  }
  return true;
}

// The installed layout (bin/, share/, include/ under one prefix) when the
// tool runs from an installation, else the source tree it was built from.
std::string installed_or_source(const char* relative, const char* probe, const char* source_dir) {
  std::error_code ec;
  const fs::path exe = fs::canonical("/proc/self/exe", ec);
  if (!ec) {
    const fs::path installed = exe.parent_path().parent_path() / relative;
    if (fs::exists(installed / probe)) return installed.string();
  }
  return source_dir;
}

}  // namespace

int main(int argc, char** argv) {
  std::string file, output, report_path;
  UnprovenCalls unproven = UnprovenCalls::dynamic;
  SessionPolicy session = SessionPolicy::automatic;
  ParseSettings settings;
  settings.shim_dir = installed_or_source("share/manyalloc/coalesce/parse_shim", "manyalloc_coalesce_parse_shim.h",
                                          MANYALLOC_COALESCE_SOURCE_SHIM_DIR);
  settings.runtime_include_dir = installed_or_source("include", "manyalloc/heap/coalesce/runtime.hpp",
                                                     MANYALLOC_COALESCE_SOURCE_INCLUDE_DIR);
  settings.resource_dir = MANYALLOC_COALESCE_CLANG_RESOURCE_DIR;
  bool output_given = false;
  bool fail_unless_uniform = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&](const std::string& prefix) { return a.substr(prefix.size()); };
    if (a == "--") {
      settings.extra_args.assign(argv + i + 1, argv + argc);
      break;
    } else if (a == "-h" || a == "--help") {
      usage(std::cout);
      return exit_done;
    } else if (a == "-o" && i + 1 < argc) {
      output = argv[++i];
      output_given = true;
    } else if (a == "--unproven=dynamic") {
      unproven = UnprovenCalls::dynamic;
    } else if (a == "--unproven=keep") {
      unproven = UnprovenCalls::keep;
    } else if (a == "--session=auto") {
      session = SessionPolicy::automatic;
    } else if (a == "--session=always") {
      session = SessionPolicy::always;
    } else if (a == "--session=never") {
      session = SessionPolicy::never;
    } else if (a == "--fail-unless-uniform") {
      fail_unless_uniform = true;
    } else if (a.rfind("--report=", 0) == 0) {
      report_path = value("--report=");
    } else if (a.rfind("--shim-dir=", 0) == 0) {
      settings.shim_dir = value("--shim-dir=");
    } else if (a.rfind("--resource-dir=", 0) == 0) {
      settings.resource_dir = value("--resource-dir=");
    } else if (!a.empty() && a[0] != '-' && file.empty()) {
      file = a;
    } else {
      std::cerr << "manyalloc-coalesce: unknown or incomplete option '" << a << "'\n";
      usage(std::cerr);
      return exit_usage;
    }
  }
  if (file.empty()) {
    usage(std::cerr);
    return exit_usage;
  }
  if (!fs::exists(fs::path(settings.shim_dir) / "manyalloc_coalesce_parse_shim.h")) {
    std::cerr << "manyalloc-coalesce: error: no parse shim in '" << settings.shim_dir << "' (--shim-dir)\n";
    return exit_usage;
  }

  std::string original;
  if (!read_file(file, original)) {
    std::cerr << "manyalloc-coalesce: error: cannot read " << file << "\n";
    return exit_not_rewritten;
  }
  std::error_code ec;
  const std::string absolute = fs::absolute(file, ec).string();
  ParseResult parsed = parse(ec ? file : absolute, original, settings);
  if (parsed.unit == nullptr) {
    std::cerr << "manyalloc-coalesce: error: " << file << " could not be parsed (" << parsed.errors
              << " error(s) above); the file is left unchanged\n";
    return exit_not_rewritten;
  }
  clang::ASTContext& context = parsed.unit->getASTContext();
  const Plan plan = make_plan(context, unproven);
  const RewriteResult result = rewrite(context, plan, unproven, session, original);

  std::ofstream report_file;
  std::ostream* report = &std::cerr;
  if (!report_path.empty()) {
    report_file.open(report_path);
    if (!report_file) {
      std::cerr << "manyalloc-coalesce: error: cannot write the report to " << report_path
                << "; the file is left unchanged\n";
      return exit_not_rewritten;
    }
    report = &report_file;
  }
  for (const std::string& line : result.report) *report << line << "\n";
  *report << "manyalloc-coalesce: " << file << ": " << result.uniform << " uniform, " << result.flagged
          << " flagged, " << result.dynamic << " dynamic, " << result.kept << " kept, " << result.left
          << " left, " << result.frees << " free, " << result.already_rewritten
          << " already rewritten; " << (result.changed ? "rewritten" : "unchanged") << "\n";

  if (fail_unless_uniform && result.flagged + result.dynamic + result.kept + result.left != 0) {
    std::cerr << "manyalloc-coalesce: error: " << file
              << ": not every malloc was proven uniform (--fail-unless-uniform); nothing written\n";
    return exit_not_rewritten;
  }
  std::string error;
  if (output_given && output == "-") {
    std::cout << result.text;
    return exit_done;
  }
  const std::string target = output_given ? output : file;
  if (!output_given && !result.changed) return exit_done;  // nothing to write: the file keeps its time stamp
  if (!write_file(target, result.text, error)) {
    std::cerr << "manyalloc-coalesce: error: " << error << "\n";
    return exit_not_rewritten;
  }
  return exit_done;
}
