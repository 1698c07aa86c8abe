// PeerWatch (peer_watch.hpp).
#include "peer_watch.hpp"

#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <string_view>
#include <utility>

namespace manyalloc::region::detail {

namespace {

// FNV-1a, enough to tell hosts apart (the key is compared, never inverted).
std::uint64_t mix(std::uint64_t h, std::string_view s) {
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
  return (h ^ 0xff) * 1099511628211ull;
}

int open_pidfd(std::uint64_t pid) {
#ifdef SYS_pidfd_open
  return static_cast<int>(syscall(SYS_pidfd_open, static_cast<pid_t>(pid), 0));
#else
  (void)pid;
  errno = ENOSYS;
  return -1;
#endif
}

// Without a pidfd: gone, or a zombie its parent has not reaped yet.
bool process_gone(std::uint64_t pid) {
  if (kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH) return true;
  char path[64];
  std::snprintf(path, sizeof path, "/proc/%llu/stat", static_cast<unsigned long long>(pid));
  std::ifstream f(path);
  std::string stat;
  if (!std::getline(f, stat)) return true;
  const std::size_t close = stat.rfind(')');
  return close != std::string::npos && close + 2 < stat.size() && (stat[close + 2] == 'Z' || stat[close + 2] == 'X');
}

std::string exited(std::uint64_t pid) { return "process " + std::to_string(pid) + " on this host has exited"; }

}  // namespace

PeerIdentity own_identity() {
  std::uint64_t h = 1469598103934665603ull;
  char host[256] = "";
  gethostname(host, sizeof host - 1);
  h = mix(h, host);
  std::ifstream boot("/proc/sys/kernel/random/boot_id");
  std::string id;
  std::getline(boot, id);
  h = mix(h, id);
  struct stat ns {};
  if (stat("/proc/self/ns/pid", &ns) == 0) h = mix(h, std::to_string(ns.st_ino) + ":" + std::to_string(ns.st_dev));
  return PeerIdentity{h, static_cast<std::uint64_t>(getpid())};
}

PeerWatch::~PeerWatch() { close_all(); }

PeerWatch::PeerWatch(PeerWatch&& o) noexcept { *this = std::move(o); }

PeerWatch& PeerWatch::operator=(PeerWatch&& o) noexcept {
  if (this != &o) {
    close_all();
    peers_ = std::move(o.peers_);
    unreported_ = std::move(o.unreported_);
    last_check_ns_ = o.last_check_ns_;
    broken_ = std::move(o.broken_);
    watched_ = std::exchange(o.watched_, 0);
    failures_ = std::exchange(o.failures_, 0);
    o.peers_.clear();
  }
  return *this;
}

void PeerWatch::close_all() {
  for (Peer& p : peers_)
    if (p.fd >= 0) close(p.fd), p.fd = -1;
  peers_.clear();
  unreported_.clear();
  broken_.clear();
  watched_ = failures_ = 0;
}

void PeerWatch::watch(const std::vector<PeerIdentity>& all, int self, const std::vector<int>& ranks) {
  close_all();
  peers_.resize(all.size());
  const std::uint64_t here = all[static_cast<std::size_t>(self)].host_key;
  for (int r : ranks) {
    if (r < 0 || static_cast<std::size_t>(r) >= all.size() || r == self) continue;
    Peer& p = peers_[static_cast<std::size_t>(r)];
    if (p.fd >= 0 || p.by_kill || all[static_cast<std::size_t>(r)].host_key != here) continue;
    p.pid = all[static_cast<std::size_t>(r)].pid;
    p.fd = open_pidfd(p.pid);
    if (p.fd < 0) {
      // ESRCH: it is gone already (W1 needs it alive now: mr_init's
      // collective just ran). Other errors (ENOSYS, EPERM): watch by kill.
      if (errno == ESRCH) {
        note_failed(r, "process " + std::to_string(p.pid) + " on this host was gone at mr_init");
        continue;
      }
      p.by_kill = true;
    }
    ++watched_;
  }
}

std::vector<int> PeerWatch::poll() {
  const auto now = static_cast<std::uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch()).count());
  if (watched_ != 0 && now - last_check_ns_ >= check_interval_ns) {
    last_check_ns_ = now;
    std::vector<pollfd> fds;
    std::vector<int> who;
    for (std::size_t r = 0; r < peers_.size(); ++r) {
      Peer& p = peers_[r];
      if (p.failed) continue;
      if (p.fd >= 0) {
        fds.push_back(pollfd{p.fd, POLLIN, 0});
        who.push_back(static_cast<int>(r));
      } else if (p.by_kill && process_gone(p.pid)) {
        note_failed(static_cast<int>(r), exited(p.pid));
      }
    }
    if (!fds.empty() && ::poll(fds.data(), fds.size(), 0) > 0)
      for (std::size_t i = 0; i < fds.size(); ++i)
        if ((fds[i].revents & (POLLIN | POLLHUP | POLLERR)) != 0)
          note_failed(who[i], exited(peers_[static_cast<std::size_t>(who[i])].pid));
  }
  return std::exchange(unreported_, {});
}

void PeerWatch::note_broken(const std::string& why) {
  if (broken_.empty()) broken_ = why;
}

bool PeerWatch::note_failed(int rank, const std::string& why) {
  if (rank < 0 || static_cast<std::size_t>(rank) >= peers_.size()) return false;
  Peer& p = peers_[static_cast<std::size_t>(rank)];
  if (p.failed) return false;
  p.failed = true;
  p.why = why;
  ++failures_;
  unreported_.push_back(rank);
  if (p.fd >= 0) close(p.fd), p.fd = -1, --watched_;
  else if (p.by_kill) --watched_;
  return true;
}

const std::string& PeerWatch::why(int rank) const {
  static const std::string none;
  if (rank < 0 || static_cast<std::size_t>(rank) >= peers_.size()) return none;
  return peers_[static_cast<std::size_t>(rank)].why;
}

}  // namespace manyalloc::region::detail
