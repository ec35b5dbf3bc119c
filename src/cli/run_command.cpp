// `augur run`: generate text from a prompt, streaming it to stdout, stats to stderr;
// or, with --json, exactly one JSON object on stdout.
#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <random>

#include "bench/build_info.h"
#include "bench/cache_figures.h"
#include "cli/commands.h"
#include "cli/draft_options.h"
#include "cli/exit_codes.h"
#include "cli/interrupt.h"
#include "cli/model_loading.h"
#include "cli/prompt_input.h"
#include "common/error.h"
#include "engine/generator.h"
#include "tokenizer/tokenizer.h"

namespace augur::cli {
namespace {

struct RunOptions {
  RuntimeOptions runtime;
  PromptInput prompt;
  int n_predict = 128;
  sampling::SamplerConfig sampler;
  std::optional<uint64_t> seed;
  bool ignore_eos = false;
  bool json = false;
  DraftOptions draft;
};

nlohmann::json stats_json(const engine::GenerateStats& s, const spec::DraftSource* drafter) {
  nlohmann::json out = {{"n_prompt", s.n_prompt},
                        {"n_gen", s.n_gen},
                        {"prefill_s", s.prefill_s},
                        {"decode_s", s.decode_s},
                        {"prefill_tok_s", s.prefill_tok_s()},
                        {"decode_tok_s", s.decode_tok_s()}};
  const auto& sp = s.spec;
  if (!sp.drafter.empty()) {
    out["draft"] = sp.drafter;
    out["cycles"] = sp.cycles;
    out["drafted"] = sp.drafted;
    out["accepted"] = sp.accepted;
    out["tau"] = sp.tau();
    out["accept_hist"] = sp.accept_hist;
    out["drafted_at"] = sp.drafted_at;
    out["accepted_at"] = sp.accepted_at;
    out["draft_s"] = sp.draft_s;
    out["verify_s"] = sp.verify_s;
    // Sampling, acceptance and bookkeeping: the decode time neither drafting nor verifying.
    out["other_s"] = std::max(0.0, s.decode_s - sp.draft_s - sp.verify_s);
    if (auto policy = policy_json(drafter); !policy.is_null()) out["policy"] = std::move(policy);
  }
  return out;
}

// What the session's caches hold (with the raw figures behind it) and the process's peak RSS.
nlohmann::json memory_json(const engine::Generator& generator, const spec::DraftSource* drafter) {
  return {{"peak_rss_bytes", bench::peak_rss_bytes()},
          {"target_cache", bench::cache_figures(generator.cache())},
          {"draft_caches", bench::draft_cache_figures(drafter)}};
}

std::string mib(int64_t bytes) {
  return fmt::format("{:.1f} MiB", static_cast<double>(bytes) / (1024.0 * 1024.0));
}

// "memory: KV 1.2 MiB (full 0.4, window 0.8), state 0.0 MiB | draft model: KV ... | peak RSS ..."
std::string memory_summary(const nlohmann::json& memory) {
  auto cache_text = [](const nlohmann::json& c) {
    return fmt::format("KV {} (full {}, window {}), state {}", mib(c["kv_bytes"].get<int64_t>()),
                       mib(c["full"]["bytes"].get<int64_t>()),
                       mib(c["window"]["bytes"].get<int64_t>()),
                       mib(c["state_bytes"].get<int64_t>()));
  };
  std::string line = "memory: " + cache_text(memory["target_cache"]);
  for (const auto& [label, c] : memory["draft_caches"].items()) {
    line += fmt::format(" | draft {}: {}", label, cache_text(c));
  }
  return line + " | peak RSS " + mib(memory["peak_rss_bytes"].get<int64_t>());
}

int run(const RunOptions& opt) {
  auto model = load_model_with_progress(opt.runtime.model_path);
  const auto tok = tokenizer::Tokenizer::from_gguf(model->file());
  const int64_t n_vocab = model->hparams().n_vocab;
  if (!opt.prompt.given())
    throw InvalidArgument("no prompt: give -p TEXT, -f FILE or --prompt-ids");
  const auto prompt = prompt_tokens(opt.prompt, *tok, n_vocab);

  sampling::SamplerConfig config = opt.sampler;
  config.seed = opt.seed ? *opt.seed : std::random_device{}();
  const sampling::Sampler sampler(config, static_cast<int>(n_vocab));
  sampling::SeededRng rng(config.seed);

  kernels::ThreadPool pool(opt.runtime.resolved_threads());
  const int64_t n_ctx = opt.runtime.resolved_ctx(*model);
  const cache::CacheTypes cache_types = opt.runtime.cache_types();
  engine::Generator generator(*model, pool, n_ctx, opt.runtime.ubatch, cache_types);
  const DraftSetup draft =
      make_drafter(opt.draft, *model, pool, n_ctx, opt.runtime.ubatch, cache_types);
  engine::GenerateOptions gen;
  gen.n_predict = opt.n_predict;
  gen.ignore_eos = opt.ignore_eos;
  gen.drafter = draft.drafter.get();
  gen.draft_max = draft.draft_max;
  gen.sampled_rule = opt.draft.sampled_rule;

  install_interrupt_handler();
  tokenizer::StreamDecoder stream(*tok);
  // The text is the generated pieces as streamed (decode() would drop an SPM leading space that
  // is really part of the continuation).
  std::string text;
  auto on_token = [&](int32_t token) {
    const std::string piece = stream.push(token);
    if (opt.json) {
      text += piece;
    } else {
      std::fwrite(piece.data(), 1, piece.size(), stdout);
      std::fflush(stdout);
    }
    return !interrupted();
  };
  const auto result = generator.generate(
      prompt, sampler, rng, gen, [&](int32_t t) { return tok->is_eog(t); }, on_token);
  const auto& s = result.stats;
  const std::string tail = stream.finish();
  const nlohmann::json memory = memory_json(generator, draft.drafter.get());
  if (opt.json) {
    nlohmann::json out = {
        {"prompt_tokens", prompt}, {"tokens", result.tokens},
        {"text", text + tail},     {"stop", std::string(engine::stop_reason_name(result.stop))},
        {"seed", config.seed},     {"stats", stats_json(s, draft.drafter.get())}};
    out["stats"]["memory"] = memory;
    out["stats"]["cache_type_k"] = cache::cache_type_name(cache_types.k);
    out["stats"]["cache_type_v"] = cache::cache_type_name(cache_types.v);
    std::cout << out.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
  } else {
    std::fwrite(tail.data(), 1, tail.size(), stdout);
    std::fputc('\n', stdout);
    std::fflush(stdout);
  }
  std::fprintf(stderr,
               "prefill: %lld tokens in %.3f s (%.1f tok/s) | decode: %lld tokens in %.3f s "
               "(%.1f tok/s) | stop: %s | seed: %llu | threads: %d\n",
               static_cast<long long>(s.n_prompt), s.prefill_s, s.prefill_tok_s(),
               static_cast<long long>(s.n_gen), s.decode_s, s.decode_tok_s(),
               std::string(engine::stop_reason_name(result.stop)).c_str(),
               static_cast<unsigned long long>(config.seed), pool.size());
  if (const auto& sp = s.spec; !sp.drafter.empty()) {
    std::fprintf(stderr,
                 "speculative: %s, k=%d | cycles %lld | drafted %lld, accepted %lld (%.1f%%) | "
                 "tau %.2f | draft %.3f s, verify %.3f s, other %.3f s\n",
                 sp.drafter.c_str(), draft.draft_max, static_cast<long long>(sp.cycles),
                 static_cast<long long>(sp.drafted), static_cast<long long>(sp.accepted),
                 sp.drafted > 0 ? 100.0 * static_cast<double>(sp.accepted) / sp.drafted : 0.0,
                 sp.tau(), sp.draft_s, sp.verify_s,
                 std::max(0.0, s.decode_s - sp.draft_s - sp.verify_s));
    if (const auto line = policy_summary(draft.drafter.get()); !line.empty()) {
      std::fprintf(stderr, "%s\n", line.c_str());
    }
  }
  std::fprintf(stderr, "%s\n", memory_summary(memory).c_str());
  return result.stop == engine::StopReason::Cancelled ? kExitInterrupted : kExitOk;
}

}  // namespace

void add_run_command(CLI::App& app, int& exit_code) {
  auto opt = std::make_shared<RunOptions>();
  auto* cmd = app.add_subcommand("run", "generate text from a prompt");
  opt->runtime.add_options(*cmd);
  opt->prompt.add_options(*cmd, /*with_ids=*/true);
  cmd->add_option("-n,--n-predict", opt->n_predict,
                  "tokens to generate (-1: until end of generation or a full context)")
      ->capture_default_str()
      ->check(CLI::Range(-1, 1 << 24));
  auto& sc = opt->sampler;
  cmd->add_option("--temp", sc.temperature, "temperature; 0 = greedy")->capture_default_str();
  cmd->add_option("--top-k", sc.top_k, "keep the k most likely tokens; 0 = off")
      ->capture_default_str();
  cmd->add_option("--top-p", sc.top_p, "nucleus sampling mass; 1 = off")->capture_default_str();
  cmd->add_option("--min-p", sc.min_p, "drop tokens below min-p x the top probability; 0 = off")
      ->capture_default_str();
  cmd->add_option("--repeat-penalty", sc.repeat_penalty, "penalty for recent tokens; 1 = off")
      ->capture_default_str();
  cmd->add_option("--repeat-last-n", sc.repeat_last_n,
                  "how many recent tokens the penalties see (-1: all)")
      ->capture_default_str();
  cmd->add_option("--presence-penalty", sc.presence_penalty,
                  "subtracted from the logit of every token in that window; 0 = off")
      ->capture_default_str();
  cmd->add_option("--frequency-penalty", sc.frequency_penalty,
                  "subtracted once per occurrence in that window; 0 = off")
      ->capture_default_str();
  cmd->add_option("--seed", opt->seed, "sampling seed (default: random, printed in the stats)");
  cmd->add_flag("--ignore-eos", opt->ignore_eos,
                "do not stop at end of generation: generate exactly n tokens");
  cmd->add_flag("--json", opt->json,
                "print one JSON object (prompt_tokens, tokens, text, stats) instead of text");
  opt->draft.add_options(*cmd);
  cmd->callback([opt, &exit_code] { exit_code = run(*opt); });
}

}  // namespace augur::cli
