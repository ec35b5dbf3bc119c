#include "server/http_server.h"

#include <fmt/format.h>
#include <httplib.h>
#include <sys/socket.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <mutex>
#include <optional>
#include <random>

#include "common/error.h"
#include "server/chat_page.h"
#include "server/completion.h"
#include "server/metrics.h"
#include "server/openai_json.h"
#include "server/request.h"

namespace augur::server {
namespace {

using Json = nlohmann::json;
using OrderedJson = nlohmann::ordered_json;

// An error that ends a request with `status` and a JSON error body.
struct HttpError : std::runtime_error {
  HttpError(int status, const std::string& message) : std::runtime_error(message), status(status) {}
  int status;
};

void reply(httplib::Response& res, int status, const Json& body) {
  res.status = status;
  res.set_content(dump(body), "application/json");
}

void reply_error(httplib::Response& res, int status, const std::string& message) {
  reply(res, status, error_json(status, message));
  if (status == 503) res.set_header("Retry-After", "1");
}

std::string random_id(const char* prefix) {
  thread_local std::mt19937_64 engine{std::random_device{}()};
  return fmt::format("{}{:016x}{:08x}", prefix, engine(), static_cast<uint32_t>(engine()));
}

int64_t unix_seconds() {
  return std::chrono::duration_cast<std::chrono::seconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

OrderedJson parse_body(const httplib::Request& req) {
  try {
    return OrderedJson::parse(req.body);
  } catch (const nlohmann::json::parse_error& e) {
    // nlohmann reports bytes that are not UTF-8 as a parse error too.
    throw HttpError(400, fmt::format("the request body is not valid JSON: {}", e.what()));
  }
}

}  // namespace

struct HttpServer::Impl {
  ServerOptions options;
  httplib::Server http;
  int port = -1;
  int listen_fd = -1;  // the listening socket, seen by the socket-options hook
  std::atomic<bool> ready{false};
  std::atomic<bool> stopping{false};
  Backend backend;  // written once before `ready` is set
  Metrics metrics;

  explicit Impl(ServerOptions o) : options(std::move(o)) { routes(); }

