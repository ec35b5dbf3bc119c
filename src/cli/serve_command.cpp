// `augur serve`: the OpenAI-compatible HTTP server. Listens first (GET /health answers 503
// while the weights load), loads the model once, builds --parallel sessions over it (each with
// its own cache and drafter), then serves until SIGINT/SIGTERM, which ends in-flight streams
// with an error event and returns.
#include <fmt/format.h>
#include <pthread.h>

#include <atomic>
#include <csignal>
#include <cstdio>
#include <memory>
#include <thread>

#include "cli/commands.h"
#include "cli/exit_codes.h"
#include "cli/serve_setup.h"
#include "server/http_server.h"

namespace augur::cli {
namespace {

struct ServeOptions {
  ServeSetupOptions setup;
  server::ServerOptions http;
};

int serve(const ServeOptions& opt) {
  // Signals go to one watcher thread (blocked everywhere else, so set before any thread starts).
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  std::signal(SIGPIPE, SIG_IGN);  // a client that hangs up is a failed write, not a dead server

  server::ServerOptions http = opt.http;
  http.http_threads = opt.setup.parallel + opt.setup.resolved_queue() + 8;
  server::HttpServer httpd(http);
  httpd.bind();
  std::fprintf(stderr, "augur serve: listening on http://%s:%d (loading %s)\n", http.host.c_str(),
               httpd.bound_port(), opt.setup.runtime.model_path.c_str());
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

  std::unique_ptr<ServeSetup> setup;  // outlives every use of the backend by the server
  try {
    setup = std::make_unique<ServeSetup>(opt.setup);
    const server::Backend& backend = setup->backend();
    httpd.set_backend(backend);
    std::fprintf(stderr,
                 "augur serve: ready: model %s, %d sessions x %lld tokens of context, queue %d, "
                 "drafter %s, %d threads\n",
                 backend.model_id.c_str(), setup->parallel(),
                 static_cast<long long>(setup->n_ctx()), setup->max_queue(),
                 setup->drafter_name().c_str(), setup->threads());
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
  opt->setup.runtime.add_options(*cmd);
  opt->setup.draft.add_options(*cmd);
  auto& h = opt->http;
  cmd->add_option("--host", h.host, "address to listen on (loopback by default)")
      ->capture_default_str();
  cmd->add_option("--port", h.port, "port to listen on (0: any free port, printed)")
      ->capture_default_str()
      ->check(CLI::Range(0, 65535));
  cmd->add_option("--parallel", opt->setup.parallel,
                  "(also -np) sessions that generate at once, each with its own cache of -c tokens")
      ->capture_default_str()
      ->check(CLI::Range(1, 256));
  cmd->add_option("--queue", opt->setup.max_queue,
                  "requests that may wait for a session; more get 503 (default: 4 x --parallel)")
      ->check(CLI::Range(0, 4096));
  cmd->add_option("--api-key", h.api_key,
                  "require 'Authorization: Bearer KEY' on every endpoint but / and /health");
  cmd->add_option("--max-body", h.max_body, "largest request body in bytes (larger: 413)")
      ->capture_default_str()
      ->check(CLI::Range(size_t{1024}, size_t{1} << 30));
  cmd->add_option("--cache-mib", opt->setup.cache_mib,
                  "MiB of K/V rows kept for reuse after the sessions move on (prefix cache; 0: "
                  "only what the sessions hold)")
      ->capture_default_str()
      ->check(CLI::Range(int64_t{0}, int64_t{1} << 20));
  cmd->add_option("--chat-template", opt->setup.chat_template_file,
                  "Jinja chat template file, instead of the model's tokenizer.chat_template");
  cmd->add_option("--alias", opt->setup.alias, "model id in responses (default: the file's stem)");
  cmd->add_flag("!--no-log", h.log_requests, "do not print one line per request on stderr");
  cmd->callback([opt, &exit_code] { exit_code = serve(*opt); });
}

}  // namespace augur::cli
