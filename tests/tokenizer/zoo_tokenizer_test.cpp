// The zoo models' SPM tokenizer against llama.cpp's recorded prompt ids (models/zoo-ref.json)
// and byte-exact round trips of the held-out code prompts (models/prompts-code.jsonl).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "test_data.h"
#include "tokenizer/tokenizer.h"

namespace augur::tokenizer {
namespace {

using augur::testing::models_dir;
using testing::read_bytes;
using testing::shared_tokenizer;
using testing::zoo_tokenizer;

// id -> prompt text; *n_lines counts the file's non-empty lines.
std::map<std::string, std::string> read_prompts(size_t* n_lines = nullptr) {
  std::map<std::string, std::string> prompts;
  std::istringstream lines(read_bytes(models_dir() / "prompts-code.jsonl"));
  std::string line;
  size_t n = 0;
  while (std::getline(lines, line)) {
    if (line.empty()) continue;
    ++n;
    const auto row = nlohmann::json::parse(line);
    prompts[row.at("id").get<std::string>()] = row.at("prompt").get<std::string>();
  }
  if (n_lines) *n_lines = n;
  return prompts;
}

TEST(ZooTokenizer, EveryCodePromptRoundTripsByteExactly) {
  size_t n_lines = 0;
  const auto prompts = read_prompts(&n_lines);
  ASSERT_FALSE(prompts.empty());
  ASSERT_EQ(prompts.size(), n_lines) << "prompt ids must be unique";
  const Tokenizer& tok = zoo_tokenizer();
  for (const auto& [id, prompt] : prompts) {
    const auto ids = tok.encode(prompt, /*add_special=*/false, /*parse_special=*/false);
    EXPECT_EQ(tok.decode(ids), prompt) << id;
    // With the BOS that generation starts from, decode keeps the prefix space: it is the same
    // text with one leading space (llama.cpp strips that space only on the first piece).
    std::vector<int32_t> with_bos = tok.encode(prompt, /*add_special=*/true, false);
    EXPECT_EQ(tok.decode(with_bos), " " + prompt) << id;
  }
}

TEST(ZooTokenizer, BosPlusEncodeEqualsLlamaCppPromptIds) {
  const auto prompts = read_prompts();
  const auto ref = nlohmann::json::parse(read_bytes(models_dir() / "zoo-ref.json"));
  size_t n_checked = 0, n_recorded = 0;
  for (const auto& [model, entry] : ref.at("models").items()) {
    n_recorded += entry.at("prompts").size();
    const Tokenizer& tok = shared_tokenizer(models_dir() / model);
    ASSERT_GE(tok.bos(), 0);
    for (const auto& row : entry.at("prompts")) {
      const std::string id = row.at("id").get<std::string>();
      ASSERT_TRUE(prompts.count(id)) << model << ": prompt " << id << " not in prompts-code.jsonl";
      const auto want = row.at("prompt_ids").get<std::vector<int32_t>>();
      const auto& prompt = prompts.at(id);

      std::vector<int32_t> bos_plus_encode = {tok.bos()};
      const auto body = tok.encode(prompt, /*add_special=*/false, /*parse_special=*/false);
      bos_plus_encode.insert(bos_plus_encode.end(), body.begin(), body.end());
      EXPECT_EQ(bos_plus_encode, want) << model << " " << id;
      // add_bos_token is true for the zoo models, so add_special gives the same sequence.
      EXPECT_EQ(tok.encode(prompt, /*add_special=*/true, false), want) << model << " " << id;
      ++n_checked;
    }
  }
  EXPECT_GT(n_checked, 0u);
  EXPECT_EQ(n_checked, n_recorded);
}

}  // namespace
}  // namespace augur::tokenizer
