// mr_init's choice settings (transfer, prefault; region.h): a value that is
// neither of the two names, in the environment or in the explicit field,
// makes mr_init fail on every rank before any collective, with
// MR_ERR_INIT; the names are case-insensitive. Run with 2 ranks (one
// scheduler, one worker): the last, valid call must succeed, which shows that
// the earlier failures came from the values and not from the layout.
#include <cstdio>
#include <cstdlib>

#include "manyalloc/region/region.h"

namespace {

int failures = 0;

void expect_init(const char* what, mr_status want, const mr_config* cfg, int* argc, char*** argv) {
  const mr_status got = mr_init(argc, argv, cfg);
  if (got != want) {
    ++failures;
    std::fprintf(stderr, "%s: mr_init returned %d, expected %d\n", what, static_cast<int>(got),
                 static_cast<int>(want));
  }
}

}  // namespace

int main(int argc, char** argv) {
  setenv("MANYALLOC_REGION_LEVELS", "1", 1);
  setenv("MANYALLOC_REGION_TRANSFER", "zero-copy", 1);
  expect_init("TRANSFER=zero-copy", MR_ERR_INIT, nullptr, &argc, &argv);
  setenv("MANYALLOC_REGION_TRANSFER", "copy", 1);
  setenv("MANYALLOC_REGION_PREFAULT", "sometimes", 1);
  expect_init("PREFAULT=sometimes", MR_ERR_INIT, nullptr, &argc, &argv);
  setenv("MANYALLOC_REGION_PREFAULT", "off", 1);
  mr_config bad{};
  bad.transfer = 7;
  expect_init("config.transfer=7", MR_ERR_INIT, &bad, &argc, &argv);
  bad.transfer = MR_TRANSFER_COPY;
  bad.prefault = -1;
  expect_init("config.prefault=-1", MR_ERR_INIT, &bad, &argc, &argv);
  // Valid, in capitals: the scheduler returns from mr_init when the worker
  // finalizes.
  setenv("MANYALLOC_REGION_TRANSFER", "COPY", 1);
  setenv("MANYALLOC_REGION_PREFAULT", "Off", 1);
  expect_init("TRANSFER=COPY PREFAULT=Off", MR_OK, nullptr, &argc, &argv);
  if (mr_finalize() != MR_OK) ++failures;
  if (failures == 0) std::printf("init options: ok\n");
  return failures == 0 ? 0 : 1;
}
