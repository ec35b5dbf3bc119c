// The prompts file the benchmarks read: JSON lines with a non-empty string "prompt" and an
// optional "id" (models/prompts-code.jsonl's format). It is input data: a file that cannot be
// read is an Error, a line that is not such an object a FormatError naming file and line.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace augur::bench {

struct PromptLine {
  std::string id;  // the line's "id" (a non-string id as its JSON text), else "p<index>"
  std::string text;
};

// At most max_prompts (0: all); FormatError when the file holds none.
[[nodiscard]] std::vector<PromptLine> read_prompt_file(const std::string& path,
                                                       size_t max_prompts = 0);

}  // namespace augur::bench
