// PrefixStore: longest-common-prefix lookup, replacement of the prefixes an entry extends,
// least-recently-used eviction within the byte budget.
#include "server/prefix_store.h"

#include <gtest/gtest.h>

namespace augur::testing {
namespace {

// Each token's saved cache state: 40 bytes.
engine::Generator::Prefix prefix(std::vector<int32_t> tokens) {
  engine::Generator::Prefix p;
  p.rows.assign(tokens.size() * 40, static_cast<uint8_t>(tokens.back()));
  p.tokens = std::move(tokens);
  return p;
}

int64_t bytes_of(size_t n_tokens) {
  return static_cast<int64_t>(n_tokens * (10 * 4 + 4));
}

TEST(PrefixStore, FindsTheLongestCommonPrefixAboveTheSlotsOwn) {
  server::PrefixStore store(1 << 20);
  store.put(prefix({1, 2, 3, 4}));
  store.put(prefix({1, 2, 9}));
  const std::vector<int32_t> prompt = {1, 2, 3, 7};
  const auto* hit = store.find(prompt, 0);
  ASSERT_NE(hit, nullptr);
  EXPECT_EQ(hit->tokens, (std::vector<int32_t>{1, 2, 3, 4}));
  EXPECT_EQ(store.find(prompt, 3), nullptr);  // a slot that shares 3 already is as good
  EXPECT_EQ(store.find(std::vector<int32_t>{5, 6}, 0), nullptr);
  EXPECT_EQ(store.hits(), 1);
}

TEST(PrefixStore, AnEntryReplacesThePrefixesItExtends) {
  server::PrefixStore store(1 << 20);
  store.put(prefix({1, 2}));
  store.put(prefix({1, 2, 3}));
  EXPECT_EQ(store.entries(), 1);
  store.put(prefix({1, 2}));  // already covered
  EXPECT_EQ(store.entries(), 1);
  EXPECT_EQ(store.bytes(), bytes_of(3));
}

TEST(PrefixStore, EvictsTheLeastRecentlyUsedWithinBudget) {
  server::PrefixStore store(bytes_of(10));
  store.put(prefix({1, 1, 1, 1}));
  store.put(prefix({2, 2, 2, 2}));
  ASSERT_NE(store.find(std::vector<int32_t>{1, 1, 1, 1}, 0), nullptr);  // 1 is now recent
  store.put(prefix({3, 3, 3, 3}));                                      // evicts 2
  EXPECT_EQ(store.entries(), 2);
  EXPECT_LE(store.bytes(), bytes_of(10));
  EXPECT_EQ(store.find(std::vector<int32_t>{2, 2, 2, 2}, 0), nullptr);
  EXPECT_NE(store.find(std::vector<int32_t>{1, 1, 1, 1}, 0), nullptr);
  store.put(prefix(std::vector<int32_t>(11, 5)));  // larger than the budget: not kept
  EXPECT_EQ(store.entries(), 2);
}

}  // namespace
}  // namespace augur::testing
