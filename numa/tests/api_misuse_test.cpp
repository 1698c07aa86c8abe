// Checked mode (MANYALLOC_NUMA_CHECK=1, set by ctest): double frees and
// frees of pointers the allocator never returned abort with a clear message.
#include <cstring>
#include <thread>

#include "api_test_util.hpp"

namespace manyalloc::numa::test {
namespace {

class Misuse : public ::testing::Test {
 protected:
  void SetUp() override {
    GTEST_FLAG_SET(death_test_style, "threadsafe");
    ASSERT_STREQ(std::getenv("MANYALLOC_NUMA_CHECK"), "1");
  }
};

TEST_F(Misuse, DoubleFreeOfASmallChunk) {
  EXPECT_DEATH(
      {
        void* p = manyalloc_numa_malloc(32);
        manyalloc_numa_free(p);
        manyalloc_numa_free(p);
      },
      "manyalloc-numa: free: chunk is not allocated \\(double free\\?\\)");
}

TEST_F(Misuse, DoubleFreeAcrossThreads) {
  EXPECT_DEATH(
      {
        void* p = manyalloc_numa_malloc(32);
        std::thread([p] { manyalloc_numa_free(p); }).join();
        manyalloc_numa_free(p);                    // owner frees it again
        manyalloc_numa_free(manyalloc_numa_malloc(32));  // merge finds it
      },
      "double free");
  EXPECT_DEATH(
      {
        void* p = manyalloc_numa_malloc(32);
        std::thread([p] {
          manyalloc_numa_free(p);
          manyalloc_numa_free(p);
        }).join();
      },
      "double free");
}

TEST_F(Misuse, DoubleFreeOfALargeBlock) {
  EXPECT_DEATH(
      {
        void* p = manyalloc_numa_malloc(4 << 20);
        manyalloc_numa_free(p);
        manyalloc_numa_free(p);
      },
      "manyalloc-numa: free: .*(double free|does not belong)");
}

TEST_F(Misuse, FreeOfAForeignPointer) {
  EXPECT_DEATH(
      {
        int local = 0;
        manyalloc_numa_free(&local);
      },
      "manyalloc-numa: free: pointer does not belong to this heap");
}

TEST_F(Misuse, FreeInsideAChunk) {
  EXPECT_DEATH(
      {
        char* p = static_cast<char*>(manyalloc_numa_malloc(100));
        manyalloc_numa_free(p + 8);
      },
      "manyalloc-numa: free: pointer is not the start of an allocated chunk");
  EXPECT_DEATH(
      {
        char* p = static_cast<char*>(manyalloc_numa_malloc(1 << 20));
        manyalloc_numa_free(p + 4096);
      },
      "not the start");
}

TEST_F(Misuse, ReallocOfAForeignPointer) {
  EXPECT_DEATH(
      {
        int local = 0;
        (void)!manyalloc_numa_realloc(&local, 10);
      },
      "manyalloc-numa: realloc: pointer does not belong");
}

TEST_F(Misuse, CorrectUseDoesNotAbort) {
  void* p = manyalloc_numa_malloc(32);
  std::thread([p] { manyalloc_numa_free(p); }).join();
  for (int i = 0; i < 1000; ++i) manyalloc_numa_free(manyalloc_numa_malloc(32));
  EXPECT_EQ(stats().misuses, 0u);
}

}  // namespace
}  // namespace manyalloc::numa::test
