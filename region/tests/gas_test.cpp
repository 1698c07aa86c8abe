// Unit tests of drop_private_pages (gas.hpp): with private memory it drops
// exactly the pages wholly inside the range and the GAS, and nothing with a
// shared GAS (whose pages the top scheduler gives back).
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <vector>

#include "gas.hpp"

using namespace manyalloc::region::detail;

namespace {

// An 8-page private anonymous mapping standing in for a GAS of its middle
// 6 pages (pages 1-6), every page written.
class DropPrivatePages : public ::testing::Test {
 protected:
  void SetUp() override {
    page_ = static_cast<std::uint64_t>(sysconf(_SC_PAGESIZE));
    void* p = mmap(nullptr, 8 * page_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    ASSERT_NE(p, MAP_FAILED);
    base_ = static_cast<unsigned char*>(p);
    std::memset(base_, 0x5a, 8 * page_);
    gas_.base = reinterpret_cast<std::uint64_t>(base_) + page_;
    gas_.bytes = 6 * page_;
  }
  void TearDown() override { munmap(base_, 8 * page_); }

  // Which of the 8 pages are still in memory.
  std::vector<int> resident() const {
    std::vector<unsigned char> vec(8);
    EXPECT_EQ(mincore(base_, 8 * page_, vec.data()), 0);
    std::vector<int> r;
    for (int i = 0; i < 8; ++i) r.push_back(vec[static_cast<std::size_t>(i)] & 1);
    return r;
  }
  std::uint64_t at(std::uint64_t pages, std::uint64_t bytes = 0) const {
    return reinterpret_cast<std::uint64_t>(base_) + pages * page_ + bytes;
  }

  std::uint64_t page_ = 0;
  unsigned char* base_ = nullptr;
  GasMapping gas_;
};

TEST_F(DropPrivatePages, DropsOnlyWholePagesInsideTheRangeAndTheGas) {
  // Pages 2-4 wholly inside; pages 1 and 5 only in part.
  EXPECT_TRUE(drop_private_pages(gas_, at(1, 100), 4 * page_ - 200 + page_));
  EXPECT_EQ(resident(), (std::vector<int>{1, 1, 0, 0, 0, 1, 1, 1}));
  EXPECT_EQ(base_[at(3) - at(0)], 0);          // dropped: reads as zero
  EXPECT_EQ(base_[at(1, 99) - at(0)], 0x5a);   // the partly covered page keeps its bytes
  // A range reaching past the GAS on both sides: only the GAS's pages go.
  std::memset(base_, 0x5a, 8 * page_);
  EXPECT_TRUE(drop_private_pages(gas_, at(0), 8 * page_));
  EXPECT_EQ(resident(), (std::vector<int>{1, 0, 0, 0, 0, 0, 0, 1}));
  EXPECT_EQ(base_[0], 0x5a);
  EXPECT_EQ(base_[7 * page_], 0x5a);
}

TEST_F(DropPrivatePages, LeavesASharedGasAndEmptyRangesAlone) {
  GasMapping shared = gas_;
  shared.shared = true;
  EXPECT_TRUE(drop_private_pages(shared, at(1), 6 * page_));
  EXPECT_TRUE(drop_private_pages(gas_, at(2, 1), page_ - 2));  // no whole page
  EXPECT_TRUE(drop_private_pages(gas_, at(2), 0));
  EXPECT_EQ(resident(), (std::vector<int>(8, 1)));
}

}  // namespace
