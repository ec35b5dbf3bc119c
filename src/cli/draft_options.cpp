#include "cli/draft_options.h"

#include <fmt/format.h>

#include <charconv>

#include "cli/model_loading.h"
#include "common/error.h"
#include "engine/generator.h"
#include "spec/model_drafter.h"
#include "spec/ngram_drafter.h"
#include "spec/vocab_match.h"

namespace augur::cli {
namespace {

// The integer after "name:" in `spec`, or InvalidArgument.
int parse_suffix(const std::string& spec, size_t colon) {
  const std::string text = spec.substr(colon + 1);
  int value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size()) {
    throw InvalidArgument(fmt::format("--draft {}: '{}' is not a whole number", spec, text));
  }
  return value;
}

}  // namespace

void DraftOptions::add_options(CLI::App& app) {
  app.add_option("--draft", draft,
                 "drafter for speculative decoding: none (plain AR), model (needs -md), "
                 "ngram[:N] (prompt lookup, n-grams of N..1 tokens, N default 4), layerskip:L "
                 "(the target's first L layers). Default: model with -md, else none");
  // "-md" (llama.cpp's spelling) is rewritten to --model-draft by main(): CLI11 short names are
  // one character.
  app.add_option("--model-draft", draft_model,
                 "(also -md) draft model GGUF, same vocabulary as the target; implies --draft "
                 "model");
  app.add_option("--draft-max", draft_max,
                 fmt::format("tokens drafted per cycle, 1..{}", engine::kMaxDraft))
      ->capture_default_str();
}

DraftSetup make_drafter(const DraftOptions& options, const model::Model& target,
                        kernels::ThreadPool& pool, int64_t n_ctx, int64_t ubatch) {
  const std::string kind =
      !options.draft.empty() ? options.draft : (options.draft_model.empty() ? "none" : "model");
  const auto colon = kind.find(':');
  const std::string name = kind.substr(0, colon);
  if (!options.draft_model.empty() && name != "model") {
    throw InvalidArgument(
        fmt::format("-md/--model-draft is only used with --draft model, not --draft {}", kind));
  }
  if (options.draft_max < 1 || options.draft_max > engine::kMaxDraft) {
    throw InvalidArgument(fmt::format("--draft-max {} is out of range: use 1..{}",
                                      options.draft_max, engine::kMaxDraft));
  }
  DraftSetup setup;
  if (name == "none" && colon == std::string::npos) return setup;
  setup.draft_max = options.draft_max;
  if (name == "model" && colon == std::string::npos) {
    if (options.draft_model.empty()) {
      throw InvalidArgument("--draft model needs a draft model: give -md FILE");
    }
    setup.draft_model = load_model_with_progress(options.draft_model);
    spec::check_same_vocabulary(target, *setup.draft_model);
    setup.drafter = std::make_unique<spec::ModelDrafter>(*setup.draft_model, pool, n_ctx, ubatch);
  } else if (name == "ngram") {
    const int n_max = colon == std::string::npos ? 4 : parse_suffix(kind, colon);
    if (n_max < 1 || n_max > 64) {
      throw InvalidArgument(fmt::format("--draft {}: n-gram size must be in 1..64", kind));
    }
    setup.drafter = std::make_unique<spec::NgramDrafter>(1, n_max);
  } else if (name == "layerskip") {
    if (colon == std::string::npos) {
      throw InvalidArgument("--draft layerskip needs a depth: layerskip:L with L layers");
    }
    const int depth = parse_suffix(kind, colon);
    const auto n_layer = static_cast<int>(target.hparams().n_layer);
    if (depth < 1 || depth > n_layer) {
      throw InvalidArgument(
          fmt::format("--draft {}: depth {} is out of range: the target has {} layers (use 1..{})",
                      kind, depth, n_layer, n_layer));
    }
    setup.drafter = std::make_unique<spec::ModelDrafter>(target, pool, n_ctx, ubatch, depth);
  } else {
    throw InvalidArgument(fmt::format(
        "--draft {} is not a drafter: use none, model, ngram[:N] or layerskip:L", kind));
  }
  return setup;
}

}  // namespace augur::cli
