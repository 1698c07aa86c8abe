// The host class manyalloc::heap::Allocator ([Eckert2014] 3.2): composes the five
// policies into an allocator. The Allocator object lives on the host and owns
// the heap (RAII); workers receive the small copyable Handle and call
// alloc/dealloc on it. One request runs the pipeline
//   padding (AlignmentPolicy) -> collect (DistributionPolicy) ->
//   create (CreationPolicy) -> OOM check (OOMPolicy) -> distribute.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

#include "manyalloc/common/math.hpp"
#include "manyalloc/common/platform.hpp"
#include "manyalloc/heap/concepts.hpp"
#include "manyalloc/heap/detail/growth_mailbox.hpp"
#include "manyalloc/heap/growth_service.hpp"
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
  // Whether serve_growth() exists: a pool that grows, a creation policy
  // whose workers can take pages mapped while they run, and a back end with
  // memory that host and workers share.
  static constexpr bool grows_while_running = [] {
    if constexpr (GrowablePool<RP> && GrowingCreationPolicy<CP, backend>) {
      return acc::SharedHostMemory<backend> && acc::SystemScopeWorker<acc_type> && GrowsWhileRunning<CP, acc_type>;
    } else {
      return false;
    }
  }();

 private:
  // What a handle needs to ask for a growth; an empty base (no bytes in the
  // handle) where none can happen.
  struct GrowthChannel {
    detail::GrowthMailbox* growth_box = nullptr;  // nullptr: no service ran when the handle was made
    std::byte* growth_pool = nullptr;             // the start the mailbox's byte counts are measured from
    std::uint64_t growth_reserved = 0;            // the most the pool can map (the mailbox's `reserved`)
  };
  struct NoGrowthChannel {};
  using HandleGrowth = std::conditional_t<grows_while_running, GrowthChannel, NoGrowthChannel>;

 public:
  // What workers get: copy it into kernels / threads by value.
  class Handle : private HandleGrowth {
   public:
    Handle() = default;
    explicit Handle(const CP& creation, HandleGrowth growth = {}) : HandleGrowth(growth), creation_(creation) {}

    // At least `bytes` usable bytes, or what the OOM policy returns when the
    // heap cannot serve the request. alloc(acc, 0) returns nullptr and
    // changes nothing.
    template <class Acc>
    MANYALLOC_FN void* alloc(const Acc& acc, std::size_t bytes) const {
      DP distribution(acc);
      const std::size_t request = distribution.collect(acc, AP::apply_padding(bytes));
      void* mem = creation_.create(acc, request);
      if constexpr (grows_while_running && GrowsWhileRunning<CP, Acc> && acc::SystemScopeWorker<Acc>) {
        if (this->growth_box != nullptr && CP::is_oom(mem, request)) mem = create_after_growth(acc, request);
      }
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
    // Slow path: a request that failed asks the growth service for room
    // (detail/growth_mailbox.hpp: one request posted at a time, the others
    // wait on the lock in device memory), lets the heap use what was mapped,
    // and tries again, until the pool cannot grow (then the OOM policy
    // decides). A request can also fail beside free pages (its slot was
    // busy, its pages are scattered): while the heap has free pages for it,
    // it tries again up to retries_before_growth times before it asks. A
    // round that finds more of the pool mapped than the request's last
    // round did, by this lane's growth or another's, starts the count again:
    // a lane that used its retries in a smaller pool must try the larger
    // one before it gives up. A request's first round may also let the heap
    // use pages mapped earlier that it did not use yet (M4). Every other
    // round finds or gets more of the pool mapped than the round before, so
    // the rounds end by the reservation's end.
    //
    // Every lane decides for itself: the lanes of a warp come back from
    // create() at different times, and a collective over a mask read here
    // would name lanes that are not together (acc/concepts.hpp; on the GPU
    // such a shuffle handed some lanes a value no lane had sent).
    static constexpr std::uint32_t retries_before_growth = 4;
    enum : std::uint32_t { give_up = 0, try_again = 1, more_pages = 2 };

    template <class Acc>
    MANYALLOC_FN void* create_after_growth(const Acc& acc, std::size_t request) const {
      std::uint32_t retries = 0;  // rounds since the pool last grew
      std::uint64_t seen = 0;     // mapped bytes the last round found (0 before the first)
      for (;;) {
        const std::uint32_t verdict = make_room(acc, request, retries, seen);
        if (verdict == give_up) return nullptr;
        retries = verdict == try_again ? retries + 1u : 0u;
        if (void* mem = creation_.create(acc, request)) return mem;
      }
    }

    // One round: may a request of `bytes` try again? `seen` is the mapped
    // size the request's last round found, raised to what this one finds.
    // The rounds read the mapped size from the heap's copy in device memory
    // (M5), not from the mailbox in host memory.
    template <class Acc>
    MANYALLOC_FN std::uint32_t make_room(const Acc& acc, std::uint64_t bytes, std::uint32_t retries,
                                         std::uint64_t& seen) const {
      const std::uint64_t reserved = this->growth_reserved;
      if (bytes > reserved) return give_up;  // no growth can serve it
      const std::uint64_t now = known_mapped(acc);
      // Pages mapped since this request's last round (by the growth of
      // another request, for a worker that gave up before the answer came,
      // M4, or by the host's grow()): those first. The heap may already use
      // them (another lane raised its usable count), so the raise below
      // failing does not mean they are old.
      const bool grew = seen != 0u && now > seen;
      seen = now > seen ? now : seen;
      if (creation_.extend_mapped_end(acc, this->growth_pool + now) || grew) return more_pages;
      if (retries < retries_before_growth && creation_.room_for(acc, bytes)) return try_again;
      if (now >= reserved) return give_up;
      const std::uint64_t more = CP::growth_bytes_for(bytes);
      const std::uint64_t need = more < reserved - now ? now + more : reserved;  // the last part of the reservation too
      const std::uint64_t mapped = detail::request_growth(
          acc, this->growth_box, creation_.growth_lock(), need, [&] { return known_mapped(acc); },
          [&](std::uint64_t got) { creation_.extend_mapped_end(acc, this->growth_pool + got); });
      if (mapped == 0u) return give_up;
      seen = mapped;
      return more_pages;
    }

    // Bytes from the pool's start that the heap knows to be mapped (M5).
    template <class Acc>
    MANYALLOC_FN std::uint64_t known_mapped(const Acc& acc) const {
      return static_cast<std::uint64_t>(creation_.known_mapped_end(acc) - this->growth_pool);
    }

    CP creation_{};
  };

  // Reserves the pool and builds an empty heap of about `heap_bytes` bytes
  // (a growable pool is mapped whole). Throws what the ReservePoolPolicy /
  // CreationPolicy throw on failure.
  explicit Allocator(std::size_t heap_bytes) : pool_bytes_(heap_bytes) {
    pool_ = RP::set_mem_pool(heap_bytes);
    try {
      if constexpr (GrowablePool<RP>) {
        mapping_ = std::make_unique<Mapping>();
        map_to(heap_bytes);
      }
      const auto [aligned, usable] = AP::align_pool(pool_, heap_bytes);
      creation_ = CP::template init_heap<backend>(aligned, usable);
      if constexpr (GrowablePool<RP> && GrowingCreationPolicy<CP, backend>) {
        creation_.template set_mapped_end<backend>(static_cast<std::byte*>(pool_) + mapping_->mapped);  // M5
      }
    } catch (...) {
      RP::reset_mem_pool(pool_, pool_bytes_);
      throw;
    }
  }

  // A heap that grows (issue 15): reserves `heap_bytes` of address space,
  // lays the heap out over all of it, and maps the metadata plus
  // `initial_bytes` of the pool; grow() maps more between launches, and a
  // growth service (serve_growth) while workers run. Chunks never move.
  Allocator(std::size_t heap_bytes, std::size_t initial_bytes)
    requires GrowablePool<RP> && GrowingCreationPolicy<CP, backend>
      : pool_bytes_(heap_bytes) {
    pool_ = RP::set_mem_pool(heap_bytes);
    try {
      mapping_ = std::make_unique<Mapping>();
      const auto [aligned, usable] = AP::align_pool(pool_, heap_bytes);
      const std::size_t front = static_cast<std::size_t>(static_cast<std::byte*>(aligned) - static_cast<std::byte*>(pool_));
      map_to(front + CP::metadata_bytes_for(aligned, usable));
      creation_ = CP::template init_heap<backend>(aligned, usable);
      map_to(std::max(mapping_->mapped, initial_bytes));
      creation_.template set_mapped_end<backend>(static_cast<std::byte*>(pool_) + mapping_->mapped);
    } catch (...) {
      RP::reset_mem_pool(pool_, pool_bytes_);
      throw;
    }
  }

  // Maps the pool up to `bytes` (rounded up to the pool's granularity, at
  // most the reserved size) and lets the heap use it. Between launches: the
  // heap's words are written from the host (while workers run, a growth
  // service maps for them, serve_growth). Returns the bytes now mapped.
  // Throws what the pool throws (e.g. no device memory left); the heap then
  // stays as it was.
  std::size_t grow(std::size_t bytes)
    requires GrowablePool<RP> && GrowingCreationPolicy<CP, backend>
  {
    map_to(bytes);
    const std::size_t mapped = mapped_bytes();
    creation_.template set_mapped_end<backend>(static_cast<std::byte*>(pool_) + mapped);
    return mapped;
  }

  // Starts a growth service (issue 15, growth_service.hpp): a host thread
  // that maps more of the pool when workers run out of mapped pages while
  // they run. A request that finds no room then waits for the growth (at
  // most options.wait) and is tried again; it fails as in a full heap (the
  // OOM policy decides) once the reservation is mapped or the device has
  // no memory for more. Handles made after this call ask for growth,
  // earlier ones do not. Throws std::logic_error when a service runs
  // already, and what the back end throws when it cannot start one.
  void serve_growth(const GrowthOptions& options = {})
    requires grows_while_running
  {
    if (!mapping_) throw std::logic_error("Allocator::serve_growth: the allocator was moved from");
    Mapping& m = *mapping_;
    const std::lock_guard<std::mutex> guard(m.lock);
    if (m.service) throw std::logic_error("Allocator::serve_growth: a growth service runs already (stop_growth_service() first)");
    if (m.box == nullptr) m.box = static_cast<detail::GrowthMailbox*>(backend::alloc_shared(sizeof(detail::GrowthMailbox)));
    m.service = std::make_unique<GrowthService<backend>>(
        m.box, [mapping = &m, pool = pool_, bytes = pool_bytes_](std::size_t n) { map_locked(*mapping, pool, bytes, n); },
        m.mapped, mappable_bytes(pool_bytes_), options);
  }

  // Stops the growth service; does nothing without one. Workers with
  // handles made while it ran then fail as in a full heap when they find no
  // room (their mailbox stays until the Allocator is destroyed).
  void stop_growth_service()
    requires grows_while_running
  {
    if (!mapping_) return;
    std::unique_ptr<GrowthService<backend>> stopped;
    {
      const std::lock_guard<std::mutex> guard(mapping_->lock);
      stopped = std::move(mapping_->service);
    }
  }

  // What the growth service did; nothing when none runs.
  std::optional<GrowthStatistics> growth_statistics() const
    requires grows_while_running
  {
    if (!mapping_) return std::nullopt;
    const std::lock_guard<std::mutex> guard(mapping_->lock);
    if (!mapping_->service) return std::nullopt;
    return mapping_->service->statistics();
  }

  // Bytes of the pool backed by memory (all of it unless the pool grows; 0
  // once the allocator was moved from).
  std::size_t mapped_bytes() const {
    if constexpr (GrowablePool<RP>) {
      if (!mapping_) return 0;
      const std::lock_guard<std::mutex> guard(mapping_->lock);
      return mapping_->mapped;
    } else {
      return pool_bytes_;
    }
  }

  ~Allocator() { release(); }

  Allocator(const Allocator&) = delete;
  Allocator& operator=(const Allocator&) = delete;
  Allocator(Allocator&& other) noexcept
      : creation_(other.creation_), pool_(std::exchange(other.pool_, nullptr)),
        pool_bytes_(other.pool_bytes_), mapping_(std::move(other.mapping_)), owns_(std::exchange(other.owns_, false)) {}
  Allocator& operator=(Allocator&& other) noexcept {
    if (this != &other) {
      release();
      creation_ = other.creation_;
      pool_ = std::exchange(other.pool_, nullptr);
      pool_bytes_ = other.pool_bytes_;
      mapping_ = std::move(other.mapping_);
      owns_ = std::exchange(other.owns_, false);
    }
    return *this;
  }

  Handle handle() const {
    if constexpr (grows_while_running) {
      GrowthChannel channel;
      if (mapping_) {
        const std::lock_guard<std::mutex> guard(mapping_->lock);
        if (mapping_->service) channel = {mapping_->box, static_cast<std::byte*>(pool_), mappable_bytes(pool_bytes_)};
      }
      return Handle(creation_, channel);
    } else {
      return Handle(creation_);
    }
  }

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
    if constexpr (GrowablePool<RP> && GrowingCreationPolicy<CP, backend>) {
      // Also where the whole pool is mapped: the heap's copy of the mapped
      // end (M5) starts at zero like every metadata word.
      creation_.template set_mapped_end<backend>(static_cast<std::byte*>(pool_) + mapped_bytes());
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
  struct NoGrowthService {};
  template <bool, class B>
  struct GrowthServiceOf {
    using type = NoGrowthService;
  };
  template <class B>
  struct GrowthServiceOf<true, B> {
    using type = GrowthService<B>;
  };
  // A growable pool's mapped part, and the growth service that extends it
  // (on the heap, so that the service's thread keeps its address when the
  // Allocator moves).
  struct Mapping {
    mutable std::mutex lock;  // RP::map calls, `mapped`, `box`, `service`
    std::size_t mapped = 0;   // bytes from pool_ backed by memory
    detail::GrowthMailbox* box = nullptr;  // from the first serve_growth on, until release()
    std::unique_ptr<typename GrowthServiceOf<grows_while_running, backend>::type> service;
  };

  void release() {
    if (!owns_) return;
    owns_ = false;
    if constexpr (grows_while_running) {
      stop_growth_service();
      backend::free_shared(std::exchange(mapping_->box, nullptr));
    }
    CP::template finalize_heap<backend>(creation_);
    RP::reset_mem_pool(pool_, pool_bytes_);
  }

  void map_to(std::size_t bytes) { map_locked(*mapping_, pool_, pool_bytes_, bytes); }

  // The most of a reservation of `pool_bytes` that RP::map maps: the
  // reservation rounded up to the pool's granularity.
  static std::size_t mappable_bytes(std::size_t pool_bytes) {
    const std::size_t g = RP::granularity();
    return ceil_div(pool_bytes, g) * g;
  }

  // Maps [mapped, bytes rounded up to the granularity) of the pool (at most
  // the reservation) and tells the growth service what is mapped.
  static void map_locked(Mapping& m, void* pool, std::size_t pool_bytes, std::size_t bytes) {
    const std::lock_guard<std::mutex> guard(m.lock);
    const std::size_t g = RP::granularity();
    const std::size_t target = std::min(ceil_div(std::min(pool_bytes, bytes), g) * g, mappable_bytes(pool_bytes));
    if (target > m.mapped) {
      RP::map(pool, m.mapped, target);
      m.mapped = target;
    }
    if constexpr (grows_while_running) {
      if (m.service) m.service->publish_mapped(m.mapped);
    }
  }

  CP creation_{};
  void* pool_ = nullptr;
  std::size_t pool_bytes_ = 0;
  std::unique_ptr<Mapping> mapping_;  // growable pools only
  bool owns_ = true;
};

namespace traits {
// Whether an allocator type's creation policy counts available slots.
template <class Allocator>
inline constexpr bool providesAvailableSlots = Allocator::providesAvailableSlots;
}  // namespace traits

}  // namespace manyalloc::heap
