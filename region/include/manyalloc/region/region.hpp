// manyalloc region, C++ API: thin, typed wrappers over region.h.
#pragma once

#include <cstddef>
#include <new>
#include <span>
#include <utility>
#include <vector>

#include "manyalloc/region/region.h"

namespace manyalloc::region {

using rid_t = mr_rid_t;
inline constexpr rid_t root_region = MR_ROOT_REGION;
inline constexpr int no_hint = MR_NO_HINT;
inline constexpr int any_worker = MR_ANY_WORKER;

enum class Status : int {
  ok = MR_OK,
  no_region = MR_ERR_NO_REGION,
  invalid_pointer = MR_ERR_INVALID_POINTER,
  no_memory = MR_ERR_NO_MEMORY,
  bad_argument = MR_ERR_BAD_ARGUMENT,
  not_worker = MR_ERR_NOT_WORKER,
  init = MR_ERR_INIT,
  truncated = MR_ERR_TRUNCATED,
  not_initialized = MR_ERR_NOT_INITIALIZED,
  thread = MR_ERR_THREAD,
  bad_request = MR_ERR_BAD_REQUEST,
};

inline const char* to_string(Status s) { return mr_strerror(static_cast<mr_status>(s)); }
// Why the last failing call of this thread failed (mr_last_error).
inline const char* last_error() { return mr_last_error(); }

// A value or an error status.
template <class T>
struct Result {
  T value{};
  Status status = Status::ok;
  explicit operator bool() const { return status == Status::ok; }
};

// RAII session: init in the constructor, finalize in the destructor.
class Session {
 public:
  Session(int* argc, char*** argv, const mr_config* cfg = nullptr)
      : status_(static_cast<Status>(mr_init(argc, argv, cfg))) {}
  ~Session() { mr_finalize(); }
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;
  Status status() const { return status_; }
  bool is_worker() const { return mr_is_worker() != 0; }
  int worker_id() const { return mr_worker_id(); }
  int num_workers() const { return mr_num_workers(); }

 private:
  Status status_;
};

inline Result<rid_t> ralloc(rid_t parent = root_region, int level_hint = no_hint) {
  Result<rid_t> r;
  r.status = static_cast<Status>(mr_ralloc(parent, level_hint, &r.value));
  return r;
}
inline Status rfree(rid_t region) { return static_cast<Status>(mr_rfree(region)); }

inline Result<void*> alloc(std::size_t size, rid_t region = root_region) {
  Result<void*> r;
  r.status = static_cast<Status>(mr_alloc(size, region, &r.value));
  return r;
}
// Allocates a T in `region` and constructs it from args (nullptr on error).
template <class T, class... Args>
T* make(rid_t region, Args&&... args) {
  auto r = alloc(sizeof(T), region);
  return r ? ::new (r.value) T(std::forward<Args>(args)...) : nullptr;
}
inline Status free(void* p) { return static_cast<Status>(mr_free(p)); }
inline Result<void*> realloc(void* p, std::size_t size, rid_t region) {
  Result<void*> r;
  r.status = static_cast<Status>(mr_realloc(p, size, region, &r.value));
  return r;
}
inline Status balloc(std::size_t size, rid_t region, std::span<void*> out) {
  return static_cast<Status>(mr_balloc(size, region, static_cast<int>(out.size()), out.data()));
}

inline Status send(int peer, std::span<const rid_t> regions, std::span<void* const> objects = {}) {
  return static_cast<Status>(mr_send(peer, regions.data(), static_cast<int>(regions.size()), objects.data(),
                                     static_cast<int>(objects.size())));
}
// Receives into the given buffers; the spans' sizes are the maxima.
struct Received {
  int regions = 0;
  int objects = 0;
};
inline Result<Received> recv(int peer, std::span<rid_t> regions = {}, std::span<void*> objects = {}) {
  Result<Received> r;
  r.status = static_cast<Status>(mr_recv(peer, regions.data(), static_cast<int>(regions.size()), &r.value.regions,
                                         objects.data(), static_cast<int>(objects.size()), &r.value.objects));
  return r;
}
// Receives from any worker; `source` says which.
struct ReceivedFrom {
  Received counts;
  int source = -1;
};
inline Result<ReceivedFrom> recv_any(std::span<rid_t> regions = {}, std::span<void*> objects = {}) {
  Result<ReceivedFrom> r;
  r.status = static_cast<Status>(mr_recv_any(&r.value.source, regions.data(), static_cast<int>(regions.size()),
                                             &r.value.counts.regions, objects.data(),
                                             static_cast<int>(objects.size()), &r.value.counts.objects));
  return r;
}

// A pending mr_isend or mr_irecv. The library writes a receive's counts
// and source into the Request when it completes, so a Request stays where
// it is (no copy, no move) until wait() or a test() that finds it done.
class Request {
 public:
  Request() = default;
  Request(const Request&) = delete;
  Request& operator=(const Request&) = delete;
  bool pending() const { return handle_ != MR_REQUEST_NULL; }
  // Counts and sender of a completed receive.
  const ReceivedFrom& received() const { return got_; }

 private:
  friend Status isend(Request&, int, std::span<const rid_t>, std::span<void* const>);
  friend Status irecv(Request&, int, std::span<rid_t>, std::span<void*>);
  friend Status wait(Request&);
  friend Result<bool> test(Request&);
  mr_request_t handle_ = MR_REQUEST_NULL;
  ReceivedFrom got_;
};

inline Status isend(Request& request, int peer, std::span<const rid_t> regions,
                    std::span<void* const> objects = {}) {
  return static_cast<Status>(mr_isend(peer, regions.data(), static_cast<int>(regions.size()), objects.data(),
                                      static_cast<int>(objects.size()), &request.handle_));
}
// The spans must stay valid until the request completes.
inline Status irecv(Request& request, int peer, std::span<rid_t> regions = {}, std::span<void*> objects = {}) {
  return static_cast<Status>(mr_irecv(peer, regions.data(), static_cast<int>(regions.size()),
                                      &request.got_.counts.regions, objects.data(),
                                      static_cast<int>(objects.size()), &request.got_.counts.objects,
                                      &request.got_.source, &request.handle_));
}
inline Status wait(Request& request) { return static_cast<Status>(mr_wait(&request.handle_)); }
// value: whether the request completed (and was retired); status: its result then.
inline Result<bool> test(Request& request) {
  int done = 0;
  Result<bool> r;
  r.status = static_cast<Status>(mr_test(&request.handle_, &done));
  r.value = done != 0;
  return r;
}

inline Status barrier() { return static_cast<Status>(mr_barrier()); }

}  // namespace manyalloc::region
