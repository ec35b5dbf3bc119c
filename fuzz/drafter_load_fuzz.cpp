// libFuzzer target: drafter heads (the -md FILE of --draft eagle3 / dflash, and a target's own MTP
// layer for --draft mtp) loaded for a target, on files that parse but may not fit it. Each input
// is an edit script (gguf_edits.h) over one of four heads made at start-up for the tiny-llama
// fixture: an EAGLE-3 head on the target's vocabulary, one with a reduced vocabulary (d2t and its
// own output head), a DFlash block drafter, and tiny-llama with an MTP layer appended (edited as a
// whole and loaded as the target). A head that loads then drafts in a short speculative session
// with the target (greedy or sampled, soft or one-hot q), which must not read outside any tensor.
// Expected outcome for a head that does not fit: an augur::Error naming why.
#include <fuzzer/FuzzedDataProvider.h>
#include <unistd.h>

#include <array>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <memory>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "common/error.h"
#include "engine/generator.h"
#include "fuzz_paths.h"
#include "gguf/file.h"
#include "gguf/writer.h"
#include "gguf_edits.h"
#include "kernels/thread_pool.h"
#include "model/heads/load_head.h"
#include "model/heads/nextn.h"
#include "model/model.h"
#include "sampling/rng.h"
#include "sampling/sampler.h"
#include "spec/head_drafters.h"
#include "support/dflash_heads.h"
#include "support/eagle3_heads.h"
#include "support/mtp_targets.h"

namespace {

using namespace augur;

constexpr std::array<std::string_view, 5> kArchNames = {"eagle3", "dflash", "llama", "qwen3",
                                                        "mamba"};
// Keys the head loaders read (after "<arch>"), and the MTP ones of a target.
constexpr std::array<std::string_view, 15> kHparamSuffixes = {".block_count",
                                                              ".embedding_length",
                                                              ".feed_forward_length",
                                                              ".attention.head_count",
                                                              ".attention.head_count_kv",
                                                              ".attention.key_length",
                                                              ".target_hidden_size",
                                                              ".rope.dimension_count",
                                                              ".block_size",
                                                              ".context_length",
                                                              ".attention.sliding_window",
                                                              ".conv_kernel_size",
                                                              ".nextn_predict_layers",
                                                              ".vocab_size",
                                                              ".selector_rank"};
constexpr fuzz::EditVocabulary kEdits{kArchNames, kHparamSuffixes};

enum Base { kEagle3, kEagle3ReducedVocab, kDFlash, kTargetWithMtp, kBaseCount };

struct State {
  std::unique_ptr<model::Model> target;  // tiny-llama
  std::array<std::unique_ptr<gguf::File>, kBaseCount> bases;
};

State& state() {
  static State s;
  return s;
}

std::filesystem::path temp_file(std::string_view what) {
  return std::filesystem::temp_directory_path() /
         ("augur-fuzz-" + std::string(what) + "-" + std::to_string(getpid()) + ".gguf");
}

// `head` with a reduced draft vocabulary: d2t maps its 48 ids to every third target id, with its
// own output head over them.
void write_reduced_vocab(const gguf::File& head, const std::filesystem::path& path) {
  const int64_t D = head.get_int("eagle3.embedding_length");
  const int64_t n_draft = 48;
  gguf::Writer out(path);
  for (const auto& [key, value] : head.metadata())
    if (key != "general.alignment") out.set(key, value);
  for (const auto& t : head.tensors()) out.add_tensor(t.name, t.type, t.ne);
  out.add_tensor("d2t", gguf::TensorType::I64, {n_draft});
  out.add_tensor("output.weight", gguf::TensorType::F32, {D, n_draft});
  out.write_header();
  for (const auto& t : head.tensors())
    out.write_tensor_data(t.name, std::span<const uint8_t>(t.data, t.n_bytes));
  std::vector<int64_t> d2t(static_cast<size_t>(n_draft));
  for (int64_t i = 0; i < n_draft; ++i) d2t[static_cast<size_t>(i)] = 3 * i;
  out.write_tensor_data("d2t", std::as_bytes(std::span(d2t)));
  std::vector<float> w(static_cast<size_t>(D * n_draft));
  std::mt19937 rng(3);
  std::normal_distribution<float> normal(0.0f, 0.2f);
  for (float& x : w) x = normal(rng);
  out.write_tensor_data("output.weight", std::as_bytes(std::span(w)));
  out.finish();
}

// A short speculative session of `target` drafted by `head`.
void draft_with(const model::Model& target, const model::Model& head, FuzzedDataProvider& in) {
  kernels::ThreadPool pool(1);
  const int64_t n_ctx = 48, ubatch = 8;
  const bool argmax = in.ConsumeBool();
  auto drafter = spec::make_head_drafter(head, pool, n_ctx, ubatch, {}, argmax);
  engine::Generator gen(target, pool, n_ctx, ubatch);
  sampling::SamplerConfig config;
  config.temperature = in.ConsumeBool() ? 0.8f : 0.0f;
  const int64_t n_vocab = target.hparams().n_vocab;
  const sampling::Sampler sampler(config, static_cast<int>(n_vocab));
  sampling::SeededRng rng(in.ConsumeIntegral<uint8_t>());
  engine::GenerateOptions options;
  options.n_predict = 12;  // room for a first cycle of more drafts than a DFlash block holds
  options.ignore_eos = true;
  options.drafter = drafter.get();
  options.draft_max = in.ConsumeIntegralInRange(1, engine::kMaxDraft);
  const std::vector<int32_t> prompt = {1, static_cast<int32_t>(2 % n_vocab),
                                       static_cast<int32_t>(n_vocab - 1)};
  gen.generate(prompt, sampler, rng, options, [](int32_t) { return false; });
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  State& s = state();
  const auto target_path = fuzz::shared_dir() / "fixtures" / "tiny-llama.gguf";
  s.target = model::load_model(target_path);
  // Each base is written once, opened (mapped) and its file removed at once.
  const auto open_removed = [](const std::filesystem::path& path) {
    auto file = gguf::File::open(path);
    std::filesystem::remove(path);
    return file;
  };
  const auto eagle3 = temp_file("eagle3");
  testing::write_echo_eagle3(*s.target, eagle3);
  s.bases[kEagle3] = open_removed(eagle3);
  const auto reduced = temp_file("eagle3-d2t");
  write_reduced_vocab(*s.bases[kEagle3], reduced);
  s.bases[kEagle3ReducedVocab] = open_removed(reduced);
  const auto dflash = temp_file("dflash");
  testing::write_random_dflash(*s.target, dflash);
  s.bases[kDFlash] = open_removed(dflash);
  const auto mtp = temp_file("mtp-target");
  testing::write_target_with_echo_mtp(target_path, mtp);
  s.bases[kTargetWithMtp] = open_removed(mtp);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  FuzzedDataProvider in(data, size);
  State& s = state();
  const auto base = static_cast<Base>(in.ConsumeIntegralInRange<int>(0, kBaseCount - 1));
  static const std::filesystem::path scratch = temp_file("drafter");
  if (!fuzz::write_edited(in, *s.bases[base], kEdits, scratch)) return 0;
  try {
    if (base == kTargetWithMtp) {
      const auto target = model::load_model(gguf::File::open(scratch));
      const auto head = model::heads::NextN::load(*target);
      draft_with(*target, *head, in);
    } else {
      const auto head = model::heads::load_head(scratch, *s.target);
      draft_with(*s.target, *head, in);
    }
  } catch (const Error&) {
    // A clear refusal naming what does not fit: the intended outcome.
  }
  return 0;
}
