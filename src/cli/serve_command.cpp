// `augur serve`: the OpenAI-compatible HTTP server. Listens first (GET /health answers 503
// while the weights load), loads the model once, builds --parallel sessions over it (each with
// its own cache and drafter), then serves until SIGINT/SIGTERM, which ends in-flight streams
// with an error event and returns.
#include <fmt/format.h>
#include <pthread.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <thread>

#include "chat/chat_template.h"
#include "cli/commands.h"
#include "cli/draft_options.h"
#include "cli/exit_codes.h"
#include "cli/model_loading.h"
#include "common/error.h"
#include "engine/generator.h"
#include "server/http_server.h"
#include "server/slot_pool.h"
#include "tokenizer/tokenizer.h"

namespace augur::cli {
namespace {

struct ServeOptions {
  RuntimeOptions runtime;
  DraftOptions draft;
  server::ServerOptions http;
  int parallel = 4;
  int max_queue = -1;  // -1: 4 x parallel
  int64_t cache_mib = 256;
  std::string chat_template_file;
  std::string alias;
};

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InvalidArgument(fmt::format("--chat-template {}: cannot read the file", path));
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// The chat template: --chat-template FILE, else the GGUF's tokenizer.chat_template, else
// ChatML with a warning.
chat::ChatTemplate load_chat_template(const ServeOptions& opt, const model::Model& model) {
  if (!opt.chat_template_file.empty()) {
    return chat::ChatTemplate::parse(read_file(opt.chat_template_file));
  }
  if (const auto source = model.file().get_string_opt("tokenizer.chat_template")) {
    return chat::ChatTemplate::parse(*source);
  }
  std::fprintf(stderr,
               "augur serve: warning: the model has no tokenizer.chat_template; chat requests "
               "use ChatML (<|im_start|>role ... <|im_end|>). Give --chat-template FILE to "
               "override.\n");
  return chat::ChatTemplate::parse(chat::chatml_template());
}

std::string special_text(const tokenizer::Tokenizer& tok, int32_t id) {
  return id >= 0 ? tok.token_to_piece(id, /*special=*/true) : std::string();
}

int serve(const ServeOptions& opt) {
  // Signals go to one watcher thread (blocked everywhere else, so set before any thread starts).
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  std::signal(SIGPIPE, SIG_IGN);  // a client that hangs up is a failed write, not a dead server

  server::ServerOptions http = opt.http;
  const int max_queue = opt.max_queue >= 0 ? opt.max_queue : 4 * opt.parallel;
  http.http_threads = opt.parallel + max_queue + 8;
  server::HttpServer httpd(http);
  httpd.bind();
  std::fprintf(stderr, "augur serve: listening on http://%s:%d (loading %s)\n", http.host.c_str(),
               httpd.bound_port(), opt.runtime.model_path.c_str());
  std::thread serving([&] { httpd.serve(); });
  std::atomic<bool> finished{false};
  std::thread watcher([&] {
    int sig = 0;
    sigwait(&signals, &sig);
    if (!finished.load())
      std::fprintf(stderr, "augur serve: %s, stopping\n", sig == SIGINT ? "SIGINT" : "SIGTERM");
    httpd.stop();
  });
  const auto finish = [&] {
    finished.store(true);
    pthread_kill(watcher.native_handle(), SIGTERM);  // wakes the watcher if no signal came
    watcher.join();
    serving.join();
  };

  try {
    const auto model = load_model_with_progress(opt.runtime.model_path);
    const auto tok = tokenizer::Tokenizer::from_gguf(model->file());
    const chat::ChatTemplate chat_template = load_chat_template(opt, *model);
    kernels::ThreadPool pool(opt.runtime.resolved_threads());
    const int64_t n_ctx = opt.runtime.resolved_ctx(*model);
    const auto draft_model = load_draft_model(opt.draft, *model);
    // The sessions' target forwards run as one: room for a prefill ubatch plus a verify of
    // every other session.
    model::ForwardBatcher batcher(
        *model, pool, opt.runtime.ubatch + opt.parallel * (engine::kMaxDraft + 1), n_ctx);
    std::vector<std::unique_ptr<server::Slot>> slots;
    for (int i = 0; i < opt.parallel; ++i) {
      auto slot = std::make_unique<server::Slot>();
      slot->id = i;
      slot->generator =
          std::make_unique<engine::Generator>(*model, pool, n_ctx, opt.runtime.ubatch);
      slot->generator->set_batcher(&batcher);
      slot->drafter =
          make_draft_source(opt.draft, *model, draft_model.get(), pool, n_ctx, opt.runtime.ubatch);
      slots.push_back(std::move(slot));
    }
    const std::string drafter = slots[0]->drafter ? slots[0]->drafter->name() : "none";
    server::SlotPool pool_of_slots(std::move(slots), max_queue, opt.cache_mib << 20);

    server::Backend backend;
    backend.tok = tok.get();
    backend.slots = &pool_of_slots;
    backend.model_id = !opt.alias.empty()
                           ? opt.alias
                           : std::filesystem::path(opt.runtime.model_path).stem().string();
    backend.n_ctx = n_ctx;
    backend.draft_max = opt.draft.draft_max;
    backend.bos_text = special_text(*tok, tok->bos());
    backend.batcher = &batcher;
    const std::string eos_text = special_text(*tok, tok->eos());
    backend.render_chat = [&](nlohmann::ordered_json variables) {
      if (!variables.contains("bos_token")) variables["bos_token"] = backend.bos_text;
      if (!variables.contains("eos_token")) variables["eos_token"] = eos_text;
      return chat_template.render(variables, std::chrono::system_clock::now());
    };
    httpd.set_backend(backend);
    std::fprintf(stderr,
                 "augur serve: ready: model %s, %d sessions x %lld tokens of context, queue %d, "
                 "drafter %s, %d threads\n",
                 backend.model_id.c_str(), opt.parallel, static_cast<long long>(n_ctx), max_queue,
                 drafter.c_str(), pool.size());
    serving.join();  // returns after stop(): the backend outlives every handler
    finished.store(true);
    pthread_kill(watcher.native_handle(), SIGTERM);
    watcher.join();
  } catch (...) {
    httpd.stop();
    finish();
    throw;
  }
  std::fprintf(stderr, "augur serve: stopped\n");
  return kExitOk;
}

}  // namespace

void add_serve_command(CLI::App& app, int& exit_code) {
  auto opt = std::make_shared<ServeOptions>();
  auto* cmd = app.add_subcommand("serve", "serve the model over an OpenAI-compatible HTTP API");
  opt->runtime.add_options(*cmd);
  opt->draft.add_options(*cmd);
  auto& h = opt->http;
  cmd->add_option("--host", h.host, "address to listen on (loopback by default)")
      ->capture_default_str();
  cmd->add_option("--port", h.port, "port to listen on (0: any free port, printed)")
      ->capture_default_str()
      ->check(CLI::Range(0, 65535));
  cmd->add_option("--parallel", opt->parallel,
                  "(also -np) sessions that generate at once, each with its own cache of -c tokens")
      ->capture_default_str()
      ->check(CLI::Range(1, 256));
  cmd->add_option("--queue", opt->max_queue,
                  "requests that may wait for a session; more get 503 (default: 4 x --parallel)")
      ->check(CLI::Range(0, 4096));
  cmd->add_option("--api-key", h.api_key,
                  "require 'Authorization: Bearer KEY' on every endpoint but / and /health");
  cmd->add_option("--max-body", h.max_body, "largest request body in bytes (larger: 413)")
      ->capture_default_str()
      ->check(CLI::Range(size_t{1024}, size_t{1} << 30));
  cmd->add_option("--cache-mib", opt->cache_mib,
                  "MiB of K/V rows kept for reuse after the sessions move on (prefix cache; 0: "
                  "only what the sessions hold)")
      ->capture_default_str()
      ->check(CLI::Range(int64_t{0}, int64_t{1} << 20));
  cmd->add_option("--chat-template", opt->chat_template_file,
                  "Jinja chat template file, instead of the model's tokenizer.chat_template");
  cmd->add_option("--alias", opt->alias, "model id in responses (default: the file's stem)");
  cmd->add_flag("!--no-log", h.log_requests, "do not print one line per request on stderr");
  cmd->callback([opt, &exit_code] { exit_code = serve(*opt); });
}

}  // namespace augur::cli
