// mr_init's settings and the errors that explain themselves (region/README.md,
// "Options and errors"). Run with 2 ranks (one scheduler, one worker):
//   - every call before mr_init returns MR_ERR_NOT_INITIALIZED;
//   - a malformed or out-of-range value of any MANYALLOC_REGION_* variable,
//     or of an mr_config field, makes mr_init fail on every rank before any
//     collective with MR_ERR_INIT, and mr_last_error() names the option, the
//     value and what is allowed; calls after a failed mr_init return
//     MR_ERR_NOT_INITIALIZED and say that mr_init failed;
//   - a layout that does not fit the rank count: MR_ERR_INIT and the number
//     of ranks it needs;
//   - the names of choices are case-insensitive: the last, valid call must
//     succeed, which shows that the earlier failures came from the values;
//   - a second mr_init, and every call after mr_finalize, fail with an init
//     error and say why.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <initializer_list>

#include "manyalloc/region/region.h"

namespace {

int failures = 0;

void fail(const char* what, const char* detail) {
  ++failures;
  std::fprintf(stderr, "%s: %s\n", what, detail);
}

// mr_last_error() contains every one of `words` (nullptr-terminated).
void expect_reason(const char* what, const char* const* words) {
  const char* reason = mr_last_error();
  for (const char* const* w = words; *w != nullptr; ++w)
    if (reason == nullptr || std::strstr(reason, *w) == nullptr) {
      char buf[768];
      std::snprintf(buf, sizeof buf, "mr_last_error() \"%s\" lacks \"%s\"", reason ? reason : "(null)", *w);
      fail(what, buf);
    }
}

void expect_status(const char* what, mr_status got, mr_status want) {
  if (got != want) {
    char buf[128];
    std::snprintf(buf, sizeof buf, "returned %d, expected %d", static_cast<int>(got), static_cast<int>(want));
    fail(what, buf);
  }
}

// mr_init with `cfg` must fail with MR_ERR_INIT and explain itself with `words`.
template <class... W>
void expect_init_error(const char* what, const mr_config* cfg, int* argc, char*** argv, W... words) {
  expect_status(what, mr_init(argc, argv, cfg), MR_ERR_INIT);
  const char* list[] = {words..., nullptr};
  expect_reason(what, list);
}

// One variable set to a bad value (the others valid) must fail mr_init.
void expect_env_error(const char* var, const char* value, int* argc, char*** argv) {
  const char* old = std::getenv(var);
  char saved[64] = "";
  if (old != nullptr) std::snprintf(saved, sizeof saved, "%s", old);
  setenv(var, value, 1);
  char what[160];
  std::snprintf(what, sizeof what, "%s=\"%s\"", var, value);
  expect_init_error(what, nullptr, argc, argv, var, value, "allowed");
  if (old != nullptr)
    setenv(var, saved, 1);
  else
    unsetenv(var);
}

// Every call that needs the library initialised returns
// MR_ERR_NOT_INITIALIZED and says `why` (never MR_ERR_NOT_WORKER).
void expect_not_initialized(const char* when, const char* why) {
  char what[96];
  void* p = nullptr;
  mr_rid_t r = 0;
  mr_sched_stats st;
  const struct {
    const char* call;
    mr_status got;
  } calls[] = {
      {"mr_ralloc", mr_ralloc(MR_ROOT_REGION, MR_NO_HINT, &r)},
      {"mr_rfree", mr_rfree(5)},
      {"mr_alloc", mr_alloc(64, MR_ROOT_REGION, &p)},
      {"mr_balloc", mr_balloc(64, MR_ROOT_REGION, 1, &p)},
      {"mr_free", mr_free(&r)},
      {"mr_realloc", mr_realloc(&r, 64, MR_ROOT_REGION, &p)},
      {"mr_send", mr_send(1, &r, 1, nullptr, 0)},
      {"mr_recv", mr_recv(1, &r, 1, nullptr, nullptr, 0, nullptr)},
      {"mr_barrier", mr_barrier()},
      {"mr_sched_stats_get", mr_sched_stats_get(0, &st)},
  };
  for (const auto& c : calls) {
    std::snprintf(what, sizeof what, "%s %s", c.call, when);
    expect_status(what, c.got, MR_ERR_NOT_INITIALIZED);
  }
  // The reason is that of the last call (mr_sched_stats_get).
  std::snprintf(what, sizeof what, "mr_sched_stats_get %s", when);
  const char* words[] = {"mr_sched_stats_get", why, nullptr};
  expect_reason(what, words);
  if (mr_is_worker() != 0 || mr_worker_id() != -1 || mr_num_workers() != 0) fail(when, "queries");
}

}  // namespace

