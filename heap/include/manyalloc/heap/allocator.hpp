// The host class manyalloc::heap::Allocator ([Eckert2014] 3.2): composes the five
// policies into an allocator. The Allocator object lives on the host and owns
// the heap (RAII); workers receive the small copyable Handle and call
// alloc/dealloc on it. One request runs the pipeline
//   padding (AlignmentPolicy) -> collect (DistributionPolicy) ->
//   create (CreationPolicy) -> OOM check (OOMPolicy) -> distribute.
#pragma once

#include <algorithm>
#include <cstddef>
#include <string>
#include <string_view>
#include <utility>

#include "manyalloc/common/platform.hpp"
#include "manyalloc/heap/concepts.hpp"
#include "manyalloc/heap/policy_checks.hpp"

namespace manyalloc::heap {

template <CreationPolicy CP, DistributionPolicy DP, OOMPolicy OP, ReservePoolPolicy RP, AlignmentPolicy AP>
  requires CreationPolicyFor<CP, typename RP::backend> &&
           DistributionPolicyFor<DP, typename RP::backend::acc_type>
class Allocator : private detail::PolicyChecks<CP, DP, OP, RP, AP> {
 public:
  using CreationPolicy = CP;
  using DistributionPolicy = DP;
  using OOMPolicy = OP;
  using ReservePoolPolicy = RP;
  using AlignmentPolicy = AP;
  using backend = typename RP::backend;
  using acc_type = typename backend::acc_type;
  static constexpr bool providesAvailableSlots = CP::providesAvailableSlots;

  // What workers get: copy it into kernels / threads by value.
  class Handle {
   public:
    Handle() = default;
    explicit Handle(const CP& creation) : creation_(creation) {}

    // At least `bytes` usable bytes, or what the OOM policy returns when the
    // heap cannot serve the request. alloc(acc, 0) returns nullptr and
    // changes nothing.
    template <class Acc>
    MANYALLOC_FN void* alloc(const Acc& acc, std::size_t bytes) const {
      DP distribution(acc);
      const std::size_t request = distribution.collect(acc, AP::apply_padding(bytes));
      void* mem = creation_.create(acc, request);
      if (CP::is_oom(mem, request)) mem = OP::handle_oom(mem, request);
      return distribution.distribute(acc, mem);
    }

    // Frees memory from alloc. dealloc(acc, nullptr) does nothing. A pointer
    // that the heap did not hand out, or a second free of one, is reported
    // (printed in a checked build, counted always) and otherwise ignored,
    // where the creation policy can tell (Scatter can; DeviceMalloc leaves it
    // to CUDA's allocator).
    template <class Acc>
    MANYALLOC_FN void dealloc(const Acc& acc, void* ptr) const {
      if (ptr == nullptr && !collective_release<DP>) return;
      // Every lane that gets here calls destroy, with nullptr where the
      // distribution policy keeps the block: creation policies combine the
      // frees of a warp, and their lane collectives take every calling lane.
      creation_.destroy(acc, DP::release(acc, ptr));
    }

    // Chunks of `slot` bytes that could still be allocated. All lanes of the
    // caller's active set call it together and get the same answer. Only for
    // creation policies that provide it.
    template <class Acc>
    MANYALLOC_FN std::size_t getAvailableSlots(const Acc& acc, std::size_t slot) const
      requires(CP::providesAvailableSlots)
    {
      return creation_.getAvailableSlotsAccelerator(acc, acc.active_mask(), AP::apply_padding(slot));
    }

    MANYALLOC_FN const CP& creation() const { return creation_; }

   private:
    CP creation_{};
  };

  // Reserves the pool and builds an empty heap of about `heap_bytes` bytes
  // (a growable pool is mapped whole). Throws what the ReservePoolPolicy /
  // CreationPolicy throw on failure.
  explicit Allocator(std::size_t heap_bytes) : pool_bytes_(heap_bytes) {
    pool_ = RP::set_mem_pool(heap_bytes);
    try {
      if constexpr (GrowablePool<RP>) map_to(heap_bytes);
      const auto [aligned, usable] = AP::align_pool(pool_, heap_bytes);
      creation_ = CP::template init_heap<backend>(aligned, usable);
    } catch (...) {
      RP::reset_mem_pool(pool_, pool_bytes_);
      throw;
    }
  }

