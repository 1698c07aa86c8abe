// MPI correctness test of the region allocator (run through mpiexec with 4-16
// ranks; layout from MANYALLOC_REGION_LEVELS / _FANOUT):
//   - lists and trees built in regions on one worker, sent, traversed and
//     modified on another (which also allocates into the remote region),
//     sent back and checked;
//   - realloc into another region keeps the contents;
//   - level hints place regions on inner schedulers; freeing a region frees
//     its sub-regions on other schedulers;
//   - bad pointers and region ids come back as error codes;
//   - after everything is freed, the accounting of every scheduler returns to
//     its starting point and memory is conserved across the tree.
// The tests run in this order on every worker (main: mpi_gtest_main.cpp,
// session form); the workers pair up inside them.
#include <mpi.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <cstdio>
#include <cstring>
#include <vector>

#include "manyalloc/region/mpi_interop.h"
#include "manyalloc/region/region.hpp"
#include "mpi_gtest.hpp"

namespace mr = manyalloc::region;

const unsigned region_test::alarm_seconds = 0;  // no alarm: the test's ctest TIMEOUT ends a hang

struct Node {
  Node* next;
  std::uint64_t value;
  std::uint64_t owner;
  char pad[232];  // 256-byte nodes as in [Lyberis2012]'s list benchmark
};
static_assert(sizeof(Node) == 256);

struct Tree {
  Tree* left;
  Tree* right;
  std::uint64_t key;
  double payload[5];
};

static Tree* build_tree(mr::rid_t region, std::uint64_t lo, std::uint64_t hi) {
  if (lo >= hi) return nullptr;
  const std::uint64_t mid = (lo + hi) / 2;
  Tree* t = mr::make<Tree>(region);
  if (t == nullptr) return nullptr;
  t->key = mid;
  for (double& d : t->payload) d = static_cast<double>(mid);
  t->left = build_tree(region, lo, mid);
  t->right = build_tree(region, mid + 1, hi);
  return t;
}

static std::uint64_t tree_sum(const Tree* t, std::uint64_t* count) {
  if (t == nullptr) return 0;
  ++*count;
  return t->key + tree_sum(t->left, count) + tree_sum(t->right, count);
}

static void tree_bump(Tree* t) {
  if (t == nullptr) return;
  t->key += 1;
  tree_bump(t->left);
  tree_bump(t->right);
}

// The structure one worker builds: a list (in region `list_region`) and a
// tree in a sub-region; the root record holds both heads.
struct Root {
  Node* head;
  Tree* tree;
  std::uint64_t nodes;
  std::uint64_t tree_nodes;
  char* big;  // a multi-slab object
};

static constexpr std::uint64_t list_len = 3000;
static constexpr std::uint64_t tree_len = 255;
static constexpr std::uint64_t big_len = 50048;

static Root* build(int me, mr::rid_t list_region, mr::rid_t tree_region) {
  Root* root = mr::make<Root>(list_region);
  EXPECT_NE(root, nullptr);
  if (root == nullptr) return nullptr;
  std::vector<void*> nodes(list_len);
  // Bulk allocation, plus a few single ones at the end.
  EXPECT_STATUS(mr::balloc(sizeof(Node), list_region, std::span(nodes).first(list_len - 3)), mr::Status::ok);
  for (std::uint64_t i = list_len - 3; i < list_len; ++i) {
    auto r = mr::alloc(sizeof(Node), list_region);
    EXPECT_TRUE(r);
    nodes[i] = r.value;
  }
  for (std::uint64_t i = 0; i < list_len; ++i) {
    auto* n = static_cast<Node*>(nodes[i]);
    n->next = i + 1 < list_len ? static_cast<Node*>(nodes[i + 1]) : nullptr;
    n->value = static_cast<std::uint64_t>(me) * 1000000 + i;
    n->owner = static_cast<std::uint64_t>(me);
    std::memset(n->pad, me & 0x7f, sizeof n->pad);
  }
  root->head = static_cast<Node*>(nodes[0]);
  root->nodes = list_len;
  root->tree = build_tree(tree_region, 0, tree_len);
  root->tree_nodes = tree_len;
  auto big = mr::alloc(big_len, tree_region);
  EXPECT_TRUE(big);
  root->big = static_cast<char*>(big.value);
  if (root->big != nullptr) std::memset(root->big, 0x5a, big_len);
  return root;
}

