// Remote frees ([Valat2014]: "remote free without locks: the chunk goes into its
// owner's atomic queue, flushed at the owner's next memory operation").
//
// A thread that frees another heap's chunk sets the chunk's bit in the run's
// remote bitmap and queues the run (not the chunk) in the owner's remote
// free queue (RFQ) if it is not queued yet; the owner merges the queued runs'
// remote bits into their free bitmaps (heap_flush_remote). With the free
// cache on, the freeing thread first gathers, per size class, the frees of
// one bitmap word of one run and publishes them together (RemoteBatch,
// invariants.hpp): a producer hands out consecutive chunks of a class, so a
// consumer's frees arrive word by word and one atomic OR then covers up to
// 64 frees instead of one each.
#include <bit>

#include "heap.hpp"

namespace manyalloc::numa {

namespace {

// Idle-owner merge (lowmem; invariants.hpp): the thread that queues the
// idle_merge_runs-th run since the owner last took its RFQ merges the queue
// for it (heap_merge_for_owner). An owner that allocates takes its queue at
// least every rfq_poll_interval-th allocation from a run, so the count mostly
// reaches the threshold on a heap whose thread sleeps or has exited. A
// lower threshold keeps less memory parked but merges for owners that do
// allocate, which slows producer/consumer pairs (numa/DESIGN.md, "Figures
// moved out of the code").
constexpr std::uint32_t idle_merge_runs = 16;

// Publishes the frees `bits` (non-zero) of word w of run r. Out of line,
// so that heap_free_remote_batched, which calls it once per batch, needs no
// stack frame for the frees it only gathers.
[[gnu::noinline]] void publish(Context& c, Run& r, std::uint32_t w, std::uint64_t bits) {
  // Once our bits are visible the owner may merge them (if the run is in its
  // queue already) and release the run, and with it the segment, whose
  // descriptor may then be reused; we still read and write `queued`,
  // `remote_words` and the segment's heap below. The pin, taken before the
  // bits are published, keeps the owner from releasing the run until we are
  // done: an owner that merged our bits read them after our fetch_or, so its
  // seq_cst load of `pins` comes after our increment (heap_runs.cpp, releasable).
  r.pins.fetch_add(1, std::memory_order_seq_cst);
  Heap* owner = r.seg->heap.load(std::memory_order_relaxed);
  // Counted before the bits are published: a merge that takes them (after
  // our fetch_or, which it reads) subtracts them after this addition.
  owner->remote_pending.fetch_add(static_cast<std::uint64_t>(std::popcount(bits)) * r.chunk_size,
                                  std::memory_order_relaxed);
  // seq_cst pairs with the owner's flush (see heap_flush_remote).
  const std::uint64_t old = r.remote_bits[w].fetch_or(bits, std::memory_order_seq_cst);
  if (const std::uint64_t dup = old & bits) [[unlikely]] {
    owner->remote_pending.fetch_sub(static_cast<std::uint64_t>(std::popcount(dup)) * r.chunk_size,
                                    std::memory_order_relaxed);
    misuse(c, "free", Misuse::double_free,
           r.base + (static_cast<std::size_t>(w) * 64 + std::countr_zero(dup)) * r.chunk_size);
    if ((bits & ~dup) == 0) {  // nothing new: the word is marked and queued already
      r.pins.fetch_sub(1, std::memory_order_seq_cst);
      return;
    }
  }
  // The first pending bit of a word marks the word, so that the owner only
  // drains marked words. If the word was not empty, it is marked already or
  // the owner's drain of the word (after it cleared the marks) is still to
  // come and will see our bits.
  if (old == 0) r.remote_words.fetch_or(std::uint64_t{1} << w, std::memory_order_seq_cst);
  // Already queued: nothing to do. A seq_cst load that still sees 1 comes
  // before the owner's reset of `queued` and therefore before its drain,
  // which then sees our bits (see heap_flush_remote).
  bool pushed = false;
  if (r.queued.load(std::memory_order_seq_cst) == 0 &&
      r.queued.exchange(1, std::memory_order_seq_cst) == 0) {
    owner->rfq.push(&r);
    pushed = true;
  }
  r.pins.fetch_sub(1, std::memory_order_seq_cst);
  // After the pin: the merge may release r. Heaps are never destroyed
  // (context.hpp, Context::heaps), so `owner` stays a heap.
  // A publish that queued nothing tries too once the count is reached: when
  // the owner was busy at the try that reached it and then went idle, every
  // run may be queued already, and no further push would come.
  if (owner->merge_for_owner) {
    const std::uint32_t queued_runs =
        pushed ? owner->rfq_pushes.fetch_add(1, std::memory_order_relaxed) + 1
               : owner->rfq_pushes.load(std::memory_order_relaxed);
    if (queued_runs >= idle_merge_runs) heap_merge_for_owner(*owner);
  }
}

}  // namespace

void heap_free_remote(Context& c, Run& r, std::uint32_t idx) {
  publish(c, r, idx >> 6, std::uint64_t{1} << (idx & 63));
}

namespace {

// A free of another word than the batch's: the batch is published and a
// new one started with `bit`.
[[gnu::noinline]] void batch_restart(Heap& self, RemoteBatch& b, Run& r, std::uint32_t w,
                                     std::uint64_t bit, unsigned cls) {
  if (b.run != nullptr) publish(*self.ctx, *b.run, b.word, b.bits);
  b = RemoteBatch{&r, w, bit};
  self.remote_batch_classes |= std::uint64_t{1} << cls;
}

}  // namespace

void heap_free_remote_batched(Heap& self, ChunkRef chunk) {
  Run& r = *chunk.run;
  const std::uint32_t w = chunk.idx >> 6;
  const std::uint64_t bit = std::uint64_t{1} << (chunk.idx & 63);
  RemoteBatch& b = self.remote_batch[chunk.cls];
  if (b.run != &r || b.word != w) [[unlikely]]
    return batch_restart(self, b, r, w, bit, chunk.cls);
  if (b.bits & bit) [[unlikely]] {
    misuse(*self.ctx, "free", Misuse::double_free,
           r.base + static_cast<std::size_t>(chunk.idx) * class_size(chunk.cls));
    return;
  }
  b.bits |= bit;
}

void heap_remote_batch_flush(Heap& self) {
  for (std::uint64_t m = self.remote_batch_classes; m != 0; m &= m - 1) {
    RemoteBatch& b = self.remote_batch[std::countr_zero(m)];
    publish(*self.ctx, *b.run, b.word, b.bits);
    b = RemoteBatch{};
  }
  self.remote_batch_classes = 0;
}

void heap_flush_remote(Heap& h) {
  Run* list = h.rfq.take_all();
  if (h.merge_for_owner && list != nullptr) h.rfq_pushes.store(0, std::memory_order_relaxed);
  std::uint64_t merged_total = 0, bytes = 0, taken = 0;
  while (list != nullptr) {
    Run& r = *list;
    list = r.qnext;
    // Clear `queued` before draining: a remote free whose bit we miss below
    // then sees queued == 0 and queues the run again. With seq_cst on both
    // sides, "drain missed the bit" implies "its queued.exchange saw 0".
    r.queued.store(0, std::memory_order_seq_cst);
    std::uint32_t merged = 0;
    for (std::uint64_t words = r.remote_words.exchange(0, std::memory_order_seq_cst); words != 0;
         words &= words - 1) {
      const unsigned w = static_cast<unsigned>(std::countr_zero(words));
      std::uint64_t bits = r.remote_bits[w].exchange(0, std::memory_order_seq_cst);
      taken += static_cast<std::uint64_t>(std::popcount(bits)) * r.chunk_size;
      if (const std::uint64_t dup = bits & r.free_word_or_all(w)) [[unlikely]] {
        misuse(*h.ctx, "free", Misuse::double_free,
               r.base + (static_cast<std::size_t>(w) * 64 + std::countr_zero(dup)) * r.chunk_size);
        bits &= ~dup;
      }
      if (bits == 0) continue;
      run_merge_bits(r, w, bits);
      merged += static_cast<std::uint32_t>(std::popcount(bits));
    }
    if (merged == 0) continue;
    r.free_count += merged;
    merged_total += merged;
    bytes += static_cast<std::uint64_t>(merged) * r.chunk_size;
    h.purge_credit += static_cast<std::uint64_t>(merged) * r.chunk_size;
    if (r.state == RunState::full || r.free_count == r.nchunks) heap_after_free(h, r);
  }
  if (taken != 0) h.remote_pending.fetch_sub(taken, std::memory_order_relaxed);
  if (merged_total) {
    h.remote_frees.store(h.remote_frees.load(std::memory_order_relaxed) + merged_total,
                         std::memory_order_relaxed);
    h.small_in_use.store(h.small_in_use.load(std::memory_order_relaxed) - bytes,
                         std::memory_order_relaxed);
  }
}

}  // namespace manyalloc::numa
