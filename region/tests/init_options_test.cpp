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
// The library is initialised once per process, so the tests run in the
// order written on both ranks and each starts where the last one ended
// (main: mpi_gtest_main.cpp, the form without a session: MPI is initialised
// there, so mr_init finds it initialised and mr_finalize leaves it).
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <string>

#include "manyalloc/region/region.h"
#include "mpi_gtest.hpp"

// A value taken for valid by mistake starts the scheduler loop.
const unsigned region_test::alarm_seconds = 30;

namespace {

// mr_last_error() contains every one of `words`.
void expect_reason(const char* what, std::initializer_list<const char*> words) {
  const char* reason = mr_last_error();
  for (const char* w : words)
    EXPECT_TRUE(reason != nullptr && std::strstr(reason, w) != nullptr)
        << what << ": mr_last_error() \"" << (reason != nullptr ? reason : "(null)") << "\" lacks \"" << w << "\"";
}

// mr_init with `cfg` must fail with MR_ERR_INIT and explain itself with `words`.
void expect_init_error(const char* what, const mr_config* cfg, std::initializer_list<const char*> words) {
  int argc = 0;
  char** argv = nullptr;
  EXPECT_STATUS(mr_init(&argc, &argv, cfg), MR_ERR_INIT) << " (" << what << ")";
  expect_reason(what, words);
}

// One variable set to a bad value (the others valid) must fail mr_init.
void expect_env_error(const char* var, const char* value) {
  const char* old = std::getenv(var);
  const std::string saved = old != nullptr ? old : "";
  setenv(var, value, 1);
  const std::string what = std::string(var) + "=\"" + value + "\"";
  expect_init_error(what.c_str(), nullptr, {var, value, "allowed"});
  if (old != nullptr)
    setenv(var, saved.c_str(), 1);
  else
    unsetenv(var);
}

// Every call that needs the library initialised returns
// MR_ERR_NOT_INITIALIZED and says `why` (never MR_ERR_NOT_WORKER).
void expect_not_initialized(const char* when, const char* why) {
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
  for (const auto& c : calls) EXPECT_STATUS(c.got, MR_ERR_NOT_INITIALIZED) << " (" << c.call << " " << when << ")";
  // The reason is that of the last call (mr_sched_stats_get).
  const std::string what = std::string("mr_sched_stats_get ") + when;
  expect_reason(what.c_str(), {"mr_sched_stats_get", why});
  EXPECT_EQ(mr_is_worker(), 0) << when;
  EXPECT_EQ(mr_worker_id(), -1) << when;
  EXPECT_EQ(mr_num_workers(), 0) << when;
}

TEST(InitOptions, CallsBeforeInitAreRefused) {
  expect_not_initialized("before mr_init", "before mr_init");
  EXPECT_STATUS(mr_finalize(), MR_ERR_NOT_INITIALIZED) << " (mr_finalize before mr_init)";
  expect_not_initialized("after mr_finalize before mr_init", "before mr_init");
  EXPECT_STRNE(mr_strerror(MR_ERR_NOT_INITIALIZED), "unknown status");
}

TEST(InitOptions, BadVariablesFailInit) {
  setenv("MANYALLOC_REGION_LEVELS", "1", 1);
  setenv("MANYALLOC_REGION_FANOUT", "4", 1);
  setenv("MANYALLOC_REGION_TRANSFER", "copy", 1);
  setenv("MANYALLOC_REGION_PREFAULT", "off", 1);
  // Integers: decimal digits only, within range, no suffix or sign.
  for (const char* v : {"abc", "0", "9", " 2", "2 ", "+1", "-1", "1.0", "0x2", "99999999999999999999999"})
    expect_env_error("MANYALLOC_REGION_LEVELS", v);
  for (const char* v : {"four", "0", "-2", "4k", "2097152"}) expect_env_error("MANYALLOC_REGION_FANOUT", v);
  for (const char* v : {"4G", "1e3", "4096M", "0", "-4096", "0x1000", "33554433", "18446744073709551616"})
    expect_env_error("MANYALLOC_REGION_GAS_MIB", v);
  for (const char* v : {"zero-copy", "on", "copy1"}) expect_env_error("MANYALLOC_REGION_TRANSFER", v);
  for (const char* v : {"sometimes", "1", "yes"}) expect_env_error("MANYALLOC_REGION_PREFAULT", v);
  // After a failed mr_init the library is not initialised, and says why.
  expect_not_initialized("after a failed mr_init", "mr_init failed");
}

TEST(InitOptions, BadConfigFieldsFailInit) {
  struct BadField {
    const char* field;
    const char* value;
    void (*set)(mr_config&);
  };
  const BadField cases[] = {
      {"levels", "-1", [](mr_config& c) { c.levels = -1; }},
      {"levels", "9", [](mr_config& c) { c.levels = 9; }},
      {"fanout", "-2", [](mr_config& c) { c.fanout = -2; }},
      {"gas_bytes", "1000", [](mr_config& c) { c.gas_bytes = 1000; }},
      {"load_threshold", "-1", [](mr_config& c) { c.load_threshold = -1; }},
      {"transfer", "7", [](mr_config& c) { c.transfer = 7; }},
      {"prefault", "-1", [](mr_config& c) { c.prefault = -1; }},
  };
  for (const BadField& f : cases) {
    mr_config bad{};
    f.set(bad);
    const std::string name = std::string("mr_config.") + f.field;
    const std::string what = std::string("config.") + f.field + "=" + f.value;
    expect_init_error(what.c_str(), &bad, {name.c_str(), f.value, "allowed"});
  }
}

// Layouts that need more ranks than the job has (2): how many they need.
TEST(InitOptions, LayoutsTooLargeForTheJobFailInit) {
  setenv("MANYALLOC_REGION_LEVELS", "2", 1);
  setenv("MANYALLOC_REGION_FANOUT", "2", 1);
  expect_init_error("2 levels, fanout 2", nullptr,
                    {"3 schedulers", "at least 4 ranks", "has 2", "MANYALLOC_REGION_LEVELS=2",
                     "MANYALLOC_REGION_FANOUT=2"});
  mr_config big{};
  big.levels = 3;
  expect_init_error("config 3 levels, fanout 2", &big,
                    {"7 schedulers", "at least 8 ranks", "has 2", "mr_config.levels=3"});
}

// Valid, in capitals: the scheduler returns from mr_init when the worker
// finalizes.
TEST(InitOptions, NamesAreCaseInsensitiveAndInitSucceedsOnce) {
  setenv("MANYALLOC_REGION_LEVELS", "1", 1);
  setenv("MANYALLOC_REGION_FANOUT", "1", 1);
  setenv("MANYALLOC_REGION_GAS_MIB", "4096", 1);
  setenv("MANYALLOC_REGION_TRANSFER", "COPY", 1);
  setenv("MANYALLOC_REGION_PREFAULT", "Off", 1);
  int argc = 0;
  char** argv = nullptr;
  const mr_status s = mr_init(&argc, &argv, nullptr);
  EXPECT_STATUS(s, MR_OK) << " (TRANSFER=COPY PREFAULT=Off): " << mr_last_error();
  if (s != MR_OK) return;
  if (mr_is_worker()) {
    expect_init_error("second mr_init", nullptr, {"already"});
    void* p = nullptr;
    EXPECT_STATUS(mr_alloc(64, MR_ROOT_REGION, &p), MR_OK) << " (mr_alloc after init)";
    EXPECT_STATUS(mr_free(p), MR_OK) << " (mr_free after init)";
  } else {
    // Scheduler ranks: the worker calls are not theirs.
    void* p = nullptr;
    EXPECT_STATUS(mr_alloc(64, MR_ROOT_REGION, &p), MR_ERR_NOT_WORKER) << " (mr_alloc on a scheduler)";
    expect_reason("mr_alloc on a scheduler", {"mr_alloc", "scheduler"});
  }
  EXPECT_STATUS(mr_finalize(), MR_OK) << " (mr_finalize)";
}

TEST(InitOptions, CallsAfterFinalizeAreRefused) {
  expect_not_initialized("after mr_finalize", "after mr_finalize");
  EXPECT_STATUS(mr_finalize(), MR_ERR_NOT_INITIALIZED) << " (mr_finalize twice)";
  expect_init_error("mr_init after mr_finalize", nullptr, {"after mr_finalize"});
}

}  // namespace
