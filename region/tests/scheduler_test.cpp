// The scheduler over the in-process transport, driven message by message:
// typed messages, routing, pending events, refills, placement, shutdown.
// Deterministic: no MPI, no threads, no timing.
#include <gtest/gtest.h>

#include "inproc_cluster.hpp"
#include "manyalloc/region/region.h"

namespace manyalloc::region::detail {
namespace {

constexpr std::uint64_t gas_bytes = std::uint64_t{64} << 30;

// A cluster plus the worker side of a request: post, serve, take the reply.
class Sim {
 public:
  Sim(int levels, int fanout, int workers, SchedulerTuning t = {}) : c(levels, fanout, workers, gas_bytes, t) {}

  // Posts `req` from worker rank w (reply-to filled in) without serving it.
  template <class Req>
  void post(int w, Req req) {
    req.to = ReplyTo{static_cast<std::uint64_t>(w), ++seq};
    c.endpoint(w).post(c.topo().leaf_of(w), req.encode());
  }
  // The one reply waiting at worker rank w (failure notices, F5, are
  // counted in notices[w] and skipped).
  Message take(int w) {
    Message m;
    do {
      m.clear();
      EXPECT_EQ(c.endpoint(w).try_recv_any(m), c.topo().leaf_of(w)) << "no reply waiting at worker rank " << w;
      if (!m.empty() && m[0] == op_failed) ++notices[static_cast<std::size_t>(w)];
    } while (!m.empty() && m[0] == op_failed);
    return m;
  }
  template <class Req>
  Message call(int w, Req req) {
    post(w, std::move(req));
    c.pump();
    return take(w);
  }
  std::uint64_t ralloc(int w, std::uint64_t parent, std::int64_t hint = -1) {
    const RallocReply r = RallocReply::decode(call(w, RallocRequest{{}, parent, hint}));
    EXPECT_EQ(r.status, MR_OK);
    return r.region;
  }
  std::uint64_t received(int s, Op op) const { return c.core(s).received().by_op[op]; }