  void routes();
  bool authorised(const httplib::Request& req) const;
  // Runs `body`, mapping every exception to a JSON error and counting the outcome.
  void guarded(httplib::Response& res, const std::function<void()>& body);
  void need_ready() const {
    if (!ready.load()) throw HttpError(503, "the model is still loading");
    if (stopping.load()) throw HttpError(503, "the server is shutting down");
  }
  std::vector<int32_t> prompt_tokens(const CompletionRequest& request) const;
  void completion(const httplib::Request& req, httplib::Response& res, Endpoint endpoint);
  void stream(httplib::Response& res, std::shared_ptr<struct StreamJob> job);
};

struct StreamJob {
  std::optional<SlotPool::Lease> lease;
  CompletionRequest request;
  std::vector<int32_t> prompt;
  ResponseIds ids;
};

bool HttpServer::Impl::authorised(const httplib::Request& req) const {
  if (options.api_key.empty() || req.path == "/health" || req.path == "/") return true;
  return req.get_header_value("Authorization") == "Bearer " + options.api_key;
}

void HttpServer::Impl::guarded(httplib::Response& res, const std::function<void()>& body) {
  try {
    body();
    return;
  } catch (const HttpError& e) {
    reply_error(res, e.status, e.what());
  } catch (const Unsupported& e) {
    // What the request needs and augur lacks (a template construct, a feature): the server's
    // limit, not the client's mistake.
    reply_error(res, 500, fmt::format("unsupported: {}", e.what()));
  } catch (const InvalidArgument& e) {
    reply_error(res, 400, e.what());
  } catch (const nlohmann::json::exception& e) {
    reply_error(res, 400, fmt::format("bad request: {}", e.what()));
  } catch (const std::exception& e) {
    reply_error(res, 500, fmt::format("internal error: {}", e.what()));
  }
  const int s = res.status;
  metrics.count_request(s == 503 ? "busy" : s < 500 ? "bad_request" : "error");
}

std::vector<int32_t> HttpServer::Impl::prompt_tokens(const CompletionRequest& request) const {
  const tokenizer::Tokenizer& tok = *backend.tok;
  std::vector<int32_t> prompt;
  if (request.endpoint == Endpoint::Chat) {
    const std::string text =
        backend.render_chat({{"messages", request.messages}, {"add_generation_prompt", true}});
    // Templates that write {{ bos_token }} themselves get no second one.
    const bool has_bos = !backend.bos_text.empty() && text.starts_with(backend.bos_text);
    prompt = tok.encode(text, /*add_special=*/!has_bos, /*parse_special=*/true);
  } else if (!request.prompt_ids.empty()) {
    for (const int32_t id : request.prompt_ids) {
      if (id >= tok.n_vocab()) {
        throw HttpError(400,
                        fmt::format("prompt token id {} is out of range: the vocabulary has {}", id,
                                    tok.n_vocab()));
      }
    }
    prompt = request.prompt_ids;
  } else {
    // As `augur run -p` tokenizes, so the same text gives the same answer.
    prompt = tok.encode(request.prompt, /*add_special=*/true, /*parse_special=*/true);
  }
  if (prompt.empty()) throw HttpError(400, "the prompt is empty: nothing to condition on");
  if (static_cast<int64_t>(prompt.size()) > backend.n_ctx) {
    throw HttpError(400, fmt::format("the prompt has {} tokens, more than the context of {} tokens",
                                     prompt.size(), backend.n_ctx));
  }
  return prompt;
}

void HttpServer::Impl::completion(const httplib::Request& req, httplib::Response& res,
                                  Endpoint endpoint) {
  need_ready();
  auto job = std::make_shared<StreamJob>();
  job->request = parse_completion_request(parse_body(req), endpoint);
  job->prompt = prompt_tokens(job->request);
  job->ids = {random_id(endpoint == Endpoint::Chat ? "chatcmpl-" : "cmpl-"), unix_seconds(),
              backend.model_id};
  job->lease = backend.slots->acquire(job->prompt);
  if (!job->lease) {
    throw HttpError(503, stopping.load() ? "the server is shutting down"
                                         : "every session is busy and the queue is full; retry");
  }
  if (job->request.stream) {
    stream(res, std::move(job));
    return;
  }
  CompletionJob run{job->prompt, &job->request, backend.draft_max, {}, &stopping};
  run.sampled_rule = backend.sampled_rule;
  const CompletionResult result = run_completion(job->lease->slot(), *backend.tok, run);
  job->lease.reset();
  metrics.count_generation(result.stats, result.reused_tokens);
  if (result.cancelled) throw HttpError(503, "the server is shutting down");
  reply(res, 200, completion_json(job->request, result, job->ids));
  metrics.count_request("ok");
}

void HttpServer::Impl::stream(httplib::Response& res, std::shared_ptr<StreamJob> job) {
  res.set_header("Cache-Control", "no-cache");
  res.set_header("X-Accel-Buffering", "no");
  res.set_chunked_content_provider(
      "text/event-stream", [this, job](size_t /*offset*/, httplib::DataSink& sink) {
        const auto send = [&](const std::string& event) {
          return sink.write(event.data(), event.size());
        };
        bool open = true;
        std::string outcome = "ok";
        try {
          if (job->request.endpoint == Endpoint::Chat) {
            open = send(sse_event(delta_chunk_json(job->request, {}, job->ids, true)));
          }
          CompletionJob run{
              job->prompt, &job->request, backend.draft_max,
              [&](Delta&& delta) {
                open = open && send(sse_event(delta_chunk_json(job->request, delta, job->ids)));
                return open;
              },
              &stopping};
          run.sampled_rule = backend.sampled_rule;
          const CompletionResult result = run_completion(job->lease->slot(), *backend.tok, run);
          job->lease.reset();  // the slot is free before the last bytes go out
          metrics.count_generation(result.stats, result.reused_tokens);
          if (result.cancelled && stopping.load()) {
            send(sse_event(error_json(503, "the server is shutting down")));
            outcome = "cancelled";
          } else if (result.cancelled || !open) {
            outcome = "cancelled";
          } else {
            send(sse_event(final_chunk_json(job->request, result, job->ids)));
            if (job->request.include_usage) {
              send(sse_event(usage_chunk_json(job->request, result, job->ids)));
            }
            send("data: [DONE]\n\n");
          }
        } catch (const std::exception& e) {
          job->lease.reset();
          send(sse_event(error_json(500, fmt::format("generation failed: {}", e.what()))));
          outcome = "error";
        }
        metrics.count_request(outcome);
        sink.done();
        return true;
      });
}

void HttpServer::Impl::routes() {
  http.set_socket_options([this](socket_t sock) {
    httplib::default_socket_options(sock);
    listen_fd = sock;
  });
  http.set_payload_max_length(options.max_body);
  http.set_keep_alive_timeout(2);
  const int threads = options.http_threads;
  http.new_task_queue = [threads] { return new httplib::ThreadPool(static_cast<size_t>(threads)); };
  http.set_pre_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
    res.set_header("Access-Control-Allow-Origin", "*");
    if (req.method == "OPTIONS") {
      res.set_header("Access-Control-Allow-Headers", "Authorization, Content-Type");
      res.set_header("Access-Control-Allow-Methods", "GET, POST, OPTIONS");
      res.status = 204;
      return httplib::Server::HandlerResponse::Handled;
    }
    if (!authorised(req)) {
      reply_error(res, 401, "invalid or missing API key: send 'Authorization: Bearer KEY'");
      metrics.count_request("bad_request");
      return httplib::Server::HandlerResponse::Handled;
    }
    return httplib::Server::HandlerResponse::Unhandled;
  });
  http.set_exception_handler(
      [](const httplib::Request&, httplib::Response& res, std::exception_ptr ep) {
        std::string message = "internal error";
        try {
          if (ep) std::rethrow_exception(ep);
        } catch (const std::exception& e) {
          message = fmt::format("internal error: {}", e.what());
        } catch (...) {
        }
        reply_error(res, 500, message);
      });
  http.set_error_handler([](const httplib::Request& req, httplib::Response& res) {
    // Statuses set by httplib itself (404 route, 413 body too large, 400 bad request line)
    // arrive here with an empty body: give them the API's error object.
    if (!res.body.empty()) return;
    const std::string message = res.status == 404
                                    ? fmt::format("no route {} {}", req.method, req.path)
                                : res.status == 413 ? "the request body is larger than --max-body"
                                                    : fmt::format("HTTP {}", res.status);
    res.set_content(dump(error_json(res.status, message)), "application/json");
  });
  if (options.log_requests) {
    http.set_logger([](const httplib::Request& req, const httplib::Response& res) {
      std::fprintf(stderr, "%s %s -> %d\n", req.method.c_str(), req.path.c_str(), res.status);
    });
  }

