#include "cli/serve_setup.h"

#include <fmt/format.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <vector>

#include "common/error.h"
#include "engine/generator.h"

namespace augur::cli {
namespace {

std::string read_template_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InvalidArgument(fmt::format("--chat-template {}: cannot read the file", path));
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// The chat template: --chat-template FILE, else the GGUF's tokenizer.chat_template, else
// ChatML with a warning.
chat::ChatTemplate load_chat_template(const ServeSetupOptions& opt, const model::Model& model) {
  if (!opt.chat_template_file.empty()) {
    return chat::ChatTemplate::parse(read_template_file(opt.chat_template_file));
  }
  if (const auto source = model.file().get_string_opt("tokenizer.chat_template")) {
    return chat::ChatTemplate::parse(*source);
  }
  if (!opt.log_prefix.empty()) {
    std::fprintf(stderr,
                 "%s: warning: the model has no tokenizer.chat_template; chat requests "
                 "use ChatML (<|im_start|>role ... <|im_end|>). Give --chat-template FILE to "
                 "override.\n",
                 opt.log_prefix.c_str());
  }
  return chat::ChatTemplate::parse(chat::chatml_template());
}

std::string special_text(const tokenizer::Tokenizer& tok, int32_t id) {
  return id >= 0 ? tok.token_to_piece(id, /*special=*/true) : std::string();
}

}  // namespace

ServeSetup::ServeSetup(const ServeSetupOptions& opt) {
  model_ = load_model_with_progress(opt.runtime.model_path);
  tok_ = tokenizer::Tokenizer::from_gguf(model_->file());
  chat_template_ = std::make_unique<chat::ChatTemplate>(load_chat_template(opt, *model_));
  pool_ = std::make_unique<kernels::ThreadPool>(opt.runtime.resolved_threads());
  n_ctx_ = opt.runtime.resolved_ctx(*model_);
  const cache::CacheTypes cache_types = opt.runtime.cache_types();
  draft_model_ = load_draft_model(opt.draft, *model_);
  // The sessions' target forwards run as one: room for a prefill ubatch plus a verify of
  // every other session.
  const int64_t batch_rows = opt.runtime.ubatch + opt.parallel * (engine::kMaxDraft + 1);
  batcher_ = std::make_unique<model::ForwardBatcher>(*model_, *pool_, batch_rows, n_ctx_);
  // The drafters' forwards (a draft model, layer-skip depths) are batched across sessions too.
  drafter_batchers_ = std::make_unique<model::ForwardBatcherSet>(*pool_, batch_rows, n_ctx_);
  std::vector<std::unique_ptr<server::Slot>> slots;
  for (int i = 0; i < opt.parallel; ++i) {
    auto slot = std::make_unique<server::Slot>();
    slot->id = i;
    slot->generator = std::make_unique<engine::Generator>(*model_, *pool_, n_ctx_,
                                                          opt.runtime.ubatch, cache_types);
    slot->generator->set_batcher(batcher_.get(), drafter_batchers_.get());
    slot->drafter = make_draft_source(opt.draft, *model_, draft_model_.get(), *pool_, n_ctx_,
                                      opt.runtime.ubatch, cache_types);
    if (slot->drafter) slot->drafter->share_forwards(*drafter_batchers_);
    slots.push_back(std::move(slot));
  }
  drafter_name_ = slots[0]->drafter ? slots[0]->drafter->name() : "none";
  slots_ = std::make_unique<server::SlotPool>(std::move(slots), opt.resolved_queue(),
                                              opt.cache_mib << 20);

  backend_.tok = tok_.get();
  backend_.slots = slots_.get();
  backend_.model_id = !opt.alias.empty()
                          ? opt.alias
                          : std::filesystem::path(opt.runtime.model_path).stem().string();
  backend_.n_ctx = n_ctx_;
  backend_.draft_max = opt.draft.draft_max;
  backend_.sampled_rule = opt.draft.sampled_rule;
  backend_.bos_text = special_text(*tok_, tok_->bos());
  backend_.batcher = batcher_.get();
  eos_text_ = special_text(*tok_, tok_->eos());
  backend_.render_chat = [this](nlohmann::ordered_json variables) {
    if (!variables.contains("bos_token")) variables["bos_token"] = backend_.bos_text;
    if (!variables.contains("eos_token")) variables["eos_token"] = eos_text_;
    return chat_template_->render(variables, std::chrono::system_clock::now());
  };
}

}  // namespace augur::cli
