// Uses the many-core heap on host threads through the installed package.
#include <manyalloc/heap/heap.hpp>

#include <cstdio>
#include <thread>
#include <vector>

using Heap = manyalloc::heap::Allocator<manyalloc::heap::CreationPolicies::Scatter<>, manyalloc::heap::DistributionPolicies::NoOp,
                                  manyalloc::heap::OOMPolicies::ReturnNull, manyalloc::heap::ReservePoolPolicies::HostPool,
                                  manyalloc::heap::AlignmentPolicies::Shrink<16>>;

int main() {
  Heap heap(std::size_t{16} << 20);
  const auto handle = heap.handle();
  const std::size_t before = heap.getAvailableSlots(64);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([handle, t] {
      const manyalloc::heap::acc::HostThread acc;
      for (int i = 0; i < 1000; ++i) {
        auto* p = static_cast<int*>(handle.alloc(acc, 64));
        if (p == nullptr) return;
        p[0] = t;
        handle.dealloc(acc, p);
      }
    });
  }
  for (auto& t : threads) t.join();
  std::printf("%s\nslots of 64 B: %zu before, %zu after\n", Heap::info("\n").c_str(), before,
              heap.getAvailableSlots(64));
  return heap.getAvailableSlots(64) == before ? 0 : 1;
}