  http.Get("/health", [this](const httplib::Request&, httplib::Response& res) {
    if (!ready.load()) {
      reply(res, 503, {{"status", "loading"}});
    } else {
      reply(res, 200, {{"status", stopping.load() ? "stopping" : "ok"}});
    }
  });
  http.Get("/", [](const httplib::Request&, httplib::Response& res) {
    res.set_content(std::string(chat_page_html()), "text/html; charset=utf-8");
  });
  http.Get("/v1/models", [this](const httplib::Request&, httplib::Response& res) {
    guarded(res, [&] {
      need_ready();
      reply(res, 200,
            {{"object", "list"},
             {"data", Json::array({{{"id", backend.model_id},
                                    {"object", "model"},
                                    {"created", unix_seconds()},
                                    {"owned_by", "augur"},
                                    {"meta",
                                     {{"n_ctx", backend.n_ctx},
                                      {"n_vocab", backend.tok->n_vocab()},
                                      {"parallel", backend.slots->size()}}}}})}});
    });
  });
  http.Get("/metrics", [this](const httplib::Request&, httplib::Response& res) {
    guarded(res, [&] {
      need_ready();
      res.set_content(metrics.prometheus(*backend.slots, backend.batcher),
                      "text/plain; version=0.0.4");
    });
  });
  http.Post("/v1/chat/completions", [this](const httplib::Request& req, httplib::Response& res) {
    guarded(res, [&] { completion(req, res, Endpoint::Chat); });
  });
  http.Post("/v1/completions", [this](const httplib::Request& req, httplib::Response& res) {
    guarded(res, [&] { completion(req, res, Endpoint::Completion); });
  });
  // llama-server's names for the same endpoints.
  http.Post("/chat/completions", [this](const httplib::Request& req, httplib::Response& res) {
    guarded(res, [&] { completion(req, res, Endpoint::Chat); });
  });
  http.Post("/completions", [this](const httplib::Request& req, httplib::Response& res) {
    guarded(res, [&] { completion(req, res, Endpoint::Completion); });
  });
  http.Post("/apply-template", [this](const httplib::Request& req, httplib::Response& res) {
    guarded(res, [&] {
      need_ready();
      const OrderedJson body = parse_body(req);
      if (!body.is_object() || !body.contains("messages")) {
        throw HttpError(400, "'messages' is required");
      }
      bool add_generation_prompt = true;
      if (const auto it = body.find("add_generation_prompt"); it != body.end() && !it->is_null()) {
        if (!it->is_boolean())
          throw HttpError(400, "'add_generation_prompt' must be true or false");
        add_generation_prompt = it->get<bool>();
      }
      OrderedJson variables = {{"messages", parse_messages(body["messages"])},
                               {"add_generation_prompt", add_generation_prompt}};
      // For checking a template against reference renderings: other special-token texts.
      for (const char* name : {"bos_token", "eos_token"}) {
        if (const auto it = body.find(name); it != body.end() && !it->is_null()) {
          if (!it->is_string()) throw HttpError(400, fmt::format("'{}' must be a string", name));
          variables[name] = *it;
        }
      }
      const std::string prompt = backend.render_chat(std::move(variables));
      reply(res, 200, {{"prompt", prompt}});
      metrics.count_request("ok");
    });
  });
}

