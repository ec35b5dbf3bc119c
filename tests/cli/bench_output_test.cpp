// gate_and_write: a report that fails the evidence gate is never written as `out`; it is kept
// beside it, and an older file at `out` is left alone but named as stale, so that an ad-hoc run
// cannot be misread from the previous run's report.
#include "cli/bench_output.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "cli/exit_codes.h"

namespace augur::cli {
namespace {

namespace fs = std::filesystem;

std::string read_file(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

class GateAndWrite : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("augur-gate-and-write-" +
            std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
};

// Not a bench report at all: the gate has plenty to say about it.
const nlohmann::json kBroken = {{"kind", "bench-run"}, {"samples", nlohmann::json::array()}};

TEST_F(GateAndWrite, KeepsARejectedReportBesideOutAndNamesAStaleOut) {
  const fs::path out = dir_ / "report.json";
  std::ofstream(out) << "{\"earlier\": true}\n";
  ::testing::internal::CaptureStderr();
  const int code = gate_and_write(kBroken, out.string());
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(code, kExitEvidenceViolation);
  EXPECT_EQ(read_file(out), "{\"earlier\": true}\n") << "a failed run must not touch out";
  ASSERT_TRUE(fs::exists(out.string() + ".rejected.json"));
  EXPECT_EQ(nlohmann::json::parse(read_file(out.string() + ".rejected.json")), kBroken);
  EXPECT_NE(err.find("fails the evidence gate"), std::string::npos) << err;
  EXPECT_NE(err.find(out.string() + " was not written: the file there is from an earlier run"),
            std::string::npos)
      << err;
}

TEST_F(GateAndWrite, SaysNothingAboutAnEarlierRunWhenOutDoesNotExist) {
  const fs::path out = dir_ / "report.json";
  ::testing::internal::CaptureStderr();
  EXPECT_EQ(gate_and_write(kBroken, out.string()), kExitEvidenceViolation);
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_FALSE(fs::exists(out));
  EXPECT_TRUE(fs::exists(out.string() + ".rejected.json"));
  EXPECT_EQ(err.find("earlier run"), std::string::npos) << err;
}

}  // namespace
}  // namespace augur::cli
