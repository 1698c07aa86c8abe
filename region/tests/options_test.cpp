// mr_init's settings without MPI (src/options.*): every MANYALLOC_REGION_*
// variable and mr_config field is checked strictly, and a bad one is
// reported in one line with the option, the value and what is allowed; the
// layout check says how many ranks a tree needs.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "options.hpp"

namespace rd = manyalloc::region::detail;

namespace {

constexpr const char* vars[] = {"MANYALLOC_REGION_LEVELS", "MANYALLOC_REGION_FANOUT", "MANYALLOC_REGION_GAS_MIB",
                                 "MANYALLOC_REGION_TRANSFER", "MANYALLOC_REGION_PREFAULT",
                                 "MANYALLOC_REGION_FORCE_REMOTE"};

class Options : public ::testing::Test {
 protected:
  void SetUp() override {
    for (const char* v : vars) unsetenv(v);
  }
  void TearDown() override {
    for (const char* v : vars) unsetenv(v);
  }
  // Resolves; returns the reason ("" when accepted).
  std::string resolve(const mr_config* cfg = nullptr) {
    char why[640] = "";
    ok = rd::resolve_settings(cfg, s, why, sizeof why);
    return ok ? std::string() : std::string(why);
  }
  rd::Settings s;
  bool ok = false;
};

bool has(const std::string& text, const char* word) { return text.find(word) != std::string::npos; }

TEST_F(Options, DefaultsWhenNothingIsSet) {
  EXPECT_EQ(resolve(), "");
  EXPECT_EQ(s.levels, 1);
  EXPECT_EQ(s.fanout, 4);
  EXPECT_EQ(s.gas_bytes, std::uint64_t{64} << 30);
  EXPECT_EQ(s.transfer, MR_TRANSFER_AUTO);
  EXPECT_EQ(s.prefault, MR_PREFAULT_ON);
  EXPECT_STREQ(s.levels_from, "default levels 1");
}

TEST_F(Options, EmptyVariableCountsAsUnset) {
  setenv("MANYALLOC_REGION_LEVELS", "", 1);
  setenv("MANYALLOC_REGION_GAS_MIB", "", 1);
  EXPECT_EQ(resolve(), "");
  EXPECT_EQ(s.levels, 1);
}

TEST_F(Options, ValidValues) {
  setenv("MANYALLOC_REGION_LEVELS", "8", 1);
  setenv("MANYALLOC_REGION_FANOUT", "1048576", 1);
  setenv("MANYALLOC_REGION_GAS_MIB", "33554432", 1);
  setenv("MANYALLOC_REGION_TRANSFER", "Copy", 1);
  setenv("MANYALLOC_REGION_PREFAULT", "OFF", 1);
  EXPECT_EQ(resolve(), "");
  EXPECT_EQ(s.levels, 8);
  EXPECT_EQ(s.fanout, 1 << 20);
  EXPECT_EQ(s.gas_bytes, std::uint64_t{32} << 40);
  EXPECT_EQ(s.transfer, MR_TRANSFER_COPY);
  EXPECT_EQ(s.prefault, MR_PREFAULT_OFF);
  EXPECT_STREQ(s.levels_from, "MANYALLOC_REGION_LEVELS=8");
  setenv("MANYALLOC_REGION_GAS_MIB", "0004096", 1);  // leading zeros are digits
  EXPECT_EQ(resolve(), "");
  EXPECT_EQ(s.gas_bytes, std::uint64_t{4096} << 20);
}

struct Bad {
  const char* var;
  const char* value;
  const char* reason;  // "not a whole decimal number", "out of range", "not one of the names"
};

TEST_F(Options, MalformedOrOutOfRangeVariablesAreRefused) {
  const Bad cases[] = {
      {"MANYALLOC_REGION_LEVELS", "abc", "not a whole decimal number"},
      {"MANYALLOC_REGION_LEVELS", "0", "out of range"},
      {"MANYALLOC_REGION_LEVELS", "9", "out of range"},
      {"MANYALLOC_REGION_LEVELS", " 2", "not a whole decimal number"},
      {"MANYALLOC_REGION_LEVELS", "2 ", "not a whole decimal number"},
      {"MANYALLOC_REGION_LEVELS", "+2", "not a whole decimal number"},
      {"MANYALLOC_REGION_LEVELS", "-1", "not a whole decimal number"},
      {"MANYALLOC_REGION_LEVELS", "99999999999999999999999", "out of range"},
      {"MANYALLOC_REGION_FANOUT", "0", "out of range"},
      {"MANYALLOC_REGION_FANOUT", "2097152", "out of range"},
      {"MANYALLOC_REGION_FANOUT", "4k", "not a whole decimal number"},
      {"MANYALLOC_REGION_GAS_MIB", "4G", "not a whole decimal number"},
      {"MANYALLOC_REGION_GAS_MIB", "1e3", "not a whole decimal number"},
      {"MANYALLOC_REGION_GAS_MIB", "4096MiB", "not a whole decimal number"},
      {"MANYALLOC_REGION_GAS_MIB", "0x1000", "not a whole decimal number"},
      {"MANYALLOC_REGION_GAS_MIB", "0", "out of range"},
      {"MANYALLOC_REGION_GAS_MIB", "33554433", "out of range"},
      {"MANYALLOC_REGION_GAS_MIB", "18446744073709551617", "out of range"},
      {"MANYALLOC_REGION_TRANSFER", "zero-copy", "not one of the names"},
      {"MANYALLOC_REGION_PREFAULT", "1", "not one of the names"},
      {"MANYALLOC_REGION_FORCE_REMOTE", "2", "not a flag"},
      {"MANYALLOC_REGION_FORCE_REMOTE", "remote", "not a flag"},
  };
  for (const Bad& b : cases) {
    SetUp();
    setenv(b.var, b.value, 1);
    const std::string why = resolve();
    EXPECT_FALSE(ok) << b.var << "=" << b.value;
    EXPECT_TRUE(has(why, b.var) && has(why, (std::string("\"") + b.value + "\"").c_str()) && has(why, b.reason) &&
                has(why, "allowed"))
        << b.var << "=" << b.value << ": " << why;
  }
}

TEST_F(Options, TheMessageSaysWhatIsAllowed) {
  setenv("MANYALLOC_REGION_GAS_MIB", "4G", 1);
  EXPECT_EQ(resolve(),
            "mr_init: MANYALLOC_REGION_GAS_MIB=\"4G\": not a whole decimal number; allowed: whole MiB from 1 to "
            "33554432 (32 TiB), decimal digits only, no unit suffix");
  SetUp();
  setenv("MANYALLOC_REGION_LEVELS", "abc", 1);
  EXPECT_EQ(resolve(),
            "mr_init: MANYALLOC_REGION_LEVELS=\"abc\": not a whole decimal number; allowed: whole numbers from 1 to 8 "
            "(scheduler tree levels)");
  SetUp();
  setenv("MANYALLOC_REGION_TRANSFER", "zero-copy", 1);
  EXPECT_EQ(resolve(), "mr_init: MANYALLOC_REGION_TRANSFER=\"zero-copy\": not one of the names; allowed: auto, copy (any case)");
}

TEST_F(Options, ForceRemote) {
  EXPECT_EQ(resolve(), "");
  EXPECT_FALSE(s.force_remote);
  for (const char* on : {"1", "on", "YES", "true"}) {
    SetUp();
    setenv("MANYALLOC_REGION_FORCE_REMOTE", on, 1);
    EXPECT_EQ(resolve(), "") << on;
    EXPECT_TRUE(s.force_remote) << on;
  }
  SetUp();
  setenv("MANYALLOC_REGION_FORCE_REMOTE", "0", 1);
  EXPECT_EQ(resolve(), "");
  EXPECT_FALSE(s.force_remote);
  SetUp();
  setenv("MANYALLOC_REGION_FORCE_REMOTE", "2", 1);
  EXPECT_EQ(resolve(), "mr_init: MANYALLOC_REGION_FORCE_REMOTE=\"2\": not a flag; allowed: 1, 0, on, off, yes, no, true, "
                       "false (any case)");
}

TEST_F(Options, ConfigFieldsOverrideTheEnvironment) {
  setenv("MANYALLOC_REGION_LEVELS", "abc", 1);  // not read: the field wins
  mr_config c{};
  c.levels = 2;
  c.gas_bytes = std::uint64_t{3} << 20;
  c.transfer = MR_TRANSFER_COPY;
  EXPECT_EQ(resolve(&c), "");
  EXPECT_EQ(s.levels, 2);
  EXPECT_EQ(s.gas_bytes, std::uint64_t{3} << 20);
  EXPECT_EQ(s.transfer, MR_TRANSFER_COPY);
  EXPECT_STREQ(s.levels_from, "mr_config.levels=2");
}

TEST_F(Options, BadConfigFieldsAreRefused) {
  struct Case {
    mr_config c;
    const char* words[3];
  };
  auto with = [](auto set) {
    mr_config c{};
    set(c);
    return c;
  };
  const Case cases[] = {
      {with([](mr_config& c) { c.levels = -1; }), {"mr_config.levels=-1", "allowed", "1 to 8"}},
      {with([](mr_config& c) { c.levels = 9; }), {"mr_config.levels=9", "allowed", "1 to 8"}},
      {with([](mr_config& c) { c.fanout = -4; }), {"mr_config.fanout=-4", "allowed", "1 to 1048576"}},
      {with([](mr_config& c) { c.gas_bytes = 1000; }), {"mr_config.gas_bytes=1000", "not a multiple of 1 MiB", "allowed"}},
      {with([](mr_config& c) { c.gas_bytes = std::uint64_t{33} << 40; }), {"mr_config.gas_bytes", "out of range", "32 TiB"}},
      {with([](mr_config& c) { c.transfer = 7; }), {"mr_config.transfer=7", "allowed", "MR_TRANSFER_COPY (1)"}},
      {with([](mr_config& c) { c.prefault = -1; }), {"mr_config.prefault=-1", "allowed", "MR_PREFAULT_OFF (1)"}},
      {with([](mr_config& c) { c.load_threshold = -1; }), {"mr_config.load_threshold=-1", "allowed", "or more"}},
  };
  for (const Case& k : cases) {
    const std::string why = resolve(&k.c);
    EXPECT_FALSE(ok) << k.words[0];
    for (const char* w : k.words) EXPECT_TRUE(has(why, w)) << why << " lacks " << w;
  }
}

TEST(Layout, SchedulerCounts) {
  EXPECT_EQ(rd::scheduler_count(1, 4), 1);
  EXPECT_EQ(rd::scheduler_count(2, 2), 3);
  EXPECT_EQ(rd::scheduler_count(3, 2), 7);
  EXPECT_EQ(rd::scheduler_count(3, 3), 13);
  EXPECT_GT(rd::scheduler_count(8, 1 << 20), long{1} << 31);  // saturates, no overflow
}

TEST(Layout, SaysHowManyRanksATreeNeeds) {
  rd::Settings s;
  s.levels = 3;
  s.fanout = 2;
  std::snprintf(s.levels_from, sizeof s.levels_from, "MANYALLOC_REGION_LEVELS=3");
  std::snprintf(s.fanout_from, sizeof s.fanout_from, "mr_config.fanout=2");
  char why[640] = "";
  EXPECT_TRUE(rd::check_layout(s, 8, why, sizeof why));
  EXPECT_FALSE(rd::check_layout(s, 4, why, sizeof why));
  EXPECT_STREQ(why,
               "mr_init: a scheduler tree of 3 levels with fanout 2 (MANYALLOC_REGION_LEVELS=3, mr_config.fanout=2) "
               "has 7 schedulers and needs at least 8 ranks (one worker or more); the job has 4");
  s.levels = 1;
  EXPECT_FALSE(rd::check_layout(s, 1, why, sizeof why));
  EXPECT_TRUE(has(why, "1 scheduler and needs at least 2 ranks") && has(why, "without mpiexec")) << why;
}

}  // namespace