  // A heap that grows (issue 15): reserves `heap_bytes` of address space,
  // lays the heap out over all of it, and maps the metadata plus
  // `initial_bytes` of the pool; grow() maps more later. Chunks never move.
  Allocator(std::size_t heap_bytes, std::size_t initial_bytes)
    requires GrowablePool<RP> && GrowingCreationPolicy<CP, backend>
      : pool_bytes_(heap_bytes) {
    pool_ = RP::set_mem_pool(heap_bytes);
    try {
      const auto [aligned, usable] = AP::align_pool(pool_, heap_bytes);
      const std::size_t front = static_cast<std::size_t>(static_cast<std::byte*>(aligned) - static_cast<std::byte*>(pool_));
      map_to(front + CP::metadata_bytes_for(aligned, usable));
      creation_ = CP::template init_heap<backend>(aligned, usable);
      map_to(std::max(mapped_, initial_bytes));
      creation_.template set_mapped_end<backend>(static_cast<std::byte*>(pool_) + mapped_);
    } catch (...) {
      RP::reset_mem_pool(pool_, pool_bytes_);
      throw;
    }
  }

  // Maps the pool up to `bytes` (rounded up to the pool's granularity, at
  // most the reserved size) and lets the heap use it, also while kernels
  // run. Returns the bytes now mapped. Throws what the pool throws (e.g. no
  // device memory left); the heap then stays as it was.
  std::size_t grow(std::size_t bytes)
    requires GrowablePool<RP> && GrowingCreationPolicy<CP, backend>
  {
    map_to(bytes);
    creation_.template set_mapped_end<backend>(static_cast<std::byte*>(pool_) + mapped_);
    return mapped_;
  }

  // Bytes of the pool backed by memory (all of it unless the pool grows).
  std::size_t mapped_bytes() const { return GrowablePool<RP> ? mapped_ : pool_bytes_; }

  ~Allocator() { release(); }

  Allocator(const Allocator&) = delete;
  Allocator& operator=(const Allocator&) = delete;
  Allocator(Allocator&& other) noexcept
      : creation_(other.creation_), pool_(std::exchange(other.pool_, nullptr)),
        pool_bytes_(other.pool_bytes_), mapped_(other.mapped_), owns_(std::exchange(other.owns_, false)) {}
  Allocator& operator=(Allocator&& other) noexcept {
    if (this != &other) {
      release();
      creation_ = other.creation_;
      pool_ = std::exchange(other.pool_, nullptr);
      pool_bytes_ = other.pool_bytes_;
      mapped_ = other.mapped_;
      owns_ = std::exchange(other.owns_, false);
    }
    return *this;
  }

  Handle handle() const { return Handle(creation_); }

  // Host-side count of free `slot`-byte chunks, parallel over pages.
  std::size_t getAvailableSlots(std::size_t slot) const
    requires(CP::providesAvailableSlots)
  {
    return creation_.template getAvailableSlotsHost<backend>(AP::apply_padding(slot));
  }

  // Empties the heap: every pointer from it becomes invalid ([Eckert2014] 3.2,
  // finalizeHeap followed by a fresh initHeap on the same pool).
  void reset() {
    CP::template finalize_heap<backend>(creation_);
    const auto [aligned, usable] = AP::align_pool(pool_, pool_bytes_);
    creation_ = CP::template init_heap<backend>(aligned, usable);
    if constexpr (GrowingCreationPolicy<CP, backend>) {
      if (mapped_ < pool_bytes_) creation_.template set_mapped_end<backend>(static_cast<std::byte*>(pool_) + mapped_);
    }
  }

  std::size_t pool_bytes() const { return pool_bytes_; }
  const CP& creation() const { return creation_; }

  // The policies, one per line or separated by `separator` ([Eckert2014] 3.2, info).
  static std::string info(std::string_view separator = " ") {
    std::string s;
    s += "CreationPolicy=" + CP::classname();
    s += separator;
    s += "DistributionPolicy=" + DP::classname();
    s += separator;
    s += "OOMPolicy=" + OP::classname();
    s += separator;
    s += "ReservePoolPolicy=" + RP::classname();
    s += separator;
    s += "AlignmentPolicy=" + AP::classname();
    return s;
  }

 private:
  void release() {
    if (!owns_) return;
    owns_ = false;
    CP::template finalize_heap<backend>(creation_);
    RP::reset_mem_pool(pool_, pool_bytes_);
  }

  void map_to(std::size_t bytes) {
    const std::size_t g = RP::granularity();
    const std::size_t want = std::min(pool_bytes_, bytes);
    const std::size_t target = std::min((want + g - 1) / g * g, (pool_bytes_ + g - 1) / g * g);
    if (target <= mapped_) return;
    RP::map(pool_, mapped_, target);
    mapped_ = target;
  }

  CP creation_{};
  void* pool_ = nullptr;
  std::size_t pool_bytes_ = 0;
  std::size_t mapped_ = 0;  // growable pools: bytes from pool_ backed by memory
  bool owns_ = true;
};

namespace traits {
// Whether an allocator type's creation policy counts available slots.
template <class Allocator>
inline constexpr bool providesAvailableSlots = Allocator::providesAvailableSlots;
}  // namespace traits

}  // namespace manyalloc::heap
