// Ctrl-C during generation stops cleanly: the text so far, the stats line, exit code 130.
#include <gtest/gtest.h>

#include "support/run_command.h"
#include "test_paths.h"

namespace augur {
namespace {

TEST(CliInterrupt, SigintStopsGenerationCleanly) {
  // -n -1 with a large context would run for many seconds. SIGINT is sent once text is streaming
  // (a slow sanitizer build may take seconds just to load), so it lands inside generation.
  const auto out = testing::temp_path("interrupt-out"), err = testing::temp_path("interrupt-err");
  const std::string augur =
      testing::quote(testing::augur_bin()) + " run -m " +
      testing::quote(testing::source_dir() / "models" / "zoo-target-q8_0.gguf") +
      " -p 'def main(args):' -n -1 -c 8192 --ignore-eos --temp 0 -t 1";
  const auto r = testing::run_command(
      "(" + augur + " >" + out.string() + " 2>" + err.string() + " & pid=$!; i=0; while [ ! -s " +
      out.string() +
      " ] && [ $i -lt 1200 ]; do sleep 0.1; i=$((i+1)); done; sleep 0.5; kill -INT $pid; "
      "wait $pid)");
  const std::string text = testing::slurp(out), log = testing::slurp(err);
  std::filesystem::remove(out);
  std::filesystem::remove(err);
  EXPECT_EQ(r.exit_code, 130) << log;
  EXPECT_NE(log.find("stop: cancelled"), std::string::npos) << log;
  EXPECT_FALSE(text.empty());
}

}  // namespace
}  // namespace augur
