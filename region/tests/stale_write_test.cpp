// Checked builds: memory of a freed region is poisoned by its scheduler and
// checked when it goes to a region again (region/README.md, "Stale region
// ids and memory"), so a write through a stale pointer is reported instead
// of silently corrupting the next region's objects. Run with 2 ranks (one
// scheduler, one worker), zero copy (the scheduler shares the worker's GAS
// object), a 16 MiB GAS: the worker allocates an object in a region, frees
// the region, writes through the stale pointer, and then allocates 256 KiB
// objects in a new region until the memory is used up. The scheduler must
// abort the job with its report when the written slab comes back; the test
// passes on that report (PASS_REGULAR_EXPRESSION). Reaching the end of the
// memory means the stale write went unnoticed: exit 1 without the report.
#include <unistd.h>

#include <cstdint>
#include <cstdio>

#include "manyalloc/region/region.h"

int main(int argc, char** argv) {
  alarm(60);
  if (mr_init(&argc, &argv, nullptr) != MR_OK) {
    std::fprintf(stderr, "mr_init: %s\n", mr_last_error());
    mr_finalize();
    return 1;
  }
  int rc = 0;
  if (mr_is_worker()) {
    mr_rid_t r = 0, r2 = 0;
    void* p = nullptr;
    if (mr_ralloc(MR_ROOT_REGION, MR_NO_HINT, &r) != MR_OK || mr_alloc(64, r, &p) != MR_OK ||
        mr_rfree(r) != MR_OK || mr_ralloc(MR_ROOT_REGION, MR_NO_HINT, &r2) != MR_OK) {
      std::fprintf(stderr, "setup failed: %s\n", mr_last_error());
      rc = 1;
    } else {
      *static_cast<volatile std::uint64_t*>(p) = 0x5741'5645'5741'5645ull;  // the stale write
      int n = 0;
      void* q = nullptr;
      while (mr_alloc(256 * 1024, r2, &q) == MR_OK) ++n;
      std::fprintf(stderr, "stale write NOT detected: %d objects of 256 KiB allocated after it (%s)\n", n,
                   mr_last_error());
      rc = 1;
    }
  }
  mr_finalize();
  return rc;
}