// Traverses the peer's structure, checks it, modifies every node, and
// appends one node allocated (remotely) in the peer's list region.
static void visit_and_modify(Root* root, int peer, mr::rid_t peer_list_region) {
  std::uint64_t i = 0;
  Node* last = nullptr;
  for (Node* n = root->head; n != nullptr; n = n->next, ++i) {
    EXPECT_EQ(n->value, static_cast<std::uint64_t>(peer) * 1000000 + i);
    EXPECT_EQ(n->owner, static_cast<std::uint64_t>(peer));
    n->value += 7;
    last = n;
  }
  EXPECT_EQ(i, list_len);
  std::uint64_t count = 0;
  EXPECT_EQ(tree_sum(root->tree, &count), tree_len * (tree_len - 1) / 2);
  EXPECT_EQ(count, tree_len);
  tree_bump(root->tree);
  EXPECT_TRUE(root->big != nullptr && root->big[0] == 0x5a && root->big[big_len - 1] == 0x5a);
  Node* extra = mr::make<Node>(peer_list_region);
  EXPECT_NE(extra, nullptr);
  if (extra != nullptr && last != nullptr) {
    extra->next = nullptr;
    extra->value = 424242;
    extra->owner = static_cast<std::uint64_t>(mr_worker_id());
    last->next = extra;
    root->nodes += 1;
  }
}

static void check_returned(Root* root, int me, int visitor) {
  std::uint64_t i = 0;
  Node* n = root->head;
  for (; n != nullptr && i < list_len; n = n->next, ++i) EXPECT_EQ(n->value, static_cast<std::uint64_t>(me) * 1000000 + i + 7);
  EXPECT_EQ(i, list_len);
  EXPECT_TRUE(n != nullptr && n->value == 424242 && n->owner == static_cast<std::uint64_t>(visitor));
  std::uint64_t count = 0;
  EXPECT_EQ(tree_sum(root->tree, &count), tree_len * (tree_len - 1) / 2 + tree_len);
  // The visitor's node is a live object of our region: free it.
  if (n != nullptr) {
    EXPECT_STATUS(mr::free(n), mr::Status::ok);
  }
}

struct Totals {
  std::uint64_t regions = 0, used_slabs = 0, objects = 0, bytes = 0, free_slabs = 0, pool_slabs = 0;
};

static Totals totals() {
  Totals t;
  for (int s = 0; s < mr_num_schedulers(); ++s) {
    mr_sched_stats st{};
    EXPECT_STATUS(mr_sched_stats_get(s, &st), MR_OK);
    t.regions += st.regions;
    t.used_slabs += st.used_slabs;
    t.objects += st.live_objects;
    t.bytes += st.live_bytes;
    t.free_slabs += st.free_slabs;
    t.pool_slabs += st.pool_slabs;
  }
  return t;
}

static void test_errors(int me) {
  int local = 0;
  EXPECT_STATUS(mr::free(&local), mr::Status::invalid_pointer);  // not in the GAS
  auto r = mr::ralloc();
  EXPECT_TRUE(r);
  auto obj = mr::alloc(100, r.value);
  EXPECT_TRUE(obj);
  EXPECT_STATUS(mr::free(static_cast<char*>(obj.value) + 8), mr::Status::invalid_pointer);  // inside an object
  EXPECT_STATUS(mr::free(obj.value), mr::Status::ok);
  EXPECT_STATUS(mr::free(obj.value), mr::Status::invalid_pointer);  // double free
  // An address in the GAS that no region uses.
  EXPECT_STATUS(mr::free(reinterpret_cast<char*>(obj.value) + (std::uint64_t{1} << 31)), mr::Status::invalid_pointer);
  const mr::rid_t bogus = 0xfffffff000ull + static_cast<mr::rid_t>(me);
  EXPECT_STATUS(mr::alloc(64, bogus).status, mr::Status::no_region);
  EXPECT_STATUS(mr::ralloc(bogus).status, mr::Status::no_region);
  EXPECT_STATUS(mr::rfree(bogus), mr::Status::no_region);
  EXPECT_STATUS(mr::rfree(mr::root_region), mr::Status::bad_argument);
  EXPECT_STATUS(mr::alloc(std::uint64_t{1} << 40, r.value).status, mr::Status::bad_argument);
  EXPECT_STATUS(mr::rfree(r.value), mr::Status::ok);
  EXPECT_STATUS(mr::rfree(r.value), mr::Status::no_region);  // already freed
  EXPECT_STATUS(mr::alloc(64, r.value).status, mr::Status::no_region);
  void* objs[2];
  EXPECT_STATUS(mr_balloc(64, r.value, 2, objs), MR_ERR_NO_REGION);
  EXPECT_STATUS(mr_balloc(64, mr::root_region, 0, objs), MR_ERR_BAD_ARGUMENT);
}

