#include "bench/bench_run.h"

#include <fmt/format.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <memory>
#include <set>
#include <thread>

#include "bench/build_info.h"
#include "bench/cache_figures.h"
#include "bench/evidence_gate.h"
#include "bench/model_info.h"
#include "bench/prompt_file.h"
#include "bench/statistics.h"
#include "common/error.h"
#include "engine/generator.h"
#include "gguf/file.h"
#include "kernels/thread_pool.h"
#include "model/heads/load_head.h"
#include "model/heads/nextn.h"
#include "model/model.h"
#include "spec/auto_sources.h"
#include "spec/head_drafters.h"
#include "spec/model_drafter.h"
#include "spec/ngram_drafter.h"
#include "spec/vocab_match.h"
#include "tokenizer/tokenizer.h"

namespace augur::bench {
namespace {

using nlohmann::json;

struct Prompt {
  std::string id;
  std::vector<int32_t> tokens;
};

std::vector<Prompt> read_prompts(const BenchRunConfig& config, const tokenizer::Tokenizer& tok) {
  std::vector<Prompt> prompts;
  for (auto& line : read_prompt_file(config.prompts_path, config.max_prompts)) {
    Prompt p;
    p.id = std::move(line.id);
    p.tokens = tok.encode(line.text, true, false);
    if (p.tokens.empty()) {
      throw FormatError(
          fmt::format("{}: prompt {} encodes to no tokens", config.prompts_path, p.id));
    }
    prompts.push_back(std::move(p));
  }
  return prompts;
}

json sampler_json(const sampling::SamplerConfig& s) {
  return {{"temperature", s.temperature},
          {"top_k", s.top_k},
          {"top_p", s.top_p},
          {"min_p", s.min_p},
          {"repeat_penalty", s.repeat_penalty},
          {"repeat_last_n", s.repeat_last_n}};
}

// auto_sources: the sources an auto arm plans over, resolved (e.g. "model+ngram+layerskip").
json arm_json(const ArmSpec& arm, const std::string& auto_sources) {
  json j = {{"name", arm.name},
            {"kind", arm.spec ? "spec" : "ar"},
            {"role", arm.spec ? "subject" : "baseline"},
            {"config_key", arm.config_key()}};
  if (arm.spec) {
    j["drafter"] = arm.drafter;
    j["draft_max"] = arm.draft_max;
    if (arm.drafter == "layerskip") j["layers"] = arm.layers;
    if (arm.drafter == "ngram") j["ngram_max"] = arm.ngram_max;
    if (arm.drafter == "auto") j["sources"] = auto_sources;
    if (arm.rule) j["accept_rule"] = *arm.rule == spec::SampledRule::kToken ? "token" : "block";
  }
  return j;
}

}  // namespace

json run_benchmark(const BenchRunConfig& config, const BenchProgress& progress) {
  if (config.repeats < 1) throw InvalidArgument("--repeats must be at least 1");
  if (config.warmup < 0) throw InvalidArgument("--warmup must be at least 0");
  if (config.n_gen < 1) throw InvalidArgument("--n-gen must be at least 1");
  config.sampler.validate();
  const bool have_draft = !config.draft_path.empty();
  const bool have_head = !config.head_path.empty();
  std::string head_arch = have_head ? std::string(gguf::File::open(config.head_path)
                                                      ->get_string_opt("general.architecture")
                                                      .value_or(""))
                                    : std::string();
  if (have_head && !model::heads::is_head_arch(head_arch)) {
    throw InvalidArgument(
        fmt::format("--draft-head {}: general.architecture is '{}', not a drafter head (eagle3 or "
                    "dflash)",
                    config.head_path, head_arch));
  }
  // Without a head file, a target with an MTP / NextN layer brings its own head.
  if (!have_head) {
    const auto target_file = gguf::File::open(config.target_path);
    const std::string arch(target_file->get_string_opt("general.architecture").value_or(""));
    if (target_file->get_int_opt(arch + ".nextn_predict_layers").value_or(0) > 0) {
      head_arch = "mtp";
    }
  }
  // The sources each auto arm plans over: the ones it names, or all at hand.
  const auto auto_sources = [&](const ArmSpec& a) {
    return a.auto_sources.empty()
               ? spec::all_auto_sources(have_draft, head_arch)
               : spec::parse_auto_sources(a.auto_sources, fmt::format("arm '{}'", a.name));
  };
  const auto uses_draft = [&](const ArmSpec& a) {
    return a.drafter == "model" || (a.drafter == "auto" && auto_sources(a).model);
  };
  const bool needs_draft = std::any_of(config.arms.begin(), config.arms.end(), uses_draft);
  if (needs_draft && !have_draft) {
    throw InvalidArgument("a spec:model or spec:auto:model arm needs a draft model: give -md FILE");
  }
  if (!needs_draft && have_draft) {
    throw InvalidArgument("-md given but no spec:model or spec:auto arm uses it");
  }
  // The head kind an arm drafts with ("eagle3", "dflash", "mtp"), or "".
  const auto head_of = [&](const ArmSpec& a) -> std::string_view {
    std::string_view kind;
    if (spec::reads_head(a.drafter, &kind)) return kind;
    if (a.drafter != "auto") return {};
    const spec::AutoSources s = auto_sources(a);
    return s.eagle3 ? "eagle3" : s.dflash ? "dflash" : s.mtp ? "mtp" : "";
  };
  bool needs_head = false;
  for (const auto& a : config.arms) {
    const std::string_view kind = head_of(a);
    if (kind.empty()) continue;
    needs_head = true;
    if (kind != head_arch) {
      throw InvalidArgument(fmt::format(
          "arm '{}' drafts with a {} head: {}", a.name, kind,
          kind == "mtp" ? std::string("the target has no MTP / NextN layer")
          : have_head   ? fmt::format("give one with --draft-head (the one given is {})", head_arch)
                        : std::string("give one with --draft-head")));
    }
  }
  if (!needs_head && have_head) {
    throw InvalidArgument(
        "--draft-head given but no spec:eagle3, spec:dflash or spec:auto arm uses it");
  }

  auto target = model::load_model(config.target_path);
  std::unique_ptr<model::Model> draft;
  if (needs_draft) {
    draft = model::load_model(config.draft_path);
    spec::check_same_vocabulary(*target, *draft);
  }
  std::unique_ptr<model::Model> head;
  if (needs_head) {
    head = head_arch == "mtp" ? model::heads::NextN::load(*target)
                              : model::heads::load_head(config.head_path, *target);
  }
  const auto tok = tokenizer::Tokenizer::from_gguf(target->file());
  const auto prompts = read_prompts(config, *tok);
  const int threads =
      config.threads > 0 ? config.threads : static_cast<int>(std::thread::hardware_concurrency());
  kernels::ThreadPool pool(std::max(1, threads));

  int k_max = 0;
  size_t longest = 0;
  for (const auto& a : config.arms) k_max = std::max(k_max, a.draft_max);
  for (const auto& p : prompts) longest = std::max(longest, p.tokens.size());
  const int64_t n_ctx =
      config.n_ctx > 0 ? config.n_ctx : static_cast<int64_t>(longest) + config.n_gen + k_max + 1;

  const cache::CacheTypes& types = config.cache_types;
  engine::Generator gen(*target, pool, n_ctx, config.ubatch, types);
  std::vector<std::unique_ptr<spec::DraftSource>> drafters;
  for (const auto& a : config.arms) {
    if (!a.spec) {
      drafters.emplace_back();
    } else if (a.drafter == "model") {
      drafters.push_back(
          std::make_unique<spec::ModelDrafter>(*draft, pool, n_ctx, config.ubatch, -1, types));
    } else if (spec::reads_head(a.drafter)) {
      drafters.push_back(spec::make_head_drafter(*head, pool, n_ctx, config.ubatch, types,
                                                 a.drafter.ends_with("-argmax")));
    } else if (a.drafter == "ngram") {
      drafters.push_back(std::make_unique<spec::NgramDrafter>(1, a.ngram_max));
    } else if (a.drafter == "auto") {
      drafters.push_back(spec::make_auto_drafter(auto_sources(a), *target, draft.get(), pool, n_ctx,
                                                 config.ubatch, a.draft_max, types, head.get()));
    } else {
      drafters.push_back(std::make_unique<spec::ModelDrafter>(*target, pool, n_ctx, config.ubatch,
                                                              a.layers, types));
    }
  }
  const sampling::Sampler sampler(config.sampler, static_cast<int>(target->hparams().n_vocab));
  std::ofstream policy_log;
  if (!config.policy_log_path.empty()) {
    policy_log.open(config.policy_log_path);
    if (!policy_log) {
      throw InvalidArgument(
          fmt::format("--policy-log {}: cannot open the file for writing", config.policy_log_path));
    }
    for (auto& d : drafters) {
      if (auto* automatic = dynamic_cast<spec::AutoDrafter*>(d.get()))
        automatic->set_log(&policy_log);
    }
  }

  json report = {
      {"schema", "augur.bench/1"},  {"kind", "run"},
      {"created", utc_timestamp()}, {"machine", machine_info(pool.size())},
      {"build", build_info()},      {"models", json::array({model_info("target", *target)})}};
  if (draft) report["models"].push_back(model_info("draft", *draft));
  // An MTP layer's weights are in the target's file, whose bytes the target already counts.
  if (head && head_arch != "mtp") report["models"].push_back(model_info("head", *head));
  const bool rss_per_sample = reset_peak_rss();
  report["config"] = {
      {"prompts_file", report_path(config.prompts_path)},
      {"prompts_sha256", sha256_file(config.prompts_path)},
      {"n_prompts", prompts.size()},
      {"n_gen", config.n_gen},
      {"repeats", config.repeats},
      {"warmup", config.warmup},
      {"threads", pool.size()},
      {"ubatch", config.ubatch},
      {"cache_type_k", cache::cache_type_name(types.k)},
      {"cache_type_v", cache::cache_type_name(types.v)},
      {"n_ctx", n_ctx},
      {"ignore_eos", true},
      {"sampler", sampler_json(config.sampler)},
      {"accept_rule", config.sampled_rule == spec::SampledRule::kBlock ? "block" : "token"},
      {"seed", config.seed},
      {"peak_rss_scope", rss_per_sample ? "sample" : "process"}};
  report["arms"] = json::array();
  for (const auto& a : config.arms)
    report["arms"].push_back(arm_json(a, a.drafter == "auto" ? auto_sources(a).name() : ""));
  report["samples"] = json::array();

  const size_t n_arms = config.arms.size();
  const size_t rounds = static_cast<size_t>(config.warmup + config.repeats);
  const size_t total = rounds * prompts.size() * n_arms;
  size_t done = 0;
  const bool greedy = sampler.greedy();
  for (size_t round = 0; round < rounds; ++round) {
    const bool warmup = round < static_cast<size_t>(config.warmup);
    for (size_t p = 0; p < prompts.size(); ++p) {
      for (size_t j = 0; j < n_arms; ++j) {
        // Rotating order: each arm runs first, second, ... in turn across rounds and prompts.
        const size_t a = (j + round + p) % n_arms;
        const ArmSpec& arm = config.arms[a];
        gen.reset();
        if (drafters[a]) drafters[a]->reset();
        reset_peak_rss();
        engine::GenerateOptions opt;
        opt.n_predict = config.n_gen;
        opt.ignore_eos = true;
        opt.drafter = drafters[a].get();
        opt.draft_max = std::max(1, arm.draft_max);
        opt.sampled_rule = arm.rule.value_or(config.sampled_rule);
        // The same seed for every arm of a (round, prompt): sampled arms see the same RNG stream.
        sampling::SeededRng rng(config.seed + round * 1000003u + p);
        const auto r = gen.generate(prompts[p].tokens, sampler, rng, opt, {});
        const auto& st = r.stats;
        const auto& sp = st.spec;
        report["samples"].push_back(
            {{"arm", arm.name},
             {"prompt", prompts[p].id},
             {"repeat", static_cast<int>(round) - config.warmup},
             {"warmup", warmup},
             {"order", j},
             {"timing_scope", "decode_only"},
             {"greedy", greedy},
             {"n_prompt", st.n_prompt},
             {"n_gen", st.n_gen},
             {"prefill_s", st.prefill_s},
             {"prefill_tok_s", st.prefill_tok_s()},
             {"decode_s", st.decode_s},
             {"decode_tok_s", st.decode_tok_s()},
             {"cycles", sp.cycles},
             {"drafted", sp.drafted},
             {"accepted", sp.accepted},
             {"tau", sp.tau()},
             {"accept_hist", sp.accept_hist},
             {"draft_s", sp.draft_s},
             {"verify_s", sp.verify_s},
             {"peak_rss_bytes", peak_rss_bytes()},
             {"arm_bytes", gen.memory_bytes() + (drafters[a] ? drafters[a]->memory_bytes() : 0)},
             {"cache_memory",
              {{"target_cache", cache_figures(gen.cache())},
               {"draft_caches", draft_cache_figures(drafters[a].get())}}},
             {"tokens", r.tokens}});
        if (const auto* automatic = dynamic_cast<const spec::AutoDrafter*>(drafters[a].get())) {
          report["samples"].back()["policy"] = spec::to_json(automatic->stats());
        }
        if (progress) {
          progress(
              ++done, total,
              fmt::format("{} {} {}{}", arm.name, prompts[p].id, warmup ? "warm-up" : "repeat ",
                          warmup ? "" : std::to_string(round - config.warmup)));
        }
      }
    }
  }
  report["summary"] = summarize_run(report);
  return report;
}

}  // namespace augur::bench