HttpServer::HttpServer(ServerOptions options) : impl_(std::make_unique<Impl>(std::move(options))) {}
HttpServer::~HttpServer() {
  stop();
}

void HttpServer::bind() {
  auto& o = impl_->options;
  if (o.port == 0) {
    impl_->port = impl_->http.bind_to_any_port(o.host);
  } else if (impl_->http.bind_to_port(o.host, o.port)) {
    impl_->port = o.port;
  }
  if (impl_->port <= 0) {
    throw Error(fmt::format("cannot listen on {}:{} (in use, or not an address of this machine)",
                            o.host, o.port));
  }
  // cpp-httplib listens with a backlog of 5: a burst of clients connecting at once would be
  // reset. Listening again on the same socket only raises the backlog.
  if (impl_->listen_fd >= 0) ::listen(impl_->listen_fd, SOMAXCONN);
}

int HttpServer::bound_port() const {
  return impl_->port;
}

void HttpServer::serve() {
  impl_->http.listen_after_bind();
}

void HttpServer::set_backend(const Backend& backend) {
  impl_->backend = backend;
  impl_->ready.store(true);
}

void HttpServer::stop() {
  // The first call ends the sessions' work; later ones (the destructor's) only make sure the
  // listener is down, and never touch a backend that may be gone by then.
  if (!impl_->stopping.exchange(true) && impl_->ready.load()) impl_->backend.slots->shutdown();
  impl_->http.stop();
}

}  // namespace augur::server
