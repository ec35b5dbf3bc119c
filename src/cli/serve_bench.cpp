#include "cli/serve_bench.h"

#include <fmt/format.h>
#include <httplib.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>

#include "bench/build_info.h"
#include "bench/evidence_gate.h"
#include "bench/model_info.h"
#include "bench/prompt_file.h"
#include "cli/serve_setup.h"
#include "common/error.h"
#include "engine/generator.h"
#include "gguf/file.h"
#include "server/http_server.h"
#include "tokenizer/tokenizer.h"

namespace augur::cli {
namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

constexpr int kCtxSlack = 16;  // rows past the longest prompt + max_tokens + a draft block

double seconds_between(Clock::time_point from, Clock::time_point to) {
  return std::chrono::duration<double>(to - from).count();
}

// --prompts, else the shared zoo prompts (AUGUR_SHARED_DIR, else ../shared as the scripts use).
std::string prompts_file(const ServeBenchConfig& config) {
  if (!config.prompts_path.empty()) return config.prompts_path;
  const char* env = std::getenv("AUGUR_SHARED_DIR");
  const std::filesystem::path shared = env != nullptr ? env : "../shared";
  const auto path = shared / "models" / "prompts-code.jsonl";
  if (!std::filesystem::exists(path)) {
    throw InvalidArgument(fmt::format(
        "--prompts not given and {} does not exist: give --prompts FILE.jsonl (one JSON object "
        "with a string \"prompt\" per line)",
        path.string()));
  }
  return path.string();
}

std::vector<std::string> read_prompts(const std::string& path) {
  std::vector<std::string> prompts;
  for (auto& line : bench::read_prompt_file(path)) prompts.push_back(std::move(line.text));
  return prompts;
}

void validate(const ServeBenchConfig& config) {
  if (config.clients.empty()) throw InvalidArgument("--clients: expected at least one count");
  for (int c : config.clients) {
    if (c < 1 || c > 256) {
      throw InvalidArgument(fmt::format("--clients: {} is out of range, expected 1..256", c));
    }
  }
  std::vector<int> sorted = config.clients;
  std::sort(sorted.begin(), sorted.end());
  if (std::adjacent_find(sorted.begin(), sorted.end()) != sorted.end()) {
    throw InvalidArgument("--clients: a client count is listed twice");
  }
  if (config.parallel < 0 || config.parallel > 256) {
    throw InvalidArgument(fmt::format("--parallel {}: expected 1..256", config.parallel));
  }
  if (config.max_tokens < 1) throw InvalidArgument("-n must be at least 1");
  if (config.requests_per_client < 1) throw InvalidArgument("--requests must be at least 1");
  if (config.repeats < 1) throw InvalidArgument("--repeats must be at least 1");
  if (config.draft.draft == "none") {
    throw InvalidArgument("--draft none: the spec arm needs a drafter (the ar arm runs without)");
  }
}

// One in-process server over its own ServeSetup, on a free loopback port.
struct ArmServer {
  std::string name;  // "ar" | "spec"
  std::unique_ptr<ServeSetup> setup;
  std::unique_ptr<server::HttpServer> http;
  std::thread serving;
  int port = 0;

