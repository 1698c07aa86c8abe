// The host side of a pool that grows while workers run (issue 15;
// Allocator::serve_growth): a thread of the library that maps more of the
// pool when a worker asks for it. The exchange and its invariants (M1-M5)
// are in detail/growth_mailbox.hpp.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <functional>
#include <future>
#include <limits>
#include <mutex>
#include <thread>

#include "manyalloc/heap/acc/concepts.hpp"
#include "manyalloc/heap/detail/growth_mailbox.hpp"

namespace manyalloc::heap {

// How a growth service answers (Allocator::serve_growth).
struct GrowthOptions {
  // Bytes one growth maps at least beyond what is mapped; 0: as many as are
  // mapped (the mapped part doubles), so that a pool that keeps growing
  // asks the host O(log(reserved / initial)) times.
  std::size_t step_bytes = 0;
  // The longest a worker waits for an answer before its request fails as
  // in a full heap (M4).
  std::chrono::nanoseconds wait = std::chrono::seconds(1);
  // How often the service looks for a request.
  std::chrono::microseconds poll = std::chrono::microseconds(20);
};

// What a growth service did, read on the host.
struct GrowthStatistics {
  std::uint64_t answered = 0;  // requests answered
  std::uint64_t growths = 0;   // answers that mapped more of the pool
  std::uint64_t refusals = 0;  // answers that could not map what was needed (M3)
  // Time the service spent mapping for its answers (workers waited for it),
  // in all and in its longest answer.
  std::chrono::nanoseconds mapping{0};
  std::chrono::nanoseconds longest_mapping{0};
};

template <class Backend>
  requires acc::SharedHostMemory<Backend>
class GrowthService {
 public:
  // map_to(n) maps the pool up to at least n bytes from its start (at most
  // the reservation) and calls publish_mapped; it throws when it cannot.
  using MapTo = std::function<void(std::size_t)>;

  // Serves the workers' requests posted in `box` (shared words from
  // Backend::alloc_shared, which outlive the service: handles keep pointing
  // at them). Starts the thread and returns once it serves. Throws what the
  // back end throws (the device context) or std::system_error (no thread).
  GrowthService(detail::GrowthMailbox* box, MapTo map_to, std::size_t mapped, std::size_t reserved,
                const GrowthOptions& options)
      : map_to_(std::move(map_to)), options_(options), box_(box) {
    word(box_->mapped).store(std::max<std::uint64_t>(word(box_->mapped).load(), mapped));
    word(box_->reserved).store(reserved);
    word(box_->wait_ns).store(static_cast<std::uint64_t>(std::max<std::int64_t>(0, options.wait.count())));
    word(box_->refused_from).store(nobody_refused);
    std::promise<void> started;
    auto ready = started.get_future();
    thread_ = std::thread([this, ctx = Backend::capture_context(), &started]() mutable {
      try {
        Backend::enter_context(ctx);
      } catch (...) {
        started.set_exception(std::current_exception());
        return;
      }
      word(box_->serving).store(1u, std::memory_order_release);
      started.set_value();
      serve();
    });
    try {
      ready.get();
    } catch (...) {
      thread_.join();
      throw;
    }
  }

  // Stops answering: waiting workers fail (M4; each once it holds the
  // lock, M5), and so do later requests of handles made while it ran.
  ~GrowthService() {
    word(box_->serving).store(0u, std::memory_order_release);
    {
      const std::lock_guard<std::mutex> guard(sleep_);
      stop_ = true;
    }
    wake_.notify_all();
    thread_.join();
  }
  GrowthService(const GrowthService&) = delete;
  GrowthService& operator=(const GrowthService&) = delete;

  // Tells workers that `mapped` bytes are mapped now (M2); a growth clears
  // the refusals (M3). Called with the pool's mapping lock held.
  void publish_mapped(std::size_t mapped) {
    const std::lock_guard<std::mutex> guard(words_);
    if (mapped <= word(box_->mapped).load()) return;
    word(box_->refused_from).store(nobody_refused, std::memory_order_release);
    word(box_->mapped).store(mapped, std::memory_order_release);
  }

