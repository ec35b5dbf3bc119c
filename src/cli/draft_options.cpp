#include "cli/draft_options.h"

#include <fmt/format.h>

#include <charconv>
#include <fstream>

#include "cli/model_loading.h"
#include "common/error.h"
#include "engine/generator.h"
#include "gguf/file.h"
#include "model/heads/load_head.h"
#include "model/heads/nextn.h"
#include "spec/auto_drafter.h"
#include "spec/auto_sources.h"
#include "spec/head_drafters.h"
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
                 "drafter for speculative decoding: auto[:SOURCES] (default: a policy picks "
                 "the source and block size every cycle among model (with -md), ngram and "
                 "layerskip; SOURCES restricts them, e.g. auto:model+ngram), none (plain AR), "
                 "model (needs -md), eagle3 (an EAGLE-3 head reading the target's hidden "
                 "states, -md FILE), dflash (a DFlash block drafter reading the target's hidden "
                 "states, -md FILE), mtp (the target's own MTP / NextN layer), ngram[:N] (prompt "
                 "lookup, n-grams of N..1 tokens, N default "
                 "4), layerskip:L (the target's first L layers)");
  // "-md" (llama.cpp's spelling) is rewritten to --model-draft by main(): CLI11 short names are
  // one character.
  app.add_option(
      "--model-draft", draft_model,
      "(also -md) draft model GGUF, same vocabulary as the target, or a drafter head made "
      "for the target: EAGLE-3 (general.architecture eagle3) or DFlash (dflash)");
  app.add_option(
         "--draft-max", draft_max,
         fmt::format("tokens drafted per cycle, 1..{} (with auto: the most)", engine::kMaxDraft))
      ->capture_default_str();
  app.add_option_function<std::string>(
         "--accept",
         [this](const std::string& rule) {
           sampled_rule = rule == "token" ? spec::SampledRule::kToken : spec::SampledRule::kBlock;
         },
         "how sampled cycles keep drafts, both exactly AR's law: block (the whole block judged "
         "at once, Sun et al. 2025: never fewer kept drafts in expectation) or token "
         "(Leviathan-Chen, token by token)")
      ->check(CLI::IsMember({"block", "token"}))
      ->type_name("block|token")
      ->default_str("block");
  app.add_option("--policy-log", policy_log,
                 "with --draft auto: write one JSON line per cycle (source, k, predicted and "
                 "actual accepted tokens and seconds) to FILE");
}

namespace {

struct DraftKind {
  std::string kind;  // as given, e.g. "auto:model+ngram"
  std::string name;  // before the colon
  size_t colon = std::string::npos;
};

// Validates the option combination; InvalidArgument names the offending option.
DraftKind check_options(const DraftOptions& options) {
  DraftKind k;
  k.kind = !options.draft.empty() ? options.draft : "auto";
  k.colon = k.kind.find(':');
  k.name = k.kind.substr(0, k.colon);
  if (!options.draft_model.empty() && k.name != "model" && k.name != "auto" &&
      !model::heads::is_head_arch(k.name)) {
    throw InvalidArgument(fmt::format(
        "-md/--model-draft is only used with --draft model, eagle3, dflash or auto, not --draft {}",
        k.kind));
  }
  if (!options.policy_log.empty() && k.name != "auto") {
    throw InvalidArgument(
        fmt::format("--policy-log is only written with --draft auto, not --draft {}", k.kind));
  }
  if (options.draft_max < 1 || options.draft_max > engine::kMaxDraft) {
    throw InvalidArgument(fmt::format("--draft-max {} is out of range: use 1..{}",
                                      options.draft_max, engine::kMaxDraft));
  }
  if (k.name == "model" && k.colon == std::string::npos && options.draft_model.empty()) {
    throw InvalidArgument("--draft model needs a draft model: give -md FILE");
  }
  if (model::heads::is_head_arch(k.name) && options.draft_model.empty()) {
    throw InvalidArgument(
        fmt::format("--draft {0} needs the {0} drafter's GGUF file: give -md FILE", k.name));
  }
  return k;
}

}  // namespace

std::unique_ptr<model::Model> load_draft_model(const DraftOptions& options,
                                               const model::Model& target) {
  const DraftKind k = check_options(options);
  // The target's own MTP layer: asked for by name, or one of auto's sources when the target has
  // one and no -md takes the head's place.
  const bool auto_mtp =
      k.name == "auto" && options.draft_model.empty() && target.hparams().n_nextn > 0 &&
      (k.colon == std::string::npos ||
       spec::parse_auto_sources(std::string_view(k.kind).substr(k.colon + 1), "--draft " + k.kind)
           .mtp);
  if ((k.name == "mtp" && k.colon == std::string::npos) || auto_mtp) {
    return model::heads::NextN::load(target);
  }
  if (options.draft_model.empty()) return nullptr;
  // A drafter head (EAGLE-3, DFlash) reads the target and is loaded for it; anything else is a
  // model.
  const std::string arch(
      gguf::File::open(options.draft_model)->get_string_opt("general.architecture").value_or(""));
  const bool head = model::heads::is_head_arch(arch);
  if (head && k.name == "model") {
    throw InvalidArgument(
        fmt::format("-md {} is a drafter head ({}), not a draft model: use --draft {} (or auto)",
                    options.draft_model, arch, arch));
  }
  if (model::heads::is_head_arch(k.name) && arch != k.name) {
    throw InvalidArgument(fmt::format(
        "-md {}: general.architecture is '{}', but --draft {} needs a file of architecture '{}'",
        options.draft_model, arch, k.name, k.name));
  }
  if (head) return model::heads::load_head(options.draft_model, target);
  auto draft_model = load_model_with_progress(options.draft_model);
  spec::check_same_vocabulary(target, *draft_model);
  return draft_model;
}

