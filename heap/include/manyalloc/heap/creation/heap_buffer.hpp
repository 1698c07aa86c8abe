// CreationPolicies::HeapBuffer: PIConGPU's frame allocator ([Eckert2014]
// 2.4.4), the baseline of the particle-in-cell benchmark (5.2). The pool is
// split, when the heap is built, into Config::species equal parts of
// Config::frame_bytes frames; each part has a ring of its free frame indices
// (detail/heap_buffer/ring.hpp, which also says how a ring that runs empty is
// detected at once instead of late).
//
// Which species a request draws from is part of the handle: for_species(s)
// returns a copy bound to species s (the plain handle is bound to species 0).
// A request of at most frame_bytes takes one frame of that species' part, or
// fails (nullptr, counted as `empty`) when that part is used up, even while
// other parts have free frames: the fixed split is the limit 5.2.2 shows in
// Figure 5.6. A free goes back to the ring of the part the frame lies in,
// whatever species the freeing handle is bound to.
#pragma once

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "manyalloc/common/platform.hpp"
#include "manyalloc/common/report.hpp"
#include "manyalloc/heap/acc/concepts.hpp"
#include "manyalloc/heap/creation/heap_buffer_config.hpp"
#include "manyalloc/heap/detail/heap_buffer/ring.hpp"

namespace manyalloc::heap::CreationPolicies {

// Counters of a HeapBuffer heap (read on the host).
struct HeapBufferReports {
  std::uint32_t empty = 0;         // allocations refused: their species' part was used up
  std::uint32_t late = 0;          // allocations that waited for a free still being written
  std::uint32_t oversize = 0;      // requests larger than a frame (refused)
  std::uint32_t live_refused = 0;  // frames the ring offered while marked live (a broken ring; must stay 0)
  std::uint32_t misuse = 0;        // bad frees ignored
  Misuse last_misuse = Misuse::none;
};

template <HeapBufferConfiguration Config = HeapBufferConfig>
class HeapBuffer {
  using Counters = heap::detail::heap_buffer::RingCounters;
  using Shared = heap::detail::heap_buffer::Shared;

 public:
  static constexpr std::uint32_t frame_bytes = Config::frame_bytes;
  static constexpr std::uint32_t species = Config::species;
  static constexpr bool providesAvailableSlots = false;
  static constexpr bool needs_addressable_pool = true;
  // Frames start at multiples of this (from the pool's start).
  static constexpr std::size_t frame_alignment = 256;

  HeapBuffer() = default;

  // ---- host side -------------------------------------------------------------
  // Splits [pool, pool + bytes) into the metadata and species * frames_per_species
  // frames and fills every ring. Throws std::invalid_argument when a species
  // would get no frame.
  template <class Backend>
  static HeapBuffer init_heap(void* pool, std::size_t bytes) {
    HeapBuffer h = plan(pool, bytes);
    // The metadata is built on the host and copied once: counters, then the
    // rings (every frame free, R1: cell k tagged for ticket k), then the
    // live flags (all clear).
    std::vector<std::byte> meta(h.metadata_bytes_);
    auto* counters = reinterpret_cast<Counters*>(meta.data() + (reinterpret_cast<std::byte*>(h.counters_) -
                                                                 static_cast<std::byte*>(pool)));
    auto* cells = reinterpret_cast<std::uint64_t*>(meta.data() + (reinterpret_cast<std::byte*>(h.cells_) -
                                                                   static_cast<std::byte*>(pool)));
    for (std::uint32_t s = 0; s < species; ++s) {
      counters[s].pop = 0;
      counters[s].push = h.frames_;
      counters[s].available = h.frames_;
      for (std::uint32_t k = 0; k < h.frames_; ++k) {
        cells[std::size_t{s} * h.frames_ + k] = heap::detail::heap_buffer::pack(k + 1, k);
      }
    }
    Backend::copy_to_device(pool, meta.data(), meta.size());
    return h;
  }

  template <class Backend>
  static void finalize_heap(const HeapBuffer&) {}

  // A copy of this handle whose requests draw from species `s`'s part.
  // Throws std::out_of_range for s >= species.
  HeapBuffer for_species(std::uint32_t s) const {
    if (s >= species) throw std::out_of_range("HeapBuffer::for_species: species " + std::to_string(s) +
                                              " of " + std::to_string(species));
    HeapBuffer h = *this;
    h.species_ = s;
    return h;
  }
  MANYALLOC_FN std::uint32_t bound_species() const { return species_; }
  MANYALLOC_FN std::uint32_t frames_per_species() const { return frames_; }

  template <class Backend>
  HeapBufferReports reports() const {
    Shared sh{};
    Backend::copy_to_host(&sh, shared_, sizeof sh);
    return {sh.empty, sh.late, sh.oversize, sh.live_refused, sh.misuse, static_cast<Misuse>(sh.last_misuse)};
  }

  // Frames of species `s` in its ring now (host; exact while no worker runs).
  template <class Backend>
  std::uint64_t free_frames(std::uint32_t s) const {
    Counters c{};
    Backend::copy_to_host(&c, counters_ + s, sizeof c);
    return c.push - c.pop;
  }

  static std::string classname() {
    return "HeapBuffer[frame_bytes=" + std::to_string(frame_bytes) + ",species=" + std::to_string(species) + "]";
  }

