// `augur serve`'s HTTP front: the OpenAI endpoints, /health, /metrics, /apply-template and the
// chat page, on cpp-httplib. It listens before the model is loaded (GET /health answers 503
// "loading" until set_backend()), maps every error to a JSON status (never a crash, never a
// leaked slot), and streams with server-sent events.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "model/forward_batcher.h"
#include "server/slot_pool.h"
#include "spec/acceptance.h"
#include "tokenizer/tokenizer.h"

namespace augur::server {

struct ServerOptions {
  std::string host = "127.0.0.1";
  int port = 8080;      // 0: any free port (see bound_port())
  std::string api_key;  // non-empty: every endpoint but /health and / needs "Bearer KEY"
  size_t max_body = size_t{8} << 20;  // bytes; larger bodies get 413
  int http_threads = 16;              // connections served at once (slots + queue + a few spare)
  bool log_requests = true;           // one line per request on stderr
};

// Everything the endpoints need once the model is loaded. Not owned.
struct Backend {
  const tokenizer::Tokenizer* tok = nullptr;
  SlotPool* slots = nullptr;
  std::string model_id;
  int64_t n_ctx = 0;  // per slot
  int draft_max = 8;
  spec::SampledRule sampled_rule = spec::SampledRule::kBlock;
  // The model's chat template rendered with `variables` (messages, checked, and
  // add_generation_prompt; bos_token / eos_token when given, else the model's); throws
  // InvalidArgument (400) when the template refuses them (its own message) or Unsupported for a
  // construct it lacks.
  std::function<std::string(nlohmann::ordered_json variables)> render_chat;
  std::string bos_text;  // a rendered chat that starts with it gets no second BOS
  const model::ForwardBatcher* batcher = nullptr;  // for /metrics; may be null
};

class HttpServer {
 public:
  explicit HttpServer(ServerOptions options);
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // Binds the listening socket; Error naming host and port when it cannot.
  void bind();
  int bound_port() const;
  // Serves until stop(); call after bind(), on a thread of its own if the caller must go on.
  void serve();
  // Makes the server ready: the endpoints answer from now on.
  void set_backend(const Backend& backend);
  // Ends every stream with an error event, refuses waiting requests, stops listening. Safe
  // from any thread; serve() returns once the in-flight handlers have finished.
  void stop();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace augur::server
