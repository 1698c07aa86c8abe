// The benchmark driver shared by the host and CUDA programs: every
// experiment runs each allocator configuration in the same process, one
// after the other for each size, so that ratios are measured side by side.
// `all` runs each experiment in a child process of its own (a fresh CUDA
// context, so that the baseline's heap can be sized per experiment).
#pragma once

#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "access.hpp"
#include "cli.hpp"
#include "context.hpp"
#include "fragmentation.hpp"
#include "large.hpp"
#include "operator.hpp"
#include "records.hpp"
#include "slots.hpp"
#include "spread.hpp"
#include "temporal.hpp"
#include "throughput.hpp"

namespace manyalloc::heap::bench {

// "Scatter ps=4096", "Scatter ps=4096 reset", "XMalloc (Scatter ps=4096)", "DeviceMalloc", ...
inline std::string short_name(const std::string& allocator) {
  std::string s = allocator.substr(0, allocator.find(' '));
  const std::string prefix = "CreationPolicy=";
  if (s.rfind(prefix, 0) == 0) s = s.substr(prefix.size());
  if (s.rfind("Scatter[", 0) == 0) {
    const auto ps = s.find("pagesize=");
    std::string out = "Scatter ps=" + s.substr(ps + 9, s.find(',', ps) - ps - 9);
    if (s.find("resetfreedpages=true") != std::string::npos) out += " reset";
    if (allocator.find("DistributionPolicy=XMallocSIMD") != std::string::npos) out = "XMalloc (" + out + ")";
    return out;
  }
  if (s.rfind("SizeClassSlabs[", 0) == 0) return "SizeClassSlabs";
  if (s.rfind("ListBased[", 0) == 0) return "ListBased";
  if (s.rfind("MultiList[", 0) == 0) return "MultiList";
  return s;
}

// Alloc/free rates per size with the ratio to the baseline (the allocator
// whose name contains `baseline_name`). The throughput table's layout is the
// one scripts/gpu_run.sh greps for ("^experiment").
inline void print_table(const std::vector<Measurement>& ms, const std::string& baseline_name) {
  std::printf("\n%-10s %-9s %-42s %14s %10s %9s %s\n", "experiment", "bytes", "allocator", "Mops/s",
              "vs base", "fails", "verified");
  for (const auto& m : ms) {
    double base = 0;
    for (const auto& b : ms)
      if (b.experiment == m.experiment && b.bytes == m.bytes && b.allocator.find(baseline_name) != std::string::npos)
        base = b.ops_per_s();
    const auto us = m.experiment.find('_');
    std::printf("%-10s %-9llu %-42.42s %14.2f %9.1fx %9llu %s\n",
                us == std::string::npos ? m.experiment.c_str() : m.experiment.c_str() + us + 1,
                static_cast<unsigned long long>(m.bytes), short_name(m.allocator).c_str(), m.ops_per_s() / 1e6,
                base > 0 ? m.ops_per_s() / base : 0.0, static_cast<unsigned long long>(m.fails),
                m.verified ? "yes" : "NO");
  }
}

// Compact summary of any experiment: one line per record, the most telling fields.
inline void print_summary(const std::vector<Measurement>& ms) {
  std::printf("\n%-22s %-28s %9s %9s %12s %12s %8s %s\n", "experiment", "allocator", "threads", "bytes",
              "Mops/s", "cycles/op", "fails", "verified");
  for (const auto& m : ms) {
    if (m.experiment == "temporal" && m.extra.count("step") && static_cast<long>(m.extra.at("step")) % 20 != 0) continue;
    const auto c = m.extra.find("cycles_per_op");
    std::printf("%-22s %-28.28s %9llu %9llu %12.3f %12.0f %8llu %s", m.experiment.c_str(), short_name(m.allocator).c_str(),
                static_cast<unsigned long long>(m.threads), static_cast<unsigned long long>(m.bytes), m.ops_per_s() / 1e6,
                c == m.extra.end() ? 0.0 : c->second, static_cast<unsigned long long>(m.fails), m.verified ? "yes" : "NO");
    for (const char* k : {"usable_share_first_fail", "usable_share_full", "internal_frag", "external_frag", "fill", "slots",
                          "spread", "cycles_alloc", "cycles_free", "access_cycles"})
      if (auto it = m.extra.find(k); it != m.extra.end()) std::printf(" %s=%.4g", k, it->second);
    if (auto it = m.tags.find("state"); it != m.tags.end()) std::printf(" state=%s", it->second.c_str());
    std::printf("\n");
  }
}

template <class P, class Config, class Body>
void with_allocators(Context& ctx, const Config& cfg, std::size_t baseline_bytes, Body&& body) {
  // The baseline first: CUDA's heap limit must be set before any kernel runs.
  const std::size_t pool = P::baseline_pool(baseline_bytes);
  typename P::Baseline baseline(pool);
  AllocatorSet<P> set(baseline, pool, ctx.opt.allocators);
  body(ctx, set, cfg);
}

template <class P>
int run_one(Context& ctx) {
  const std::string& e = ctx.opt.experiment;
  if (e == "operator") {
    const auto c = operator_config<P>(ctx);
    with_allocators<P>(ctx, c, c.baseline_heap, [](auto& x, auto& s, auto& k) { operator_experiment<P>(x, s, k); });
  } else if (e == "throughput") {
    const auto c = throughput_config<P>(ctx);
    with_allocators<P>(ctx, c, c.baseline_heap, [](auto& x, auto& s, auto& k) { throughput_experiment<P>(x, s, k); });
  } else if (e == "large") {
    const auto c = large_config<P>(ctx);
    with_allocators<P>(ctx, c, c.heap, [](auto& x, auto& s, auto& k) { large_experiment<P>(x, s, k); });
  } else if (e == "fragmentation") {
    const auto c = fragmentation_config<P>(ctx);
    with_allocators<P>(ctx, c, c.heap, [](auto& x, auto& s, auto& k) { fragmentation_experiment<P>(x, s, k); });
  } else if (e == "temporal") {
    const auto c = temporal_config<P>(ctx);
    with_allocators<P>(ctx, c, c.heap, [](auto& x, auto& s, auto& k) { temporal_experiment<P>(x, s, k); });
  } else if (e == "access") {
    const auto c = access_config<P>(ctx);
    with_allocators<P>(ctx, c, c.baseline_heap, [](auto& x, auto& s, auto& k) { access_experiment<P>(x, s, k); });
  } else if (e == "spread") {
    const auto c = spread_config<P>(ctx);
    with_allocators<P>(ctx, c, c.heap, [](auto& x, auto& s, auto& k) { spread_experiment<P>(x, s, k); });
  } else if (e == "slots") {
    const auto c = slots_config<P>(ctx);
    with_allocators<P>(ctx, c, c.heap, [](auto& x, auto& s, auto& k) { slots_experiment<P>(x, s, k); });
  } else {
    std::fprintf(stderr, "unknown experiment '%s'\n%s", e.c_str(), usage());
    return 2;
  }
  if (e == "throughput") print_table(ctx.all, P::Baseline::CreationPolicy::classname());
  else print_summary(ctx.all);
  for (const auto& m : ctx.all)
    if (!m.verified) return 3;
  return 0;
}

// `all`: each experiment in a child process (this program again), with the
// same options; a failing experiment does not stop the others.
inline int run_all(const Options& o) {
  std::map<std::string, std::pair<int, double>> results;
  int worst = 0;
  for (const auto& name : experiment_names()) {
    std::vector<std::string> args{"/proc/self/exe", name};
    args.insert(args.end(), o.forwarded.begin(), o.forwarded.end());
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    std::fprintf(stderr, "== %s\n", name.c_str());
    std::fflush(stdout);
    std::fflush(stderr);
    const auto t0 = std::chrono::steady_clock::now();
    const pid_t pid = fork();
    if (pid == 0) {
      execv(argv[0], argv.data());
      std::perror("execv");
      _exit(127);
    }
    int status = 0;
    int rc = 1;
    if (pid > 0 && waitpid(pid, &status, 0) == pid) rc = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    results[name] = {rc, s};
    if (rc != 0 && worst == 0) worst = rc;
    if (rc == 3) worst = 3;
  }
  std::printf("\n%-14s %8s %s\n", "experiment", "seconds", "result");
  for (const auto& name : experiment_names()) {
    const auto [rc, s] = results[name];
    std::printf("%-14s %8.1f %s\n", name.c_str(), s,
                rc == 0 ? "ok" : rc == 3 ? "VERIFICATION FAILED" : ("exit " + std::to_string(rc)).c_str());
  }
  return worst;
}

template <class P>
int run_suite(int argc, char** argv, const char* program) try {
  Options o = parse(argc, argv);
  if (o.help) {
    std::fputs(usage(), stdout);
    return 0;
  }
  if (o.budget <= 0) o.budget = P::gpu ? 10.0 : 2.0;
  if (o.experiment == "all") return run_all(o);
  P::prepare(o);
  Context ctx;
  ctx.opt = o;
  ctx.out = std::fopen(o.out.c_str(), "a");
  if (ctx.out == nullptr) {
    std::perror(o.out.c_str());
    return 1;
  }
  ctx.device = P::Runner::device_name();
  ctx.clock = P::clock_name();
  const int rc = run_one<P>(ctx);
  std::fclose(ctx.out);
  return rc;
} catch (const std::exception& e) {
  std::fprintf(stderr, "%s: %s\n", program, e.what());
  return 1;
}

}  // namespace manyalloc::heap::bench
