#include "cli/prompt_input.h"

#include <fmt/format.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "common/error.h"
#include "tokenizer/tokenizer.h"

namespace augur::cli {

void PromptInput::add_options(CLI::App& app, bool with_ids) {
  auto* p = app.add_option("-p,--prompt", text, "prompt text");
  auto* f = app.add_option("-f,--file", file, "read the prompt text from FILE (byte-exact)");
  p->excludes(f);
  if (with_ids) {
    auto* i =
        app.add_option("--prompt-ids", ids,
                       "prompt as token ids, e.g. 1,2,3 (used exactly as given: no BOS added)");
    i->excludes(p)->excludes(f);
  }
}

std::string PromptInput::read_text() const {
  if (file.empty()) return text;
  std::ifstream in(file, std::ios::binary);
  // A file that cannot be read is a file error (exit 1), like a model that cannot be opened.
  if (!in) throw Error(fmt::format("cannot read prompt file '{}': {}", file, std::strerror(errno)));
  std::ostringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

std::vector<int32_t> parse_token_ids(const std::string& list, int64_t n_vocab) {
  std::vector<int32_t> ids;
  size_t pos = 0;
  while (pos < list.size()) {
    const size_t start = list.find_first_not_of(", \t\n", pos);
    if (start == std::string::npos) break;
    size_t end = list.find_first_of(", \t\n", start);
    if (end == std::string::npos) end = list.size();
    const std::string entry = list.substr(start, end - start);
    size_t used = 0;
    long long value = -1;
    try {
      value = std::stoll(entry, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used != entry.size() || value < 0 || value >= n_vocab) {
      throw InvalidArgument(
          fmt::format("--prompt-ids: '{}' is not a token id in [0, {})", entry, n_vocab));
    }
    ids.push_back(static_cast<int32_t>(value));
    pos = end;
  }
  if (ids.empty()) throw InvalidArgument("--prompt-ids: no token ids given");
  return ids;
}

std::vector<int32_t> prompt_tokens(const PromptInput& input, const tokenizer::Tokenizer& tok,
                                   int64_t n_vocab) {
  if (input.has_ids()) return parse_token_ids(input.ids, n_vocab);
  // Like llama.cpp's tools, control-token texts in a prompt (e.g. "<s>") are parsed as tokens.
  return tok.encode(input.read_text(), /*add_special=*/true, /*parse_special=*/true);
}

}  // namespace augur::cli
