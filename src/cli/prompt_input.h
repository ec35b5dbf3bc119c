// How a command gets its prompt: -p TEXT, -f FILE or --prompt-ids 1,2,3 (exactly one).
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace augur::tokenizer {
class Tokenizer;
}

namespace augur::cli {

struct PromptInput {
  std::string text;
  std::string file;
  std::string ids;

  // Registers -p/-f (and --prompt-ids when `with_ids`) as mutually exclusive options.
  void add_options(CLI::App& app, bool with_ids);
  bool given() const { return !text.empty() || !file.empty() || !ids.empty(); }
  bool has_ids() const { return !ids.empty(); }
  // The prompt text of -p, or the contents of -f (read byte-exactly).
  std::string read_text() const;
};

// Parses "1,2,3" (commas and/or spaces); InvalidArgument names the bad entry. Ids must lie in
// [0, n_vocab).
std::vector<int32_t> parse_token_ids(const std::string& list, int64_t n_vocab);

// The prompt's token ids: --prompt-ids exactly as given (no BOS), else the text tokenized with
// the model's add_bos setting.
std::vector<int32_t> prompt_tokens(const PromptInput& input, const tokenizer::Tokenizer& tok,
                                   int64_t n_vocab);

}  // namespace augur::cli
