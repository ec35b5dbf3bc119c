// libFuzzer target: model loading on files that parse but may describe an impossible model.
// Each input is an edit script (gguf_edits.h) over one of the real fixture models (llama in four
// tensor types, qwen2, qwen3, gemma3, qwen3moe, qwen35); a model that loads then runs one
// three-token forward, which must not read outside its tensors. Expected outcome for a bad model:
// an augur::Error naming what is wrong.
#include <fuzzer/FuzzedDataProvider.h>
#include <unistd.h>

#include <array>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "cache/model_cache.h"
#include "common/error.h"
#include "fuzz_paths.h"
#include "gguf/file.h"
#include "gguf_edits.h"
#include "kernels/thread_pool.h"
#include "model/evaluator.h"
#include "model/model.h"

namespace {

using namespace augur;

constexpr std::array kBases = {
    "tiny-llama-Q4_0.gguf", "tiny-llama-Q8_0.gguf", "tiny-llama-BF16.gguf", "tiny-qwen2.gguf",
    "tiny-qwen3.gguf",      "tiny-gemma3.gguf",     "tiny-qwen3moe.gguf",   "tiny-qwen35.gguf"};
constexpr std::array<std::string_view, 9> kArchNames = {
    "llama", "qwen2", "qwen3", "qwen3moe", "gemma3", "qwen35", "eagle3", "dflash", "mamba"};

std::vector<std::unique_ptr<gguf::File>>& bases() {
  static std::vector<std::unique_ptr<gguf::File>> files;
  return files;
}

const std::filesystem::path& scratch_path() {
  static const std::filesystem::path path =
      std::filesystem::temp_directory_path() /
      ("augur-fuzz-model-" + std::to_string(getpid()) + ".gguf");
  return path;
}

constexpr std::array<std::string_view, 13> kHparamSuffixes = {".expert_count",
                                                              ".expert_used_count",
                                                              ".attention.sliding_window",
                                                              ".attention.key_length",
                                                              ".attention.value_length",
                                                              ".nextn_predict_layers",
                                                              ".ssm.conv_kernel",
                                                              ".ssm.state_size",
                                                              ".ssm.group_count",
                                                              ".full_attention_interval",
                                                              ".rope.dimension_count",
                                                              ".attention.head_count_kv",
                                                              ".vocab_size"};
constexpr fuzz::EditVocabulary kEdits{kArchNames, kHparamSuffixes};

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  for (const char* name : kBases) {
    bases().push_back(gguf::File::open(fuzz::shared_dir() / "fixtures" / name));
  }
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  FuzzedDataProvider in(data, size);
  const auto& base = *bases()[in.ConsumeIntegralInRange<size_t>(0, bases().size() - 1)];
  if (!fuzz::write_edited(in, base, kEdits, scratch_path())) return 0;
  try {
    auto model = model::load_model(gguf::File::open(scratch_path()));
    kernels::ThreadPool pool(1);
    const int64_t n_ctx = 8;
    cache::ModelCache cache(*model, {.capacity = n_ctx, .max_batch = 4});
    model::Evaluator eval(*model, pool, 4, n_ctx);
    const int64_t n_vocab = model->hparams().n_vocab;
    if (n_vocab <= 0) __builtin_trap();  // a model that loads has a vocabulary
    std::vector<int32_t> tokens = {0, static_cast<int32_t>(1 % n_vocab),
                                   static_cast<int32_t>(n_vocab - 1)};
    std::vector<float> logits(static_cast<size_t>(n_vocab));
    eval.forward_last(tokens, cache.memory(), logits.data());
  } catch (const Error&) {
    // A clear refusal naming what is impossible: the intended outcome.
  }
  return 0;
}
