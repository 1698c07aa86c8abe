// Scheduler<T>: the event server (SchedulerCore) driven by a ControlTransport.
// The template's members are defined here and instantiated explicitly for
// the transports the library has, so that including scheduler.hpp compiles
// no scheduler code: the in-process transport everywhere, MpiTransport where
// the library links MPI (MANYALLOC_REGION_MPI, set by region/CMakeLists.txt
// for the manyalloc_region target only).
#include "scheduler.hpp"

#include <time.h>

#include <vector>

namespace manyalloc::region::detail {

template <ControlTransport T>
void Scheduler<T>::post_outbox() {
  auto& out = core_.outbox();
  for (auto& [dest, msg] : out) t_.post(dest, std::move(msg));
  out.clear();
}

template <ControlTransport T>
void Scheduler<T>::start() {
  core_.start();
  post_outbox();
}

template <ControlTransport T>
bool Scheduler<T>::step() {
  t_.poll();
  const int src = t_.try_recv_any(in_);
  if (src < 0) return false;
  core_.handle(in_, src);
  post_outbox();
  return true;
}

template <ControlTransport T>
std::size_t Scheduler<T>::serve() {
  std::size_t n = 0;
  while (!core_.exited() && step()) ++n;
  return n;
}

template <ControlTransport T>
void Scheduler<T>::peer_failed(int rank) {
  core_.peer_failed(rank, -1);
  if constexpr (requires { t_.forget_sends_to(rank); })
    if (core_.failed(rank)) t_.forget_sends_to(rank);
  post_outbox();
}

template <ControlTransport T>
void Scheduler<T>::run(PeerWatch* watch) {
  start();
  unsigned idle = 0, busy = 0;
  auto check = [&] {
    if (watch == nullptr) return;
    const std::vector<int> gone = watch->poll();
    if (gone.empty()) return;
    // A rank that ended normally (a worker after mr_finalize, a scheduler
    // after the exit) sent its last message before it exited: take what
    // has arrived first, so that its done is seen before its exit.
    serve();
    for (int r : gone)
      if (!core_.exited()) peer_failed(r);
  };
  while (!core_.exited()) {
    if (step()) {
      idle = 0;
      if ((++busy & 4095) == 0) check();  // W3: a poll per 4096 messages
      continue;
    }
    // Polite polling: spin a little, then sleep so that oversubscribed
    // workers get the CPU; the watch is checked at every sleep.
    if (++idle > 256) {
      check();
      timespec ts{0, idle > 4096 ? 50000 : 5000};
      nanosleep(&ts, nullptr);
    }
  }
  t_.flush();
}

template class Scheduler<InProcTransport>;
#if MANYALLOC_REGION_MPI
template class Scheduler<MpiTransport>;
#endif

}  // namespace manyalloc::region::detail
