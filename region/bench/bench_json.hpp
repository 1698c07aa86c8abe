// JSON Lines records shared by the region benchmarks: the fields of every
// manyalloc suite (suite, experiment, allocator, device, threads, bytes, ops,
// seconds, ops_per_s, fails, verified) plus free-form extras.
#pragma once

#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace region_bench {

inline std::string cpu_model() {
  std::ifstream f("/proc/cpuinfo");
  std::string line;
  while (std::getline(f, line))
    if (line.rfind("model name", 0) == 0) return line.substr(line.find(':') + 2);
  return "unknown cpu";
}

inline std::string device_name() {
  char host[256] = {};
  gethostname(host, sizeof host - 1);
  return cpu_model() + " x" + std::to_string(sysconf(_SC_NPROCESSORS_ONLN)) + " (" + host + ")";
}

inline std::string esc(const std::string& s) {
  std::string o;
  for (char c : s) {
    if (c == '"' || c == '\\') o += '\\';
    o += c;
  }
  return o;
}

template <class T>
std::string array(const std::vector<T>& v) {
  std::ostringstream o;
  o << '[';
  for (std::size_t i = 0; i < v.size(); ++i) o << (i ? "," : "") << v[i];
  o << ']';
  return o.str();
}

struct Record {
  std::string experiment, allocator;
  int threads = 1;
  double bytes = 0, ops = 0, seconds = 0;
  long fails = 0;
  bool verified = false;
  std::vector<std::pair<std::string, std::string>> extras;  // raw JSON values
  void extra(const std::string& k, double v) {
    std::ostringstream o;
    o << v;
    extras.emplace_back(k, o.str());
  }
  void extra_str(const std::string& k, const std::string& v) { extras.emplace_back(k, "\"" + esc(v) + "\""); }
  void extra_raw(const std::string& k, const std::string& v) { extras.emplace_back(k, v); }
  void print(FILE* out = stdout) const {
    std::ostringstream o;
    o << "{\"suite\":\"region\",\"experiment\":\"" << esc(experiment) << "\",\"allocator\":\"" << esc(allocator)
      << "\",\"device\":\"" << esc(device_name()) << "\",\"threads\":" << threads << ",\"bytes\":" << bytes
      << ",\"ops\":" << ops << ",\"seconds\":" << seconds << ",\"ops_per_s\":" << (seconds > 0 ? ops / seconds : 0)
      << ",\"fails\":" << fails << ",\"verified\":" << (verified ? "true" : "false");
    for (auto& [k, v] : extras) o << ",\"" << esc(k) << "\":" << v;
    o << "}\n";
    std::fputs(o.str().c_str(), out);
    std::fflush(out);
  }
};

}  // namespace region_bench