  ArmServer(std::string arm, const ServeSetupOptions& options) : name(std::move(arm)) {
    setup = std::make_unique<ServeSetup>(options);
    server::ServerOptions http_options;
    http_options.host = "127.0.0.1";
    http_options.port = 0;
    http_options.log_requests = false;
    http_options.http_threads = options.parallel + options.resolved_queue() + 8;
    http = std::make_unique<server::HttpServer>(http_options);
    http->bind();
    port = http->bound_port();
    serving = std::thread([this] { http->serve(); });
    http->set_backend(setup->backend());
  }
  ~ArmServer() {
    http->stop();
    if (serving.joinable()) serving.join();
  }
  ArmServer(const ArmServer&) = delete;
  ArmServer& operator=(const ArmServer&) = delete;
};

// What one streamed request gave.
struct RequestRecord {
  int client = 0;
  int prompt = 0;
  double latency_s = 0;  // request sent -> last byte of the stream
  double ttft_s = 0;     // request sent -> first chunk with text
  int64_t completion_tokens = 0;
  std::string text;
  json stats;  // the final chunk's "augur" object
};

// Sends one streaming greedy completion and reads the stream to its end. Error when the server
// answers anything but a complete stream (the benchmark would not measure what it claims).
RequestRecord stream_request(httplib::Client& client, const std::string& prompt, int max_tokens) {
  const json body = {{"prompt", prompt}, {"max_tokens", max_tokens},
                     {"temperature", 0}, {"ignore_eos", true},
                     {"stream", true},   {"stream_options", {{"include_usage", true}}}};
  RequestRecord record;
  std::string pending;  // bytes of an event not yet complete
  bool done = false, first_text = false;
  std::string failure;
  const auto start = Clock::now();
  httplib::Request req;
  req.method = "POST";
  req.path = "/v1/completions";
  req.set_header("Content-Type", "application/json");
  req.body = body.dump();
  req.content_receiver = [&](const char* data, size_t length, uint64_t, uint64_t) {
    pending.append(data, length);
    for (size_t end; (end = pending.find("\n\n")) != std::string::npos;) {
      const std::string event = pending.substr(0, end);
      pending.erase(0, end + 2);
      if (event.rfind("data: ", 0) != 0) continue;
      const std::string payload = event.substr(6);
      if (payload == "[DONE]") {
        done = true;
        continue;
      }
      const json chunk = json::parse(payload, nullptr, /*allow_exceptions=*/false);
      if (!chunk.is_object() || chunk.contains("error")) {
        failure = payload.substr(0, 200);
        continue;
      }
      for (const auto& choice : chunk.value("choices", json::array())) {
        const std::string piece = choice.value("text", "");
        if (!piece.empty() && !first_text) {
          first_text = true;
          record.ttft_s = seconds_between(start, Clock::now());
        }
        record.text += piece;
      }
      if (chunk.contains("augur")) record.stats = chunk["augur"];
      if (chunk.contains("usage") && chunk["usage"].is_object()) {
        record.completion_tokens = chunk["usage"].value("completion_tokens", int64_t{-1});
      }
    }
    return true;
  };
  const auto result = client.send(req);
  record.latency_s = seconds_between(start, Clock::now());
  if (!result) {
    throw Error(fmt::format("bench serve: request failed: {}", httplib::to_string(result.error())));
  }
  if (result->status != 200 || !done || !failure.empty() || record.stats.is_null() ||
      record.completion_tokens < 0) {
    throw Error(
        fmt::format("bench serve: the server answered status {} without a complete "
                    "stream{}",
                    result->status, failure.empty() ? "" : ": " + failure));
  }
  if (!first_text) record.ttft_s = record.latency_s;
  return record;
}

json request_json(const RequestRecord& r) {
  return {{"client", r.client},
          {"prompt", r.prompt},
          {"latency_s", r.latency_s},
          {"ttft_s", r.ttft_s},
          {"completion_tokens", r.completion_tokens},
          {"text", r.text},
          {"drafter", r.stats.value("drafter", "")},
          {"cycles", r.stats.value("cycles", int64_t{0})},
          {"drafted", r.stats.value("drafted", int64_t{0})},
          {"accepted", r.stats.value("accepted", int64_t{0})},
          {"prompt_tokens_reused", r.stats.value("prompt_tokens_reused", int64_t{0})},
          {"prefill_s", r.stats.value("prefill_s", 0.0)},
          {"decode_s", r.stats.value("decode_s", 0.0)}};
}

// The prompt of a client's request in a repeat: consecutive prompts of the file, a fresh run of
// them per repeat (so a session's cache rarely holds the whole prompt from an earlier repeat),
// the same for both arms.
int prompt_index(int clients, int requests, int repeat, int client, int request, int n_prompts) {
  const int64_t at = int64_t{repeat} * clients * requests + int64_t{client} * requests + request;
  return static_cast<int>(at % n_prompts);
}

// One turn: C clients, R requests each; the sample of (arm, clients, repeat).
json run_turn(const ArmServer& arm, int clients, int repeat, int order,
              const ServeBenchConfig& config, const std::vector<std::string>& prompts) {
  const int requests = config.requests_per_client;
  std::vector<std::vector<RequestRecord>> records(static_cast<size_t>(clients));
  std::vector<std::string> errors(static_cast<size_t>(clients));
  std::vector<std::thread> threads;
  const auto start = Clock::now();
  for (int c = 0; c < clients; ++c) {
    threads.emplace_back([&, c] {
      try {
        httplib::Client client("127.0.0.1", arm.port);
        client.set_read_timeout(3600, 0);
        client.set_keep_alive(true);
        for (int q = 0; q < requests; ++q) {
          const int p =
              prompt_index(clients, requests, repeat, c, q, static_cast<int>(prompts.size()));
          RequestRecord r =
              stream_request(client, prompts[static_cast<size_t>(p)], config.max_tokens);
          r.client = c;
          r.prompt = p;
          records[static_cast<size_t>(c)].push_back(std::move(r));
        }
      } catch (const std::exception& e) {
        errors[static_cast<size_t>(c)] = e.what();
      }
    });
  }
  for (auto& t : threads) t.join();
  const double wall_s = seconds_between(start, Clock::now());
  for (const auto& e : errors) {
    if (!e.empty()) throw Error(fmt::format("arm {}, {} clients: {}", arm.name, clients, e));
  }
  json sample = {{"arm", arm.name},        {"clients", clients},       {"repeat", repeat},
                 {"order", order},         {"wall_s", wall_s},         {"completion_tokens", 0},
                 {"aggregate_tok_s", 0.0}, {"requests", json::array()}};
  int64_t tokens = 0;
  for (const auto& per_client : records) {
    for (const auto& r : per_client) {
      tokens += r.completion_tokens;
      sample["requests"].push_back(request_json(r));
    }
  }
  sample["completion_tokens"] = tokens;
  sample["aggregate_tok_s"] = static_cast<double>(tokens) / wall_s;
  return sample;
}

}  // namespace

