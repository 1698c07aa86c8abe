// Gallatin (saltsystemslab/gallatin @ 1aa70ad, PPoPP 2024, [McCoy2024]) as a benchmark
// baseline, through its public API: Gallatin<segment, smallest, largest>::
// generate_on_device / free_on_device on the host, malloc / free on the
// device. The instance is the one of its global_allocator.cuh: 16 MiB
// segments, 16 B smallest and 4096 B largest slice. Compiled as C++17 with
// --expt-relaxed-constexpr (its own build's flags); the sources are unpacked
// from MANYALLOC_PEERS_DIR at configure time, never part of the project.
#include <gallatin/allocators/gallatin.cuh>

#include "experiments.cuh"

namespace {
namespace mp = manyalloc::heap::peers;

using GallatinType = gallatin::allocators::Gallatin<16ULL * 1024 * 1024, 16ULL, 4096ULL>;

struct GallatinAdapter {
  struct Handle {
    GallatinType* g;
    __device__ void* malloc(std::size_t bytes) const { return g->malloc(bytes); }
    __device__ void free(void* p) const {
      if (p != nullptr) g->free(p);
    }
  };

  explicit GallatinAdapter(std::size_t pool_bytes) {
    g_ = GallatinType::generate_on_device(pool_bytes, /*seed=*/42, /*print_info=*/false);
    mp::check(cudaDeviceSynchronize(), "Gallatin generate_on_device");
  }
  // After a kernel fault the context is gone: leave the pool (the process ends).
  ~GallatinAdapter() {
    if (cudaDeviceSynchronize() == cudaSuccess) GallatinType::free_on_device(g_);
  }
  GallatinAdapter(const GallatinAdapter&) = delete;
  GallatinAdapter& operator=(const GallatinAdapter&) = delete;
  Handle handle() const { return Handle{g_}; }

  static constexpr bool fresh_heap = true;
  static std::string note(std::size_t) { return ""; }

 private:
  GallatinType* g_ = nullptr;
};

const mp::Register gallatin{mp::Entry{"Gallatin", true, 100, &mp::run_experiment<GallatinAdapter>}};

}  // namespace
