// NgramDrafter: which earlier occurrence it copies (longest suffix first, then the most recent),
// what it copies (the continuation, running on into its own proposal in a repeating tail), the
// bounds it respects (k_max, n_min..n_max) and its one-hot q.
#include "spec/ngram_drafter.h"

#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "common/error.h"

namespace augur::spec {
namespace {

using Tokens = std::vector<int32_t>;

Tokens propose(NgramDrafter& drafter, const Tokens& context, int k_max) {
  Draft out;
  drafter.propose({context, k_max, nullptr, nullptr}, out);
  EXPECT_TRUE(out.q.empty()) << "a deterministic drafter's q is one-hot (empty)";
  return out.tokens;
}

TEST(NgramDrafter, IsNamedNgram) {
  EXPECT_EQ(NgramDrafter().name(), "ngram");
}

TEST(NgramDrafter, ContinuationCopiesWhatFollowedTheMatch) {
  NgramDrafter drafter(1, 4);
  //                     0   1   2   3   4   5   6   7
  const Tokens context = {40, 41, 42, 43, 44, 45, 46, 41};
  // Only "41" recurs; it was followed by 42 43 44 ...
  EXPECT_EQ(propose(drafter, context, 1), (Tokens{42}));
  EXPECT_EQ(propose(drafter, context, 4), (Tokens{42, 43, 44, 45}));
}

TEST(NgramDrafter, LongestSuffixMatchWinsOverShorterOnes) {
  //                     0  1    2  3  4    5  6  7
  const Tokens context = {5, 7, 100, 9, 7, 200, 5, 7};
  // The 2-gram "5 7" occurred at 0 (followed by 100); the 1-gram "7" more recently at 4
  // (followed by 200). The longer match wins even though it is older.
  NgramDrafter drafter(1, 4);
  EXPECT_EQ(propose(drafter, context, 3), (Tokens{100, 9, 7}));
  // With 1-grams only, the most recent "7" is used.
  NgramDrafter unigram(1, 1);
  EXPECT_EQ(propose(unigram, context, 3), (Tokens{200, 5, 7}));
}

TEST(NgramDrafter, MostRecentOccurrenceWins) {
  //                     0  1   2  3  4   5  6  7  8
  const Tokens context = {1, 2, 10, 1, 2, 20, 3, 1, 2};
  NgramDrafter drafter(1, 4);
  // "1 2" occurred at 0 (then 10) and at 3 (then 20): the later one is copied.
  EXPECT_EQ(propose(drafter, context, 3), (Tokens{20, 3, 1}));
}

TEST(NgramDrafter, ContinuationRunsOnIntoItsOwnProposalInARepeatingTail) {
  NgramDrafter drafter(1, 4);
  // "a b c a b c": the longest recurring suffix is "a b c" (at 0), followed by "a b c" and then
  // the end of the context; the proposal keeps repeating with period 3.
  const Tokens abcabc = {1, 2, 3, 1, 2, 3};
  EXPECT_EQ(propose(drafter, abcabc, 3), (Tokens{1, 2, 3}));
  EXPECT_EQ(propose(drafter, abcabc, 5), (Tokens{1, 2, 3, 1, 2}));
  EXPECT_EQ(propose(drafter, abcabc, 8), (Tokens{1, 2, 3, 1, 2, 3, 1, 2}));
  // A period-1 tail: "7 7" matched one token back (overlapping the suffix) repeats 7.
  EXPECT_EQ(propose(drafter, Tokens{4, 5, 7, 7, 7}, 6), (Tokens{7, 7, 7, 7, 7, 7}));
  // A period-2 tail whose match starts mid-context.
  EXPECT_EQ(propose(drafter, Tokens{9, 8, 3, 4, 3, 4}, 5), (Tokens{3, 4, 3, 4, 3}));
}

TEST(NgramDrafter, NoMatchProposesNothing) {
  NgramDrafter drafter(1, 4);
  EXPECT_TRUE(propose(drafter, Tokens{1, 2, 3, 4, 5}, 8).empty());
  // A single token has no earlier occurrence to match.
  EXPECT_TRUE(propose(drafter, Tokens{1}, 8).empty());
  // The suffix itself does not count as an earlier occurrence of itself.
  EXPECT_TRUE(propose(drafter, Tokens{6, 1, 2, 3}, 8).empty());
}

TEST(NgramDrafter, ProposalReplacesWhateverTheDraftHeld) {
  NgramDrafter drafter(1, 4);
  Draft out;
  out.tokens = {99, 98, 97};
  out.q = {0.5f, 0.5f};
  const Tokens no_match = {1, 2, 3};
  drafter.propose({no_match, 4, nullptr, nullptr}, out);
  EXPECT_TRUE(out.tokens.empty());
  EXPECT_TRUE(out.q.empty());
  out.tokens = {99, 98, 97, 96, 95, 94};
  out.q = {0.5f, 0.5f};
  const Tokens match = {1, 2, 3, 1};
  drafter.propose({match, 2, nullptr, nullptr}, out);
  EXPECT_EQ(out.tokens, (Tokens{2, 3}));
  EXPECT_TRUE(out.q.empty());
}

TEST(NgramDrafter, ZeroOrNegativeKMaxProposesNothing) {
  NgramDrafter drafter(1, 4);
  const Tokens context = {1, 2, 3, 1, 2, 3};
  EXPECT_TRUE(propose(drafter, context, 0).empty());
  EXPECT_TRUE(propose(drafter, context, -1).empty());
}

TEST(NgramDrafter, ProposesExactlyKMaxTokensWhenAMatchExists) {
  NgramDrafter drafter(1, 4);
  // The match is followed by a single context token: every further one comes from the tail.
  const Tokens context = {10, 11, 12, 13, 11};
  for (int k = 1; k <= 32; ++k) {
    const Tokens got = propose(drafter, context, k);
    ASSERT_EQ(got.size(), static_cast<size_t>(k)) << "k_max " << k;
    // "11" at 1 is followed by 12 13 11, then the proposal repeats with period 3.
    for (int i = 0; i < k; ++i) {
      EXPECT_EQ(got[static_cast<size_t>(i)], (Tokens{12, 13, 11})[static_cast<size_t>(i % 3)])
          << "k_max " << k << ", position " << i;
    }
  }
}

TEST(NgramDrafter, MatchShorterThanNMinIsNotUsed) {
  // Only the 1-gram "7" recurs (the 2-gram "3 7" does not).
  const Tokens context = {1, 7, 8, 3, 7};
  NgramDrafter any(1, 4);
  EXPECT_EQ(propose(any, context, 2), (Tokens{8, 3}));
  NgramDrafter bigrams_up(2, 4);
  EXPECT_TRUE(propose(bigrams_up, context, 2).empty());
  // A 2-gram match is used by n_min = 2 but not by n_min = 3.
  const Tokens bigram_context = {5, 3, 7, 8, 3, 7};
  EXPECT_EQ(propose(bigrams_up, bigram_context, 2), (Tokens{8, 3}));
  NgramDrafter trigrams_up(3, 4);
  EXPECT_TRUE(propose(trigrams_up, bigram_context, 2).empty());
}

TEST(NgramDrafter, MatchLongerThanNMaxIsSearchedOnlyUpToNMax) {
  //                     0  1  2   3  4  5  6   7  8  9  10
  const Tokens context = {1, 2, 3, 50, 9, 2, 3, 60, 1, 2, 3};
  // The 3-gram "1 2 3" matches at 0 (then 50); the 2-gram "2 3" most recently at 5 (then 60).
  NgramDrafter up_to_four(1, 4);
  EXPECT_EQ(propose(up_to_four, context, 2), (Tokens{50, 9}));
  NgramDrafter up_to_three(1, 3);
  EXPECT_EQ(propose(up_to_three, context, 2), (Tokens{50, 9}));
  NgramDrafter up_to_two(1, 2);
  EXPECT_EQ(propose(up_to_two, context, 2), (Tokens{60, 1}));
}

TEST(NgramDrafter, IsStatelessAcrossObserveAndBegin) {
  NgramDrafter drafter(1, 4);
  const Tokens context = {1, 2, 3, 1, 2};
  const Tokens first = propose(drafter, context, 4);
  drafter.begin(context);
  drafter.observe(2);
  EXPECT_EQ(propose(drafter, context, 4), first);
  EXPECT_EQ(first, (Tokens{3, 1, 2, 3}));
}

TEST(NgramDrafter, InvalidSizesThrowInvalidArgument) {
  for (const auto& [n_min, n_max] :
       std::vector<std::pair<int, int>>{{0, 4}, {-1, 4}, {0, 0}, {2, 1}, {5, 4}, {-3, -1}}) {
    try {
      NgramDrafter drafter(n_min, n_max);
      ADD_FAILURE() << n_min << ".." << n_max << " was accepted";
    } catch (const InvalidArgument& e) {
      const std::string message = e.what();
      EXPECT_NE(message.find(std::to_string(n_min) + ".." + std::to_string(n_max)),
                std::string::npos)
          << message;
    }
  }
  EXPECT_NO_THROW(NgramDrafter(1, 1));
  EXPECT_NO_THROW(NgramDrafter(3, 3));
}

}  // namespace
}  // namespace augur::spec