json run_serve_benchmark(const ServeBenchConfig& input, const ServeBenchProgress& progress) {
  ServeBenchConfig config = input;
  validate(config);
  const auto say = [&](const std::string& line) {
    if (progress) progress(line);
  };
  std::signal(SIGPIPE, SIG_IGN);  // a client that hangs up is a failed write, not a dead process
  const std::string prompts_path = prompts_file(config);
  const std::vector<std::string> prompts = read_prompts(prompts_path);
  if (config.parallel == 0) {
    config.parallel = *std::max_element(config.clients.begin(), config.clients.end());
  }
  if (config.runtime.n_ctx == 0) {  // room for the longest prompt and its completion
    const auto file = gguf::File::open(config.runtime.model_path);
    const auto tok = tokenizer::Tokenizer::from_gguf(*file);
    size_t longest = 0;
    for (const auto& p : prompts) longest = std::max(longest, tok->encode(p, true, false).size());
    config.runtime.n_ctx =
        static_cast<int64_t>(longest) + config.max_tokens + engine::kMaxDraft + 1 + kCtxSlack;
  }
  const int max_clients = *std::max_element(config.clients.begin(), config.clients.end());
  if (max_clients > config.parallel) {
    say(fmt::format("note: up to {} clients share {} sessions; the others wait in the queue",
                    max_clients, config.parallel));
  }

  ServeSetupOptions base;
  base.runtime = config.runtime;
  base.parallel = config.parallel;
  base.max_queue = std::max(4 * config.parallel, max_clients);
  base.log_prefix = "";  // no chat requests: the ChatML warning would be noise
  ServeSetupOptions ar_options = base, spec_options = base;
  ar_options.draft.draft = "none";
  ar_options.draft.draft_max = config.draft.draft_max;
  spec_options.draft = config.draft;
  if (spec_options.draft.draft.empty()) spec_options.draft.draft = "auto";
  spec_options.draft.policy_log.clear();

  say(fmt::format("loading {} twice: arm ar (--draft none) and arm spec (--draft {})",
                  config.runtime.model_path, spec_options.draft.draft));
  ArmServer ar("ar", ar_options);
  ArmServer spec("spec", spec_options);
  const ServeSetup& setup = *spec.setup;
  say(fmt::format(
      "servers on ports {} (ar) and {} (spec): {} sessions x {} tokens, {} threads "
      "each, spec drafter {}",
      ar.port, spec.port, setup.parallel(), setup.n_ctx(), setup.threads(), setup.drafter_name()));

  bench::reset_peak_rss();
  // Warm-up: one untimed request per arm, on the file's last prompt (the first turns use the
  // first ones, so no session starts a measured request with its whole prompt cached).
  for (const ArmServer* arm : {&ar, &spec}) {
    httplib::Client client("127.0.0.1", arm->port);
    client.set_read_timeout(3600, 0);
    (void)stream_request(client, prompts.back(), config.max_tokens);
  }

  json report = {{"schema", "augur.bench/1"},
                 {"kind", "serve"},
                 {"created", bench::utc_timestamp()},
                 {"machine", bench::machine_info(setup.threads())},
                 {"build", bench::build_info()},
                 {"models", json::array({bench::model_info("target", setup.model())})}};
  if (setup.draft_model() != nullptr) {
    report["models"].push_back(bench::model_info("draft", *setup.draft_model()));
  }
  report["config"] = {{"prompts_file", bench::report_path(prompts_path)},
                      {"prompts_sha256", bench::sha256_file(prompts_path)},
                      {"n_prompts", prompts.size()},
                      {"clients", config.clients},
                      {"parallel", config.parallel},
                      {"queue", base.resolved_queue()},
                      {"repeats", config.repeats},
                      {"requests_per_client", config.requests_per_client},
                      {"max_tokens", config.max_tokens},
                      {"warmup_requests", 1},
                      {"threads", setup.threads()},
                      {"n_ctx", setup.n_ctx()},
                      {"ubatch", config.runtime.ubatch},
                      {"temperature", 0},
                      {"ignore_eos", true},
                      {"stream", true},
                      {"timing_scope", "end_to_end"},
                      {"interleaved", true}};
  report["arms"] = json::array({{{"name", "ar"}, {"kind", "ar"}, {"drafter", "none"}},
                                {{"name", "spec"},
                                 {"kind", "spec"},
                                 {"drafter", setup.drafter_name()},
                                 {"draft", spec_options.draft.draft},
                                 {"draft_max", spec_options.draft.draft_max}}});
  report["samples"] = json::array();
  const size_t total = config.clients.size() * size_t(config.repeats) * 2;
  size_t done = 0;
  for (int clients : config.clients) {
    for (int repeat = 0; repeat < config.repeats; ++repeat) {
      // Arms take turns, their order alternating, so drift in the machine hits both alike.
      const std::array<const ArmServer*, 2> order = {repeat % 2 == 0 ? &ar : &spec,
                                                     repeat % 2 == 0 ? &spec : &ar};
      for (int slot = 0; slot < 2; ++slot) {
        json sample = run_turn(*order[size_t(slot)], clients, repeat, slot, config, prompts);
        ++done;
        say(fmt::format("[{}/{}] {} clients {} repeat {}: {:.1f} tok/s aggregate, wall {:.2f}s",
                        done, total, order[size_t(slot)]->name, clients, repeat,
                        sample["aggregate_tok_s"].get<double>(), sample["wall_s"].get<double>()));
        report["samples"].push_back(std::move(sample));
      }
    }
  }
  report["peak_rss_bytes"] = bench::peak_rss_bytes();
  report["summary"] = bench::summarize_serve(report);
  return report;
}

}  // namespace augur::cli