  GrowthStatistics statistics() const {
    return {answered_.load(), growths_.load(), refusals_.load(), std::chrono::nanoseconds(mapping_ns_.load()),
            std::chrono::nanoseconds(longest_mapping_ns_.load())};
  }

 private:
  static constexpr std::uint64_t nobody_refused = std::numeric_limits<std::uint64_t>::max();
  static std::atomic_ref<std::uint64_t> word(std::uint64_t& w) { return std::atomic_ref<std::uint64_t>(w); }

  void serve() {
    std::uint64_t served = word(box_->answered).load();
    for (;;) {
      const std::uint64_t request = word(box_->requested).load(std::memory_order_acquire);
      if (request <= served) {
        forget_old_refusal();
        std::unique_lock<std::mutex> guard(sleep_);
        if (wake_.wait_for(guard, options_.poll, [this] { return stop_; })) return;
        continue;
      }
      const std::uint64_t need = word(box_->need_bytes).load(std::memory_order_acquire);
      const auto began = std::chrono::steady_clock::now();
      answer(need);
      const auto took = static_cast<std::uint64_t>(
          std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - began).count());
      mapping_ns_.fetch_add(took);
      if (took > longest_mapping_ns_.load()) longest_mapping_ns_.store(took);  // the service thread alone writes it
      served = request;
      answered_.fetch_add(1);
      word(box_->answered).store(request, std::memory_order_release);  // after mapped, refused_from (M2, M3)
    }
  }

  // Maps at least `need` bytes, a step more where the pool and the device
  // allow, or records the refusal.
  void answer(std::uint64_t need) {
    const std::uint64_t reserved = word(box_->reserved).load();
    const std::uint64_t before = word(box_->mapped).load();
    if (need <= before) return;
    if (need <= reserved) {
      const std::uint64_t step = options_.step_bytes != 0 ? options_.step_bytes : before;
      const std::uint64_t want = std::min<std::uint64_t>(reserved, std::max<std::uint64_t>(need, before + step));
      for (const std::uint64_t target : {want, need}) {
        try {
          map_to_(static_cast<std::size_t>(target));
        } catch (...) {
          // the device may lack memory for the step but not for the need
        }
        if (word(box_->mapped).load() >= need) {
          growths_.fetch_add(1);
          return;
        }
      }
    }
    const std::lock_guard<std::mutex> guard(words_);
    if (word(box_->mapped).load() >= need) return;  // the host grew the pool meanwhile: no refusal
    refusals_.fetch_add(1);
    if (need < word(box_->refused_from).load()) word(box_->refused_from).store(need, std::memory_order_release);
    refused_at_ = std::chrono::steady_clock::now();
  }

  // A refusal (M3) holds for one wait: the device may have memory again.
  void forget_old_refusal() {
    const std::lock_guard<std::mutex> guard(words_);
    if (word(box_->refused_from).load() != nobody_refused &&
        std::chrono::steady_clock::now() - refused_at_ > options_.wait) {
      word(box_->refused_from).store(nobody_refused, std::memory_order_release);
    }
  }

  MapTo map_to_;
  GrowthOptions options_;
  detail::GrowthMailbox* box_;
  std::mutex words_;  // writers of mapped, refused_from, refused_at_
  std::chrono::steady_clock::time_point refused_at_{};
  std::mutex sleep_;  // stop_ and the service's sleep between looks
  std::condition_variable wake_;
  bool stop_ = false;
  std::atomic<std::uint64_t> answered_{0}, growths_{0}, refusals_{0};
  std::atomic<std::uint64_t> mapping_ns_{0}, longest_mapping_ns_{0};  // GrowthStatistics::mapping
  std::thread thread_;
};

}  // namespace manyalloc::heap
