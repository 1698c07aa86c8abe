// One benchmark measurement, written as one JSON Lines record with the
// field names every manyalloc benchmark uses.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <map>
#include <string>

namespace manyalloc::heap::bench {

struct Measurement {
  std::string suite = "heap";
  std::string experiment;
  std::string allocator;
  std::string device;
  std::uint64_t threads = 0;
  std::uint64_t bytes = 0;
  std::uint64_t ops = 0;
  double seconds = 0;          // median over repeats
  std::uint64_t fails = 0;
  bool verified = false;
  std::map<std::string, double> extra;       // e.g. seconds_min, cycles_per_op
  std::map<std::string, std::string> tags;   // e.g. clock, state, note

  double ops_per_s() const { return seconds > 0 ? static_cast<double>(ops) / seconds : 0.0; }
};

inline std::string json_escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    if (c == '\n') { out += "\\n"; continue; }
    out += c;
  }
  return out;
}

inline void write_jsonl(std::FILE* f, const Measurement& m) {
  std::fprintf(f,
               "{\"suite\":\"%s\",\"experiment\":\"%s\",\"allocator\":\"%s\",\"device\":\"%s\","
               "\"threads\":%llu,\"bytes\":%llu,\"ops\":%llu,\"seconds\":%.9g,\"ops_per_s\":%.9g,"
               "\"fails\":%llu,\"verified\":%s",
               json_escape(m.suite).c_str(), json_escape(m.experiment).c_str(),
               json_escape(m.allocator).c_str(), json_escape(m.device).c_str(),
               static_cast<unsigned long long>(m.threads), static_cast<unsigned long long>(m.bytes),
               static_cast<unsigned long long>(m.ops), m.seconds, m.ops_per_s(),
               static_cast<unsigned long long>(m.fails), m.verified ? "true" : "false");
  for (const auto& [k, v] : m.extra) {
    if (std::isfinite(v)) std::fprintf(f, ",\"%s\":%.9g", json_escape(k).c_str(), v);
  }
  for (const auto& [k, v] : m.tags)
    std::fprintf(f, ",\"%s\":\"%s\"", json_escape(k).c_str(), json_escape(v).c_str());
  std::fprintf(f, "}\n");
  std::fflush(f);
}

}  // namespace manyalloc::heap::bench