std::unique_ptr<spec::DraftSource> make_draft_source(
    const DraftOptions& options, const model::Model& target, const model::Model* draft_model,
    kernels::ThreadPool& pool, int64_t n_ctx, int64_t ubatch, cache::CacheTypes cache_types) {
  const DraftKind k = check_options(options);
  const std::string& kind = k.kind;
  const size_t colon = k.colon;
  if (k.name == "none" && colon == std::string::npos) return nullptr;
  if (k.name == "auto") {
    // -md is a draft model or a drafter head: each is its own source.
    const std::string_view head_kind = draft_model ? spec::head_kind(*draft_model) : "";
    const model::Model* head = head_kind.empty() ? nullptr : draft_model;
    const model::Model* lm = head ? nullptr : draft_model;
    const spec::AutoSources sources =
        colon == std::string::npos
            ? spec::all_auto_sources(lm != nullptr, head_kind)
            : spec::parse_auto_sources(std::string_view(kind).substr(colon + 1), "--draft " + kind);
    return spec::make_auto_drafter(sources, target, lm, pool, n_ctx, ubatch, options.draft_max,
                                   cache_types, head);
  }
  if (k.name == "model" && colon == std::string::npos) {
    AUGUR_CHECK(draft_model != nullptr, "--draft model is given its loaded draft model");
    return std::make_unique<spec::ModelDrafter>(*draft_model, pool, n_ctx, ubatch, -1, cache_types);
  }
  if ((k.name == "eagle3" || k.name == "dflash" || k.name == "mtp") && colon == std::string::npos) {
    AUGUR_CHECK(draft_model != nullptr && spec::head_kind(*draft_model) == k.name,
                "--draft eagle3/dflash/mtp is given its loaded head");
    return spec::make_head_drafter(*draft_model, pool, n_ctx, ubatch, cache_types);
  }
  if (k.name == "ngram") {
    const int n_max = colon == std::string::npos ? 4 : parse_suffix(kind, colon);
    if (n_max < 1 || n_max > 64) {
      throw InvalidArgument(fmt::format("--draft {}: n-gram size must be in 1..64", kind));
    }
    return std::make_unique<spec::NgramDrafter>(1, n_max);
  }
  if (k.name == "layerskip") {
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
    return std::make_unique<spec::ModelDrafter>(target, pool, n_ctx, ubatch, depth, cache_types);
  }
  throw InvalidArgument(
      fmt::format("--draft {} is not a drafter: use auto[:SOURCES], none, model, eagle3, dflash, "
                  "mtp, ngram[:N] or "
                  "layerskip:L",
                  kind));
}

DraftSetup make_drafter(const DraftOptions& options, const model::Model& target,
                        kernels::ThreadPool& pool, int64_t n_ctx, int64_t ubatch,
                        cache::CacheTypes cache_types) {
  DraftSetup setup;
  setup.draft_model = load_draft_model(options, target);
  setup.drafter =
      make_draft_source(options, target, setup.draft_model.get(), pool, n_ctx, ubatch, cache_types);
  if (!setup.drafter) return setup;
  setup.draft_max = options.draft_max;
  if (!options.policy_log.empty()) {
    setup.policy_log = std::make_unique<std::ofstream>(options.policy_log);
    if (!*setup.policy_log) {
      throw InvalidArgument(
          fmt::format("--policy-log {}: cannot open the file for writing", options.policy_log));
    }
    static_cast<spec::AutoDrafter&>(*setup.drafter).set_log(setup.policy_log.get());
  }
  return setup;
}

nlohmann::json policy_json(const spec::DraftSource* drafter) {
  const auto* automatic = dynamic_cast<const spec::AutoDrafter*>(drafter);
  return automatic ? spec::to_json(automatic->stats()) : nlohmann::json();
}

std::string policy_summary(const spec::DraftSource* drafter) {
  const auto* automatic = dynamic_cast<const spec::AutoDrafter*>(drafter);
  if (!automatic) return {};
  const spec::PolicyStats& st = automatic->stats();
  const auto cycles = static_cast<double>(std::max<int64_t>(st.cycles(), 1));
  std::string by_source;
  for (size_t s = 0; s < st.sources.size(); ++s) {
    by_source += fmt::format("{} {}, ", st.sources[s], st.cycles_by_source[s]);
  }
  return fmt::format(
      "policy: cycles {}ar {} ({} exploring) | mean k {:.2f} | tokens/cycle predicted {:.2f}, "
      "observed {:.2f} | ms/cycle predicted {:.2f}, observed {:.2f}",
      by_source, st.ar_steps, st.explorations, st.mean_k(), st.predicted_tokens / cycles,
      st.observed_tokens / cycles, 1e3 * st.predicted_s / cycles, 1e3 * st.observed_s / cycles);
}

}  // namespace augur::cli
