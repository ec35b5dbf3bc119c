// What `augur serve` builds once its model is loaded, owned in one place: the target model, its
// tokenizer and chat template, the thread pool, the draft model, the forward batcher, the
// --parallel slots (each a Generator and its own drafter) and the server::Backend that points at
// them. `augur serve` and `augur bench serve` both build it, so the benchmark measures the server
// users run. It does not own the HTTP server, its threads or signal handling.
#pragma once

#include <memory>
#include <string>

#include "chat/chat_template.h"
#include "cli/draft_options.h"
#include "cli/model_loading.h"
#include "kernels/thread_pool.h"
#include "model/forward_batcher.h"
#include "model/model.h"
#include "server/http_server.h"
#include "server/slot_pool.h"
#include "tokenizer/tokenizer.h"

namespace augur::cli {

struct ServeSetupOptions {
  RuntimeOptions runtime;
  DraftOptions draft;
  int parallel = 4;
  int max_queue = -1;       // -1: 4 x parallel
  int64_t cache_mib = 256;  // prefix cache beyond the slots (0: none)
  std::string chat_template_file;
  std::string alias;
  std::string log_prefix = "augur serve";  // of the warnings it prints on stderr; "": none

  int resolved_queue() const { return max_queue >= 0 ? max_queue : 4 * parallel; }
};

// Loads and builds everything; InvalidArgument / Unsupported / FormatError as the loaders throw.
// Not movable: the backend and the slots point into it.
class ServeSetup {
 public:
  explicit ServeSetup(const ServeSetupOptions& options);
  ServeSetup(const ServeSetup&) = delete;
  ServeSetup& operator=(const ServeSetup&) = delete;

  const server::Backend& backend() const { return backend_; }
  const model::Model& model() const { return *model_; }
  const model::Model* draft_model() const { return draft_model_.get(); }
  const tokenizer::Tokenizer& tokenizer() const { return *tok_; }
  const std::string& drafter_name() const { return drafter_name_; }  // "none" for AR
  int64_t n_ctx() const { return n_ctx_; }
  int threads() const { return pool_->size(); }
  int parallel() const { return slots_->size(); }
  int max_queue() const { return slots_->max_queue(); }

 private:
  std::unique_ptr<model::Model> model_;
  std::unique_ptr<tokenizer::Tokenizer> tok_;
  std::unique_ptr<chat::ChatTemplate> chat_template_;
  std::unique_ptr<kernels::ThreadPool> pool_;
  int64_t n_ctx_ = 0;
  std::unique_ptr<model::Model> draft_model_;
  std::unique_ptr<model::ForwardBatcher> batcher_;
  std::unique_ptr<model::ForwardBatcherSet> drafter_batchers_;
  std::unique_ptr<server::SlotPool> slots_;
  std::string drafter_name_;
  std::string eos_text_;
  server::Backend backend_;
};

}  // namespace augur::cli
