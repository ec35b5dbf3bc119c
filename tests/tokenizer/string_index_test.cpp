#include "tokenizer/string_index.h"

#include <gtest/gtest.h>

namespace augur::tokenizer {
namespace {

TEST(StringIndex, FindsEveryInsertedStringAcrossGrowthAndKeepsTheFirstValue) {
  std::string arena;
  std::vector<std::pair<uint32_t, uint32_t>> spans;
  for (int k = 0; k < 5000; ++k) {
    const std::string s = "w" + std::to_string(k * 7919);
    spans.emplace_back(static_cast<uint32_t>(arena.size()), static_cast<uint32_t>(s.size()));
    arena += s;
  }
  arena += "w0";  // a repeat of the first string
  StringIndex index;
  index.reset(&arena, 8);  // far too small on purpose: insert must grow the table
  for (int k = 0; k < 5000; ++k) {
    EXPECT_EQ(index.insert(spans[k].first, spans[k].second, k), -1);
  }
  EXPECT_EQ(index.insert(static_cast<uint32_t>(arena.size() - 2), 2, 9999), 0);
  for (int k = 0; k < 5000; k += 37) {
    EXPECT_EQ(index.find("w" + std::to_string(k * 7919)), k);
  }
  EXPECT_EQ(index.find("w1"), -1);
  EXPECT_EQ(index.find(""), -1);
}

TEST(StringIndex, FindsAPairWithoutBuildingTheJoinedString) {
  const std::string arena = "a bcab c";  // "a bc" and "ab c"
  StringIndex index;
  index.reset(&arena, 2);
  (void)index.insert(0, 4, 0);
  (void)index.insert(4, 4, 1);
  EXPECT_EQ(index.find("a", ' ', "bc"), 0);
  EXPECT_EQ(index.find("ab", ' ', "c"), 1);
  EXPECT_EQ(index.find("a", ' ', "b"), -1);
  EXPECT_EQ(index.find("a", '_', "bc"), -1);
}

}  // namespace
}  // namespace augur::tokenizer
