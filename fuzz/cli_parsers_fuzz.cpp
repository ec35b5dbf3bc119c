// libFuzzer target: the option parsers of the CLI and the sampler's parameters. The first byte
// picks one: --prompt-ids (token lists), whole-number lists (bench --n-prompt style), bench arm
// lists (spec:model:K, ...), or a sampler built from fuzzed parameters and run on fuzzed logits
// and history. Each must return or throw an augur::Error naming the bad item; the sampler must
// return a token inside the vocabulary with a probability row that sums to about 1.
#include <fuzzer/FuzzedDataProvider.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "bench/arms.h"
#include "cli/bench_output.h"
#include "cli/prompt_input.h"
#include "common/error.h"
#include "sampling/rng.h"
#include "sampling/sampler.h"

namespace {

using namespace augur;

void run_sampler(FuzzedDataProvider& in) {
  sampling::SamplerConfig config;
  config.temperature = in.ConsumeFloatingPoint<float>();
  config.top_k = in.ConsumeIntegral<int>();
  config.top_p = in.ConsumeFloatingPoint<float>();
  config.min_p = in.ConsumeFloatingPoint<float>();
  config.repeat_penalty = in.ConsumeFloatingPoint<float>();
  config.repeat_last_n = in.ConsumeIntegral<int>();
  config.frequency_penalty = in.ConsumeFloatingPoint<float>();
  config.presence_penalty = in.ConsumeFloatingPoint<float>();
  config.seed = in.ConsumeIntegral<uint64_t>();
  const int n_vocab = in.ConsumeIntegralInRange(1, 300);
  const sampling::Sampler sampler(config, n_vocab);
  std::vector<float> logits(static_cast<size_t>(n_vocab));
  for (float& x : logits) {
    // Mostly ordinary logits, sometimes the extremes a broken model could hand over.
    switch (in.ConsumeIntegralInRange(0, 9)) {
      case 0: x = -INFINITY; break;
      case 1: x = in.ConsumeFloatingPoint<float>(); break;
      default: x = in.ConsumeFloatingPointInRange(-30.0f, 30.0f);
    }
  }
  std::vector<int32_t> history;
  while (in.remaining_bytes() > 0 && history.size() < 200)
    history.push_back(in.ConsumeIntegralInRange<int32_t>(-1, n_vocab));
  sampling::SeededRng rng(config.seed);
  std::vector<float> probs(static_cast<size_t>(n_vocab));
  const int32_t token = sampler.sample(logits, history, rng, probs);
  if (token < 0 || token >= n_vocab || !(probs[static_cast<size_t>(token)] > 0)) __builtin_trap();
  double sum = 0;
  for (float p : probs) {
    if (!(p >= 0 && p <= 1)) __builtin_trap();
    sum += p;
  }
  if (std::abs(sum - 1) > 1e-3) __builtin_trap();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  FuzzedDataProvider in(data, size);
  const int which = in.ConsumeIntegralInRange(0, 3);
  try {
    switch (which) {
      case 0: {
        const int64_t n_vocab = in.ConsumeIntegralInRange<int64_t>(1, 1 << 20);
        for (int32_t id : cli::parse_token_ids(in.ConsumeRemainingBytesAsString(), n_vocab))
          if (id < 0 || id >= n_vocab) __builtin_trap();
        break;
      }
      case 1: (void)cli::parse_list(in.ConsumeRemainingBytesAsString(), "--n-prompt"); break;
      case 2: {
        for (const auto& arm : bench::parse_arms(in.ConsumeRemainingBytesAsString()))
          if (arm.spec && arm.draft_max <= 0) __builtin_trap();  // a drafting arm drafts
        break;
      }
      default: run_sampler(in);
    }
  } catch (const Error&) {
    // Named refusal: the intended outcome.
  }
  return 0;
}