// Regions placed by level hint on inner schedulers with children below them;
// freeing the top one frees all.
static void test_hierarchy() {
  auto top = mr::ralloc(mr::root_region, 0);
  EXPECT_TRUE(top);
  auto mid = mr::ralloc(top.value, 1);
  EXPECT_TRUE(mid);
  auto leaf = mr::ralloc(mid.value);
  EXPECT_TRUE(leaf);
  auto leaf2 = mr::ralloc(top.value);
  EXPECT_TRUE(leaf2);
  for (mr::rid_t r : {top.value, mid.value, leaf.value, leaf2.value}) {
    auto o = mr::alloc(300, r);
    EXPECT_TRUE(o);
    if (o) std::memset(o.value, 1, 300);
  }
  // realloc across regions keeps the contents.
  auto o = mr::alloc(128, leaf.value);
  EXPECT_TRUE(o);
  std::memset(o.value, 0x33, 128);
  auto moved = mr::realloc(o.value, 4000, top.value);
  EXPECT_TRUE(moved);
  EXPECT_NE(moved.value, o.value);
  EXPECT_EQ(static_cast<unsigned char*>(moved.value)[127], 0x33);
  auto same = mr::realloc(moved.value, 3900, top.value);
  EXPECT_TRUE(same && same.value == moved.value);
  EXPECT_STATUS(mr::free(o.value), mr::Status::invalid_pointer);  // moved away
  EXPECT_STATUS(mr::rfree(top.value), mr::Status::ok);
  for (mr::rid_t r : {mid.value, leaf.value, leaf2.value}) EXPECT_STATUS(mr::alloc(64, r).status, mr::Status::no_region);
}

// Objects sent on their own (no region): their sizes come from the scheduler
// that owns them (here the top one, level hint 0, so on deeper trees the
// leaf asks upward). The transfer mode follows MANYALLOC_REGION_TRANSFER:
// copy -> no peer is zero-copy; auto -> every peer is (one host in ctest).
static void test_objects(int me, int peer, int nw) {
  const char* mode = std::getenv("MANYALLOC_REGION_TRANSFER");
  const bool copy = mode != nullptr && std::strcmp(mode, "copy") == 0;
  for (int p = 0; p < nw; ++p) {
    if (p != me) {
      EXPECT_EQ(mr_zero_copy(p), copy ? 0 : 1) << "peer " << p;
    }
  }
  if (peer >= nw) return;
  if (me % 2 == 0) {
    auto r = mr::ralloc(mr::root_region, 0);
    EXPECT_TRUE(r);
    auto small = mr::alloc(200, r.value);
    auto big = mr::alloc(10000, r.value);
    EXPECT_TRUE(small && big);
    if (!small || !big) return;
    std::memset(small.value, 0x11, 200);
    std::memset(big.value, 0x22, 10000);
    void* objs[] = {small.value, big.value};
    EXPECT_STATUS(mr::send(peer, {}, objs), mr::Status::ok);
    void* back[2];
    auto rr = mr::recv(peer, {}, back);
    EXPECT_TRUE(rr && rr.value.objects == 2 && back[0] == small.value && back[1] == big.value);
    EXPECT_EQ(static_cast<unsigned char*>(small.value)[199], 0x12);
    EXPECT_TRUE(static_cast<unsigned char*>(big.value)[0] == 0x23 && static_cast<unsigned char*>(big.value)[9999] == 0x23);
    // A pointer inside an object is not an object: both sides see the error.
    void* bad[] = {static_cast<char*>(big.value) + 64};
    EXPECT_STATUS(mr::send(peer, {}, bad), mr::Status::invalid_pointer);
    EXPECT_STATUS(mr::rfree(r.value), mr::Status::ok);
  } else {
    void* got[2];
    auto rr = mr::recv(peer, {}, got);
    EXPECT_TRUE(rr && rr.value.objects == 2 && rr.value.regions == 0);
    if (!rr) return;
    auto* a = static_cast<unsigned char*>(got[0]);
    auto* b = static_cast<unsigned char*>(got[1]);
    EXPECT_TRUE(a[0] == 0x11 && a[199] == 0x11 && b[0] == 0x22 && b[9999] == 0x22);
    std::memset(a, 0x12, 200);
    std::memset(b, 0x23, 10000);
    EXPECT_STATUS(mr::send(peer, {}, got), mr::Status::ok);
    void* none[1];
    EXPECT_STATUS(mr::recv(peer, {}, none).status, mr::Status::invalid_pointer);
  }
}