  InProcCluster c;
  std::uint64_t seq = 0;
  std::vector<int> notices = std::vector<int>(64, 0);
};

TEST(SchedulerMessages, EncodeDecodeRoundTrip) {
  const PackRequest p{{7, 9}, {1, 2, 3}, {0x1000, 0x2000}};
  const PackRequest q = PackRequest::decode(p.encode());
  EXPECT_EQ(q.to.origin, 7u);
  EXPECT_EQ(q.to.req, 9u);
  EXPECT_EQ(q.regions, p.regions);
  EXPECT_EQ(q.objects, p.objects);
  EXPECT_FALSE(q.whole_pools);
  EXPECT_TRUE(PackRequest::decode(PackRequest{{7, 9}, {1}, {}, true}.encode()).whole_pools);
  EXPECT_TRUE(PackSub::decode(PackSub{{7, 9}, 5, true}.encode()).whole_pools);
  EXPECT_FALSE(PackSub::decode(PackSub{{7, 9}, 5}.encode()).whole_pools);
  const MemGrant g{{{256, 512}, {1024, 256}}, {{5, 100}}};
  const MemGrant h = MemGrant::decode(g.encode());
  EXPECT_EQ(h.slabs, g.slabs);
  EXPECT_EQ(h.ids, g.ids);
  const RallocRequest r = RallocRequest::decode(RallocRequest{{3, 4}, 42, -1}.encode());
  EXPECT_EQ(r.parent, 42u);
  EXPECT_EQ(r.level_hint, -1);
  EXPECT_EQ(envelope(r.encode()).op, op_ralloc);
  // A grant that names more ranges than it holds decodes what is there.
  Message short_grant = g.encode();
  short_grant.resize(short_grant.size() - 2);
  EXPECT_EQ(MemGrant::decode(short_grant).ids.size(), 0u);
  EXPECT_FALSE(MemReturn::decode([] {
                 Message m = MemReturn{1, {{0, 256}}, true}.encode();
                 m.pop_back();
                 return m;
               }())
                   .complete);
}

// 2 levels, fanout 2: schedulers 0 (top), 1 and 2 (leaves); workers 3, 4 on
// leaf 1 and 5, 6 on leaf 2.
TEST(SchedulerRouting, RequestsReachTheOwnerAndRepliesComeBack) {
  Sim s(2, 2, 4);
  s.c.start();
  s.c.pump();
  const std::uint64_t r = s.ralloc(3, 0);  // no hint: on worker 3's leaf
  EXPECT_TRUE(s.c.core(1).regions().owns_region(r));
  const std::uint64_t top_before = s.c.core(0).received().total;
  // Worker 5 (leaf 2) allocates in it: leaf 2 -> top -> leaf 1, and back.
  const AllocReply a = AllocReply::decode(s.call(5, AllocRequest{{}, r, 100, 3}));
  ASSERT_EQ(a.status, MR_OK);
  ASSERT_EQ(a.addresses.size(), 3u);
  EXPECT_EQ(s.c.core(0).received().total - top_before, 2u);  // the request down, the reply up
  EXPECT_EQ(s.received(1, op_alloc), 1u);
  EXPECT_EQ(s.received(2, op_alloc), 1u);
  // The addresses route by address too: worker 6 frees one, worker 4 asks its size.
  EXPECT_EQ(StatusReply::decode(s.call(6, FreeRequest{{}, a.addresses[0]})).status, MR_OK);
  const InfoReply info = InfoReply::decode(s.call(4, InfoRequest{{}, a.addresses[1]}));
  EXPECT_EQ(info.status, MR_OK);
  EXPECT_EQ(info.region, r);
  EXPECT_EQ(info.slot_bytes, 128u);
  // Unknown keys are errors, answered by the top.
  EXPECT_EQ(StatusReply::decode(s.call(5, FreeRequest{{}, 12345})).status, MR_ERR_INVALID_POINTER);
  EXPECT_EQ(StatusReply::decode(s.call(5, AllocRequest{{}, 999999, 64, 1})).status, MR_ERR_NO_REGION);
}

// Freeing a region on the top whose child lives on a leaf: the free is a
// pending event answered only after the leaf's rfree_sub comes back.
TEST(SchedulerPending, FreeWaitsForTheRemoteChild) {
  Sim s(2, 2, 4);
  s.c.start();
  s.c.pump();
  const std::uint64_t a = s.ralloc(3, 0, 0);  // hint 0: on the top
  EXPECT_TRUE(s.c.core(0).regions().owns_region(a));
  const std::uint64_t b = s.ralloc(3, a);  // no hint: down to worker 3's leaf
  EXPECT_TRUE(s.c.core(1).regions().owns_region(b));
  EXPECT_EQ(s.received(0, op_created), 1u);  // the leaf told a's owner
  s.post(3, RfreeRequest{{}, a});
  // Deliver step by step: leaf 1 forwards, the top frees a and waits.
  ASSERT_TRUE(s.c.scheduler(1).step());
  ASSERT_TRUE(s.c.scheduler(0).step());
  EXPECT_EQ(s.c.core(0).pending(), 1u);
  EXPECT_FALSE(s.c.net().has_mail(3)) << "answered before the remote child was freed";
  EXPECT_TRUE(s.c.core(1).regions().owns_region(b));
  ASSERT_TRUE(s.c.scheduler(1).step());  // rfree_sub: b freed, sub_done up
  EXPECT_FALSE(s.c.core(1).regions().owns_region(b));
  ASSERT_TRUE(s.c.scheduler(0).step());  // sub_done: the event completes
  EXPECT_EQ(s.c.core(0).pending(), 0u);
  s.c.pump();
  EXPECT_EQ(StatusReply::decode(s.take(3)).status, MR_OK);
  EXPECT_EQ(s.received(1, op_rfree_sub), 1u);
  EXPECT_EQ(s.received(0, op_sub_done), 1u);
}

// mr_rfree's pack with private memory (whole_pools): the pools of a region
// on the top and of its child on a leaf, the free slabs too, in one sorted
// list of disjoint extents; a send's pack names the slabs in use only.
TEST(SchedulerPack, WholePoolsCrossSchedulersAndNameFreeSlabs) {
  Sim s(2, 2, 4);
  s.c.start();
  s.c.pump();
  const std::uint64_t a = s.ralloc(3, 0, 0);  // on the top
  const std::uint64_t b = s.ralloc(3, a);     // on worker 3's leaf
  ASSERT_TRUE(s.c.core(0).regions().owns_region(a));
  ASSERT_TRUE(s.c.core(1).regions().owns_region(b));
  const AllocReply oa = AllocReply::decode(s.call(3, AllocRequest{{}, a, 64, 4}));
  const AllocReply ob = AllocReply::decode(s.call(3, AllocRequest{{}, b, 64, 4}));
  ASSERT_EQ(oa.addresses.size(), 4u);
  ASSERT_EQ(ob.addresses.size(), 4u);
  auto pack = [&](bool whole) {
    const PackReply r = PackReply::decode(s.call(3, PackRequest{{}, {a}, {}, whole}));
    EXPECT_EQ(r.status, MR_OK);
    std::uint64_t bytes = 0;
    for (std::size_t i = 0; i < r.extents.size(); ++i) {
      bytes += r.extents[i].bytes;
      if (i > 0) EXPECT_LE(r.extents[i - 1].addr + r.extents[i - 1].bytes, r.extents[i].addr) << "extent " << i;
    }
    return bytes;
  };
  const std::uint64_t pool_bytes = (s.c.core(0).regions().find(a)->pool.owned_slabs() +
                                    s.c.core(1).regions().find(b)->pool.owned_slabs()) * slab_bytes;
  EXPECT_EQ(pack(false), 2 * slab_bytes) << "one slab in use in each region";
  EXPECT_EQ(pack(true), pool_bytes);
  EXPECT_GT(pool_bytes, 2 * slab_bytes);
  EXPECT_EQ(s.received(1, op_pack_sub), 2u) << "both packs reach the child's leaf";
}

// Refills: the leaf starts empty and asks at start; a large allocation
// parks until more comes; falling below the low watermark asks again.
TEST(SchedulerRefill, MemReqAndGrantKeepTheLeafSupplied) {
  SchedulerTuning t;
  t.leaf_pages_hi = 2;  // 512 slabs; low watermark 128
  Sim s(2, 1, 1, t);    // top 0, leaf 1, worker 2
  s.c.start();
  EXPECT_EQ(s.c.net().counters().by_op[op_mem_req], 1u);
  s.c.pump();
  EXPECT_EQ(s.c.core(1).regions().free_slab_count(), 512u);
  const std::uint64_t r = s.ralloc(2, 0);
  // 600 objects of 4 KiB need more than the leaf holds: parked, then served.
  s.post(2, AllocRequest{{}, r, 4096, 600});
  ASSERT_TRUE(s.c.scheduler(1).step());
  EXPECT_EQ(s.c.core(1).parked(), 1u);
  EXPECT_FALSE(s.c.net().has_mail(2));
  s.c.pump();
  const AllocReply a = AllocReply::decode(s.take(2));
  EXPECT_EQ(a.status, MR_OK);
  EXPECT_EQ(a.addresses.size(), 600u);
  EXPECT_EQ(s.c.core(1).parked(), 0u);
  EXPECT_EQ(s.received(0, op_mem_req), 2u);
  EXPECT_EQ(s.received(1, op_mem_grant), 2u);
  // Using up what came: once below the low watermark, one more refill, after
  // which the leaf is back above it.
  const std::uint64_t before = s.received(0, op_mem_req);
  for (int i = 0; i < 40 && s.received(0, op_mem_req) == before; ++i)
    ASSERT_EQ(AllocReply::decode(s.call(2, AllocRequest{{}, r, 4096, 50})).status, MR_OK);
  EXPECT_EQ(s.received(0, op_mem_req), before + 1);
  EXPECT_GE(s.c.core(1).regions().free_slab_count(), 128u);
}

// Horizontal placement (5.2): with a level hint, a region goes to the child
// with the least subtree load. Loads 6, 0, 3 (load reports every region):
// the new region must land on leaf 2, not on leaf 1 (the most loaded).
TEST(SchedulerPlacement, HintedRegionGoesToTheLeastLoadedChild) {
  SchedulerTuning t;
  t.load_threshold = 1;
  Sim s(2, 3, 3, t);  // top 0; leaves 1, 2, 3; workers 4, 5, 6 (one per leaf)
  s.c.start();
  s.c.pump();
  for (int i = 0; i < 6; ++i) s.ralloc(4, 0);  // leaf 1
  for (int i = 0; i < 3; ++i) s.ralloc(6, 0);  // leaf 3
  ASSERT_EQ(s.c.core(0).child_loads(), (std::vector<std::uint64_t>{6, 0, 3}));
  const std::uint64_t r = s.ralloc(4, 0, 1);  // hint: leaf level; worker 4 sits on leaf 1
  EXPECT_TRUE(s.c.core(2).regions().owns_region(r)) << "not placed on the least-loaded leaf";
  EXPECT_FALSE(s.c.core(1).regions().owns_region(r)) << "placed on the most-loaded leaf";
  // Without a hint the requester's own leaf wins (locality), whatever the load.
  const std::uint64_t local = s.ralloc(4, 0);
  EXPECT_TRUE(s.c.core(1).regions().owns_region(local));
}

// Shutdown (5.2): leaves report done once all their workers are, the top
// then sends exit down; nobody exits before the last worker's done.
TEST(SchedulerShutdown, ExitFollowsTheLastDone) {
  Sim s(3, 2, 4);  // top 0; mid 1, 2; leaves 3-6; workers 7-10
  s.c.start();
  s.c.pump();
  for (int w = 7; w <= 9; ++w) s.c.endpoint(w).post(s.c.topo().leaf_of(w), DoneNotice{static_cast<std::uint64_t>(w)}.encode());
  s.c.pump();
  for (int k = 0; k < s.c.topo().nsched; ++k) EXPECT_FALSE(s.c.scheduler(k).exited()) << "scheduler " << k;
  s.c.endpoint(10).post(s.c.topo().leaf_of(10), DoneNotice{10}.encode());
  s.c.pump();
  for (int k = 0; k < s.c.topo().nsched; ++k) EXPECT_TRUE(s.c.scheduler(k).exited()) << "scheduler " << k;
  EXPECT_EQ(s.c.net().counters().by_op[op_done], 4u + 6u);  // workers, then every non-top scheduler
  EXPECT_EQ(s.c.net().counters().by_op[op_exit], 6u);
  EXPECT_TRUE(s.c.net().idle());
}

// Failures (region.h, "Failures"; F1-F4 in invariants.hpp). Before them a
// request for a failed rank got no answer at all: the worker waited forever.

// F2: a worker that dies counts as done, once (also when it had said done
// before dying), so the shutdown protocol still ends.
TEST(SchedulerFailure, AFailedWorkerCountsAsDoneOnceAndShutdownEnds) {
  Sim s(2, 2, 4);  // top 0, leaves 1 and 2, workers 3-6
  s.c.start();
  s.c.pump();
  s.c.endpoint(3).post(1, DoneNotice{3}.encode());
  s.c.pump();
  s.c.fail(3);  // done, then gone: still one of leaf 1's two
  s.c.pump();
  EXPECT_FALSE(s.c.scheduler(1).exited()) << "worker 4 has neither said done nor failed";
  s.c.fail(4);
  s.c.endpoint(5).post(2, DoneNotice{5}.encode());
  s.c.endpoint(6).post(2, DoneNotice{6}.encode());
  s.c.pump();
  for (int k = 0; k < 3; ++k) EXPECT_TRUE(s.c.scheduler(k).exited()) << "scheduler " << k;
}

// F1: a request whose next hop has failed is answered with
// MR_ERR_PEER_FAILED, naming the failed rank, instead of never.
TEST(SchedulerFailure, ARequestForAFailedLeafIsAnsweredWithPeerFailed) {
  Sim s(2, 2, 4);
  s.c.start();
  s.c.pump();
  const std::uint64_t b = s.ralloc(5, 0);  // on leaf 2 (worker 5's)
  ASSERT_TRUE(s.c.core(2).regions().owns_region(b));
  s.c.fail(2);
  s.post(3, AllocRequest{{}, b, 64, 1});  // worker 3 on leaf 1: via the top
  s.c.pump();
  const Message m = s.take(3);
  ASSERT_FALSE(m.empty()) << "no answer: the request was lost with the failed leaf";
  const FailedReply r = FailedReply::decode(m);
  EXPECT_EQ(r.status, MR_ERR_PEER_FAILED);
  EXPECT_EQ(r.failed_rank, 2);
  EXPECT_EQ(s.c.core(0).bounced(), 1u);
  // F5: the top found it and told leaf 1, which told its workers, once.
  EXPECT_EQ(s.notices[3], 1);
  EXPECT_EQ(s.c.net().counters().by_op[op_failed], 3u);
  // A region on a live leaf still works.
  const std::uint64_t a = s.ralloc(3, 0);
  EXPECT_EQ(AllocReply::decode(s.call(3, AllocRequest{{}, a, 64, 1})).status, MR_OK);
  // Placement skips the failed leaf, even when a load report of it, sent
  // before it failed, arrives after: hinted regions go to leaf 1 now.
  s.c.endpoint(2).post(0, LoadReport{0}.encode());
  s.c.pump();
  for (int i = 0; i < 4; ++i) EXPECT_TRUE(s.c.core(1).regions().owns_region(s.ralloc(3, 0, 1)));
}

// F3: a leaf whose parent failed answers its parked requests (no refill
// will come) and exits once its own workers are done.
TEST(SchedulerFailure, ALeafWhoseParentFailedFailsParkedRequestsAndStillShutsDown) {
  SchedulerTuning t;
  t.leaf_pages_hi = 2;
  Sim s(2, 1, 1, t);  // top 0, leaf 1, worker 2
  s.c.start();
  s.c.pump();
  const std::uint64_t r = s.ralloc(2, 0);
  s.post(2, AllocRequest{{}, r, 4096, 600});  // more than the leaf holds: parked
  ASSERT_TRUE(s.c.scheduler(1).step());
  ASSERT_EQ(s.c.core(1).parked(), 1u);
  s.c.fail(0);
  EXPECT_EQ(s.c.core(1).parked(), 0u);
  s.c.pump();
  EXPECT_EQ(StatusReply::decode(s.take(2)).status, MR_ERR_PEER_FAILED);
  // A request that would park after the failure is answered at once too.
  s.post(2, AllocRequest{{}, r, 4096, 600});
  s.c.pump();
  const FailedReply late = FailedReply::decode(s.take(2));
  EXPECT_EQ(late.status, MR_ERR_PEER_FAILED);
  EXPECT_EQ(late.failed_rank, 0);
  EXPECT_EQ(s.c.core(1).parked(), 0u);
  s.c.endpoint(2).post(1, DoneNotice{2}.encode());
  s.c.pump();
  EXPECT_TRUE(s.c.scheduler(1).exited());
}

// F4: an event waiting for a sub-answer from a scheduler that then fails
// ends with MR_ERR_PEER_FAILED.
TEST(SchedulerFailure, APendingFreeWaitingOnAFailedLeafEnds) {
  Sim s(2, 2, 4);
  s.c.start();
  s.c.pump();
  const std::uint64_t a = s.ralloc(5, 0, 0);  // on the top
  const std::uint64_t b = s.ralloc(3, a);     // its child on leaf 1
  ASSERT_TRUE(s.c.core(1).regions().owns_region(b));
  s.post(5, RfreeRequest{{}, a});
  ASSERT_TRUE(s.c.scheduler(2).step());  // leaf 2 forwards
  ASSERT_TRUE(s.c.scheduler(0).step());  // the top frees a, waits for leaf 1
  ASSERT_EQ(s.c.core(0).pending(), 1u);
  s.c.fail(1);
  EXPECT_EQ(s.c.core(0).pending(), 0u);
  s.c.pump();
  const Message m = s.take(5);
  ASSERT_FALSE(m.empty()) << "the free waits forever for the failed leaf";
  EXPECT_EQ(StatusReply::decode(m).status, MR_ERR_PEER_FAILED);
}

// The same requests in the same order give the same messages, scheduler by
// scheduler (what the simulator's exact-match check relies on).
TEST(SchedulerDeterminism, SameRunSameCounts) {
  auto run = [] {
    Sim s(2, 2, 4);
    s.c.start();
    s.c.pump();
    for (int w = 3; w <= 6; ++w) {
      const std::uint64_t r = s.ralloc(w, 0);
      const AllocReply a = AllocReply::decode(s.call(w, AllocRequest{{}, r, 64, 10}));
      s.call(9 - w, PackRequest{{}, {r}, {a.addresses[0]}});
      s.call(w, RfreeRequest{{}, r});
    }
    std::vector<std::uint64_t> counts;
    for (int k = 0; k < 3; ++k)
      for (std::uint64_t n : s.c.core(k).received().by_op) counts.push_back(n);
    return counts;
  };
  EXPECT_EQ(run(), run());
}

}  // namespace
}  // namespace manyalloc::region::detail
