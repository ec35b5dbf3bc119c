// Ctrl-C during generation stops cleanly: the text so far, the stats line, exit code 130.
#include <gtest/gtest.h>

#include "support/run_command.h"
#include "test_paths.h"

namespace augur {
namespace {

TEST(CliInterrupt, SigintStopsGenerationCleanly) {
  // -n -1 with a large context would run for many seconds; SIGINT arrives after 3.
  const auto r = testing::run_command(
      "timeout --preserve-status -s INT 3 " + testing::quote(testing::augur_bin()) + " run -m " +
      testing::quote(testing::source_dir() / "models" / "zoo-target-q8_0.gguf") +
      " -p 'def main(args):' -n -1 -c 8192 --ignore-eos --temp 0 -t 1");
  EXPECT_EQ(r.exit_code, 130) << r.err;
  EXPECT_NE(r.err.find("stop: cancelled"), std::string::npos) << r.err;
  EXPECT_FALSE(r.out.empty());
}

}  // namespace
}  // namespace augur
