// `augur bench niah`: needle in a haystack. A code line defining a unique constant
// (`NAME = VALUE`) is planted at a depth of a long filler of real code (the prompts file), and the
// context ends with `NAME = `: the model must copy VALUE from far back. Per context length,
// K/V cache type and depth it records, teacher-forced over VALUE's tokens, the greedy token of
// each step (all equal to VALUE's: greedy decoding recovers it), each token's probability, and the
// cache's resident K/V bytes. Report kind "niah" of augur.bench/1 (docs/bench-report.md).
#pragma once

#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace augur::bench {

struct NiahConfig {
  std::string model_path;
  std::string prompts_path;  // JSONL whose "prompt" texts, joined, are the filler
  std::vector<int64_t> contexts = {512, 1024, 4096};
  std::vector<int> depths_pct = {0, 25, 50, 75, 100};
  std::vector<std::string> cache_types = {"f32", "f16", "q8_0", "q4_0"};
  int needles = 3;  // distinct NAME = VALUE pairs per cell
  int threads = 0;  // 0: hardware threads
};

// Called after each sample: done, total, what just ran.
using NiahProgress = std::function<void(size_t done, size_t total, const std::string& what)>;

// InvalidArgument for a context too short for the needle and the question, a depth outside
// 0..100, a filler shorter than the longest context, or an unknown cache type.
nlohmann::json run_niah(const NiahConfig& config, const NiahProgress& progress = {});

}  // namespace augur::bench
