// The mr session the MPI region benchmarks (bench_list.cpp,
// bench_barnes_hut.cpp, bench_delaunay.cpp) open first thing in main(). Not
// in bench_json.hpp: the OpenSHMEM and single-process benchmarks include
// that one and do not link the library.
#pragma once

#include <cstdio>

#include "manyalloc/region/region.hpp"

namespace region_bench {

// An mr::Session that prints the library's reason when it fails to open and
// tells main() what to return on a rank that does not run the benchmark.
// Declared first in main(), so that mr_finalize (its end) comes after
// everything the benchmark allocated.
class Session : public manyalloc::region::Session {
 public:
  Session(int* argc, char*** argv) : manyalloc::region::Session(argc, argv) {
    if (!opened()) std::fprintf(stderr, "%s\n", manyalloc::region::last_error());
  }
  // A worker of a session that opened.
  bool runs() const { return opened() && is_worker(); }
  // Where runs() is false: 1 when the session did not open, 0 on a
  // scheduler (it has served the workers inside mr_init).
  int exit_status() const { return opened() ? 0 : 1; }

 private:
  bool opened() const { return status() == manyalloc::region::Status::ok; }
};

}  // namespace region_bench
