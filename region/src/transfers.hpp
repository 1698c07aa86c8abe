// Worker-to-worker transfers: the state of a worker's non-blocking sends and
// receives and of its progress loop (transfers.cpp; the rule it keeps is X1
// in invariants.hpp). The library is funnelled, so one thread touches this.
#pragma once

#include <cstdint>
#include <list>
#include <map>
#include <vector>

#include "local_regions.hpp"
#include "manyalloc/region/region.h"

namespace manyalloc::region::detail {

struct TransferState {
  // A transfer this worker posted (header and bytes in flight).
  struct Out {
    std::uint64_t op = 0;         // transport operation
    std::vector<Extent> extents;  // what it reads (copying sends only)
    std::uint64_t req = 0;        // the mr_isend request, 0 for mr_send
    int peer = -1;                // the receiving worker (index)
  };
  // A transfer whose header arrived: its bytes are being received into the
  // GAS (copy) or are already there (zero copy).
  struct In {
    int peer = -1;
    std::vector<std::uint64_t> hdr;
    std::vector<Extent> extents;
    std::uint64_t op = 0;  // transport operation, 0 when no bytes follow
    bool done = false;     // the bytes are in
    bool claimed = false;  // a receive request took it
    bool in_gas = true, mode_ok = true, zero_copy = false;
  };
  // An mr_isend / mr_irecv request.
  struct Req {
    bool send = false;
    bool done = false;
    mr_status result = MR_OK;
    int source = MR_ANY_WORKER;  // receives: the peer asked for
    mr_rid_t* regions = nullptr;
    int max_regions = 0;
    int* num_regions = nullptr;
    void** objects = nullptr;
    int max_objects = 0;
    int* num_objects = nullptr;
    int* source_out = nullptr;
    std::list<In>::iterator in{};
    bool matched = false;
  };
  std::list<Out> outs;
  std::list<In> ins;             // in arrival order
  std::map<std::uint64_t, Req> reqs;  // in posting order
  std::uint64_t next_req = 0;
  std::vector<std::uint64_t> sent_to;     // transfers posted to each worker
  std::vector<std::uint64_t> taken_from;  // headers taken from each worker
};

// Finalize's drain (transfers.cpp): every transfer posted by any worker is
// taken and its bytes moved; those no mr_recv asked for are dropped.
// MR_ERR_PEER_FAILED (reason recorded) when a failed worker keeps it from
// ending (region.h, "Failures"): then the rest is dropped as well.
mr_status drain_transfers();

}  // namespace manyalloc::region::detail