  // ---- worker side -----------------------------------------------------------
  template <class Acc>
    requires acc::MixedWidthAtomics<Acc>
  MANYALLOC_FN void* create(const Acc& acc, std::size_t bytes) const {
    if (bytes == 0) return nullptr;
    if (bytes > frame_bytes) {
      acc.atomic_add(&shared_->oversize, 1u);
      return nullptr;
    }
    const std::uint32_t s = species_;
    const std::uint32_t f = heap::detail::heap_buffer::pop(acc, counters_ + s, cells_ + std::size_t{s} * frames_,
                                                           frames_, shared_);
    if (f == heap::detail::heap_buffer::no_frame) return nullptr;
    const std::size_t global = std::size_t{s} * frames_ + f;
    // A frame the ring offers must be free; if it were not, handing it out
    // would overwrite a live frame, so it is refused (and stays out of the
    // ring) rather than corrupting memory.
    if (acc.atomic_exch(&live_[global], 1u) != 0u) {
      acc.atomic_add(&shared_->live_refused, 1u);
      return nullptr;
    }
    return data_ + global * frame_bytes;
  }

  template <class Acc>
    requires acc::MixedWidthAtomics<Acc>
  MANYALLOC_FN void destroy(const Acc& acc, void* ptr) const {
    if (ptr == nullptr) return;
    const auto* p = static_cast<const std::byte*>(ptr);
    const std::size_t total = std::size_t{species} * frames_;
    Misuse m = Misuse::none;
    if (p < data_ || p >= data_ + total * frame_bytes) {
      m = Misuse::foreign_pointer;
    } else if (static_cast<std::size_t>(p - data_) % frame_bytes != 0) {
      m = Misuse::not_a_chunk_start;
    } else {
      const std::size_t global = static_cast<std::size_t>(p - data_) / frame_bytes;
      // Clearing the live flag first makes a second free of the frame a
      // reported no-op, and keeps the ring from ever holding more frames
      // than it has cells.
      if (acc.atomic_exch(&live_[global], 0u) == 0u) {
        m = Misuse::double_free;
      } else {
        const auto s = static_cast<std::uint32_t>(global / frames_);
        heap::detail::heap_buffer::push(acc, counters_ + s, cells_ + std::size_t{s} * frames_, frames_,
                                        static_cast<std::uint32_t>(global % frames_));
      }
    }
    if (m != Misuse::none) {
      acc.atomic_add(&shared_->misuse, 1u);
      acc.store(&shared_->last_misuse, static_cast<std::uint32_t>(m));
      report_misuse("HeapBuffer::destroy", m, ptr);
    }
  }

  MANYALLOC_FN static bool is_oom(const void* ptr, std::size_t bytes) { return bytes != 0 && ptr == nullptr; }

 private:
  static constexpr std::size_t round_up(std::size_t v, std::size_t a) { return (v + a - 1) / a * a; }

  // Layout: Shared | RingCounters x species | cells (u64) | live flags (u32) | frames.
  static HeapBuffer plan(void* pool, std::size_t bytes) {
    const auto base = reinterpret_cast<std::uintptr_t>(pool);
    const std::size_t fixed = sizeof(Shared) + species * sizeof(Counters);
    auto fits = [&](std::size_t per_species) {
      const std::size_t n = per_species * species;
      const std::size_t meta = fixed + n * sizeof(std::uint64_t) + n * sizeof(std::uint32_t);
      const std::uintptr_t data = round_up(base + meta, frame_alignment);
      return data - base + n * frame_bytes <= bytes;
    };
    const std::size_t per_frame = frame_bytes + sizeof(std::uint64_t) + sizeof(std::uint32_t);
    std::size_t per_species = bytes > fixed ? (bytes - fixed) / per_frame / species : 0;
    if (per_species >= heap::detail::heap_buffer::no_frame) per_species = heap::detail::heap_buffer::no_frame - 1;
    while (per_species > 0 && !fits(per_species)) --per_species;
    if (per_species == 0) {
      throw std::invalid_argument("HeapBuffer: pool of " + std::to_string(bytes) + " bytes holds no frame of " +
                                  std::to_string(frame_bytes) + " bytes for each of " + std::to_string(species) +
                                  " species");
    }
    HeapBuffer h;
    h.frames_ = static_cast<std::uint32_t>(per_species);
    const std::size_t n = per_species * species;
    h.shared_ = reinterpret_cast<Shared*>(base);
    h.counters_ = reinterpret_cast<Counters*>(base + sizeof(Shared));
    h.cells_ = reinterpret_cast<std::uint64_t*>(base + fixed);
    h.live_ = reinterpret_cast<std::uint32_t*>(h.cells_ + n);
    h.metadata_bytes_ = reinterpret_cast<std::uintptr_t>(h.live_ + n) - base;
    h.data_ = reinterpret_cast<std::byte*>(round_up(base + h.metadata_bytes_, frame_alignment));
    return h;
  }

  Shared* shared_ = nullptr;
  Counters* counters_ = nullptr;
  std::uint64_t* cells_ = nullptr;
  std::uint32_t* live_ = nullptr;
  std::byte* data_ = nullptr;
  std::size_t metadata_bytes_ = 0;
  std::uint32_t frames_ = 0;   // per species
  std::uint32_t species_ = 0;  // the species this handle allocates from
};

}  // namespace manyalloc::heap::CreationPolicies