// The accounting at the start, taken once before the first test.
class RegionMpi : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    mr::barrier();
    start_ = totals();
    mr::barrier();
  }
  static Totals start_;
};
Totals RegionMpi::start_;

TEST_F(RegionMpi, ErrorCodes) { test_errors(mr_worker_id()); }

// Pairs (0,1), (2,3), ...: the even one builds and sends, the odd one
// visits and sends back; then roles swap.
TEST_F(RegionMpi, ListsAndTreesTravelBetweenWorkers) {
  const int me = mr_worker_id(), nw = mr_num_workers();
  auto list_region = mr::ralloc();
  EXPECT_TRUE(list_region);
  auto tree_region = mr::ralloc(list_region.value);
  EXPECT_TRUE(tree_region);
  Root* mine = build(me, list_region.value, tree_region.value);
  const int peer = (me % 2 == 0) ? me + 1 : me - 1;
  for (int round = 0; round < 2; ++round) {
    const bool owner = (me % 2) == round;
    if (peer >= nw || mine == nullptr) {
      // unpaired: only the barrier
    } else if (owner) {
      const mr::rid_t regs[] = {list_region.value};
      void* objs[] = {mine};
      EXPECT_STATUS(mr::send(peer, regs, objs), mr::Status::ok);
      mr::rid_t got_regs[2];
      void* got_objs[2];
      auto rr = mr::recv(peer, got_regs, got_objs);
      EXPECT_TRUE(rr && rr.value.regions == 1 && got_regs[0] == list_region.value);
      check_returned(mine, me, peer);
    } else {
      mr::rid_t got_regs[2];
      void* got_objs[2];
      auto rr = mr::recv(peer, got_regs, got_objs);
      EXPECT_TRUE(rr && rr.value.regions == 1 && rr.value.objects == 1);
      auto* theirs = static_cast<Root*>(got_objs[0]);
      visit_and_modify(theirs, peer, got_regs[0]);
      const mr::rid_t regs[] = {got_regs[0]};
      EXPECT_STATUS(mr::send(peer, regs), mr::Status::ok);
    }
    mr::barrier();
  }
  // A failed send (bad region) reports the error on both sides, no hang.
  if (peer < nw) {
    const mr::rid_t bad[] = {0xfffffff100ull};
    if (me % 2 == 0) {
      EXPECT_STATUS(mr::send(peer, bad), mr::Status::no_region);
    } else {
      mr::rid_t got[1];
      EXPECT_STATUS(mr::recv(peer, got).status, mr::Status::no_region);
    }
  }
  mr::barrier();
  // Freeing the list region frees the tree sub-region with it.
  EXPECT_STATUS(mr::rfree(list_region.value), mr::Status::ok);
  EXPECT_STATUS(mr::alloc(64, tree_region.value).status, mr::Status::no_region);
}

TEST_F(RegionMpi, ObjectsTravelWithoutTheirRegion) {
  const int me = mr_worker_id();
  test_objects(me, (me % 2 == 0) ? me + 1 : me - 1, mr_num_workers());
  mr::barrier();
}

TEST_F(RegionMpi, LevelHintsReallocAndRecursiveFree) {
  test_hierarchy();
  mr::barrier();
}

// Accounting returns to its start; memory is conserved (S3). Grants may be
// in flight between schedulers for a moment: retry the sum.
TEST_F(RegionMpi, AccountingReturnsToItsStart) {
  mr::barrier();
  if (mr_worker_id() != 0) return;
  Totals end = totals();
  EXPECT_EQ(end.regions, start_.regions);
  EXPECT_EQ(end.objects, start_.objects);
  EXPECT_EQ(end.bytes, start_.bytes);
  EXPECT_EQ(end.used_slabs, start_.used_slabs);
  const std::uint64_t gas_slabs = (std::uint64_t{4096} << 20) / 4096;
  bool conserved = false;
  for (int i = 0; i < 50 && !conserved; ++i) {
    conserved = end.free_slabs + end.pool_slabs == gas_slabs;
    if (!conserved) usleep(20000), end = totals();
  }
  EXPECT_TRUE(conserved) << "free " << end.free_slabs << " + pool " << end.pool_slabs << " slabs of " << gas_slabs;
  std::printf("region test: %d workers, %d schedulers in %d level(s): regions %llu, objects %llu, used slabs %llu\n",
              mr_num_workers(), mr_num_schedulers(), mr_scheduler_levels(),
              static_cast<unsigned long long>(end.regions), static_cast<unsigned long long>(end.objects),
              static_cast<unsigned long long>(end.used_slabs));
}
