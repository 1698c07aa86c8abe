// Linux implementation of the OS interface (os.hpp).
#include "os.hpp"

#include <linux/mempolicy.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <ctime>

#include "size_class.hpp"

namespace manyalloc::numa {

void* LinuxOs::map(void* hint, std::size_t bytes) {
  void* p = ::mmap(hint, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                   -1, 0);
  return p == MAP_FAILED ? nullptr : p;
}

int LinuxOs::unmap(void* p, std::size_t bytes) { return ::munmap(p, bytes); }

void* LinuxOs::remap(void* p, std::size_t old_bytes, std::size_t new_bytes, void* target) {
  void* q = target == nullptr
                ? ::mremap(p, old_bytes, new_bytes, 0)
                : ::mremap(p, old_bytes, new_bytes, MREMAP_MAYMOVE | MREMAP_FIXED, target);
  return q == MAP_FAILED ? nullptr : q;
}

int LinuxOs::decommit(void* p, std::size_t bytes) { return ::madvise(p, bytes, MADV_DONTNEED); }

int LinuxOs::advise_huge(void* p, std::size_t bytes) {
  return ::madvise(p, bytes, MADV_HUGEPAGE);
}

int LinuxOs::bind(void* p, std::size_t bytes, unsigned node, bool move) {
  constexpr unsigned word_bits = 8 * sizeof(unsigned long);
  constexpr unsigned mask_bits = 1024;  // the kernel's largest MAX_NUMNODES
  if (node >= mask_bits) {
    errno = EINVAL;
    return -1;
  }
  unsigned long mask[mask_bits / word_bits] = {};
  mask[node / word_bits] = 1ul << (node % word_bits);
  // maxnode is one more than the mask's bits: the kernel drops the last one.
  const long r = ::syscall(SYS_mbind, p, bytes, MPOL_BIND, mask, mask_bits + 1,
                           move ? MPOL_MF_MOVE : 0);
  return r == 0 ? 0 : -1;
}

std::uint64_t LinuxOs::now() {
  timespec ts{};
  ::clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
  return static_cast<std::uint64_t>(ts.tv_sec) * 1000000000u + static_cast<std::uint64_t>(ts.tv_nsec);
}

constinit const OsOps linux_os_ops = make_os_ops<LinuxOs>();

namespace {
bool aligned(const void* p) { return (reinterpret_cast<std::uintptr_t>(p) & (segment_bytes - 1)) == 0; }
}  // namespace

void* map_aligned(const OsOps& os, std::size_t bytes, unsigned* unmaps) {
  unsigned dummy = 0;
  unsigned& n = unmaps != nullptr ? *unmaps : dummy;
  void* p = os.map(nullptr, bytes);
  if (p == nullptr) return nullptr;
  if (aligned(p)) return p;
  os.unmap(p, bytes);
  ++n;
  if (bytes > SIZE_MAX - segment_bytes) return nullptr;
  const std::size_t over = bytes + segment_bytes;
  auto* raw = static_cast<std::uint8_t*>(os.map(nullptr, over));
  if (raw == nullptr) return nullptr;
  const std::uintptr_t a = reinterpret_cast<std::uintptr_t>(raw);
  const std::size_t head = (segment_bytes - (a & (segment_bytes - 1))) & (segment_bytes - 1);
  if (head) os.unmap(raw, head), ++n;
  const std::size_t tail = over - head - bytes;
  if (tail) os.unmap(raw + head + bytes, tail), ++n;
  return raw + head;
}

}  // namespace manyalloc::numa