int main(int argc, char** argv) {
  alarm(30);  // a value taken for valid by mistake starts the scheduler loop
  expect_not_initialized("before mr_init", "before mr_init");
  expect_status("mr_finalize before mr_init", mr_finalize(), MR_ERR_NOT_INITIALIZED);
  expect_not_initialized("after mr_finalize before mr_init", "before mr_init");
  if (std::strcmp(mr_strerror(MR_ERR_NOT_INITIALIZED), "unknown status") == 0) fail("mr_strerror", "new code");

  setenv("MANYALLOC_REGION_LEVELS", "1", 1);
  setenv("MANYALLOC_REGION_FANOUT", "4", 1);
  setenv("MANYALLOC_REGION_TRANSFER", "copy", 1);
  setenv("MANYALLOC_REGION_PREFAULT", "off", 1);

  // Integers: decimal digits only, within range, no suffix or sign.
  for (const char* v : {"abc", "0", "9", " 2", "2 ", "+1", "-1", "1.0", "0x2", "99999999999999999999999"})
    expect_env_error("MANYALLOC_REGION_LEVELS", v, &argc, &argv);
  for (const char* v : {"four", "0", "-2", "4k", "2097152"}) expect_env_error("MANYALLOC_REGION_FANOUT", v, &argc, &argv);
  for (const char* v : {"4G", "1e3", "4096M", "0", "-4096", "0x1000", "33554433", "18446744073709551616"})
    expect_env_error("MANYALLOC_REGION_GAS_MIB", v, &argc, &argv);
  for (const char* v : {"zero-copy", "on", "copy1"}) expect_env_error("MANYALLOC_REGION_TRANSFER", v, &argc, &argv);
  for (const char* v : {"sometimes", "1", "yes"}) expect_env_error("MANYALLOC_REGION_PREFAULT", v, &argc, &argv);

  // After a failed mr_init the library is not initialised, and says why.
  expect_not_initialized("after a failed mr_init", "mr_init failed");

  // Fields of mr_config.
  mr_config bad{};
  bad.levels = -1;
  expect_init_error("config.levels=-1", &bad, &argc, &argv, "mr_config.levels", "-1", "allowed");
  bad = mr_config{};
  bad.levels = 9;
  expect_init_error("config.levels=9", &bad, &argc, &argv, "mr_config.levels", "9", "allowed");
  bad = mr_config{};
  bad.fanout = -2;
  expect_init_error("config.fanout=-2", &bad, &argc, &argv, "mr_config.fanout", "-2", "allowed");
  bad = mr_config{};
  bad.gas_bytes = 1000;
  expect_init_error("config.gas_bytes=1000", &bad, &argc, &argv, "mr_config.gas_bytes", "1000", "allowed");
  bad = mr_config{};
  bad.load_threshold = -1;
  expect_init_error("config.load_threshold=-1", &bad, &argc, &argv, "mr_config.load_threshold", "-1", "allowed");
  bad = mr_config{};
  bad.transfer = 7;
  expect_init_error("config.transfer=7", &bad, &argc, &argv, "mr_config.transfer", "7", "allowed");
  bad = mr_config{};
  bad.prefault = -1;
  expect_init_error("config.prefault=-1", &bad, &argc, &argv, "mr_config.prefault", "-1", "allowed");

  // Layouts that need more ranks than the job has (2): how many they need.
  setenv("MANYALLOC_REGION_LEVELS", "2", 1);
  setenv("MANYALLOC_REGION_FANOUT", "2", 1);
  expect_init_error("2 levels, fanout 2", nullptr, &argc, &argv, "3 schedulers", "at least 4 ranks", "has 2",
                    "MANYALLOC_REGION_LEVELS=2", "MANYALLOC_REGION_FANOUT=2");
  mr_config big{};
  big.levels = 3;
  expect_init_error("config 3 levels, fanout 2", &big, &argc, &argv, "7 schedulers", "at least 8 ranks", "has 2",
                    "mr_config.levels=3");

  // Valid, in capitals: the scheduler returns from mr_init when the worker
  // finalizes.
  setenv("MANYALLOC_REGION_LEVELS", "1", 1);
  setenv("MANYALLOC_REGION_FANOUT", "1", 1);
  setenv("MANYALLOC_REGION_GAS_MIB", "4096", 1);
  setenv("MANYALLOC_REGION_TRANSFER", "COPY", 1);
  setenv("MANYALLOC_REGION_PREFAULT", "Off", 1);
  expect_status("TRANSFER=COPY PREFAULT=Off", mr_init(&argc, &argv, nullptr), MR_OK);
  if (mr_is_worker()) {
    expect_init_error("second mr_init", nullptr, &argc, &argv, "already");
    void* p = nullptr;
    expect_status("mr_alloc after init", mr_alloc(64, MR_ROOT_REGION, &p), MR_OK);
    expect_status("mr_free after init", mr_free(p), MR_OK);
  } else {
    // Scheduler ranks: the worker calls are not theirs.
    void* p = nullptr;
    expect_status("mr_alloc on a scheduler", mr_alloc(64, MR_ROOT_REGION, &p), MR_ERR_NOT_WORKER);
    const char* words[] = {"mr_alloc", "scheduler", nullptr};
    expect_reason("mr_alloc on a scheduler", words);
  }
  expect_status("mr_finalize", mr_finalize(), MR_OK);

  // After mr_finalize (which finalised MPI, as mr_init had initialised it).
  expect_not_initialized("after mr_finalize", "after mr_finalize");
  expect_status("mr_finalize twice", mr_finalize(), MR_ERR_NOT_INITIALIZED);
  expect_init_error("mr_init after mr_finalize", nullptr, &argc, &argv, "after mr_finalize");

  if (failures == 0) std::printf("init options: ok\n");
  return failures == 0 ? 0 : 1;
}
