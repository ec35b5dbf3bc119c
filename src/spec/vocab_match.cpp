#include "spec/vocab_match.h"

#include <fmt/format.h>

#include <array>
#include <string_view>
#include <variant>

#include "common/error.h"

namespace augur::spec {

void check_same_vocabulary(const model::Model& target, const model::Model& draft) {
  const gguf::File& t = target.file();
  const gguf::File& d = draft.file();
  const auto mismatch = [&](const std::string& what) {
    return Unsupported(
        fmt::format("draft model {} cannot draft for {}: {}", d.path(), t.path(), what));
  };
  if (target.hparams().n_vocab != draft.hparams().n_vocab) {
    throw mismatch(fmt::format("vocabulary sizes differ ({} vs {})", target.hparams().n_vocab,
                               draft.hparams().n_vocab));
  }
  const auto model_t = t.get_string_opt("tokenizer.ggml.model");
  const auto model_d = d.get_string_opt("tokenizer.ggml.model");
  if (model_t != model_d) {
    throw mismatch(fmt::format("tokenizer models differ ({} vs {})", model_t.value_or("none"),
                               model_d.value_or("none")));
  }
  if (t.has("tokenizer.ggml.tokens") != d.has("tokenizer.ggml.tokens")) {
    throw mismatch("only one of them has a token list");
  }
  if (t.has("tokenizer.ggml.tokens")) {
    const auto texts_t = t.get_string_array("tokenizer.ggml.tokens");
    const auto texts_d = d.get_string_array("tokenizer.ggml.tokens");
    if (texts_t.size() != texts_d.size()) {
      throw mismatch(
          fmt::format("token lists differ in length ({} vs {})", texts_t.size(), texts_d.size()));
    }
    for (size_t id = 0; id < texts_t.size(); ++id) {
      if (texts_t[id] != texts_d[id]) {
        throw mismatch(fmt::format("token {} is '{}' in the target but '{}' in the draft", id,
                                   texts_t[id], texts_d[id]));
      }
    }
  }
  static constexpr std::array<std::string_view, 8> kSpecialIds = {
      "tokenizer.ggml.bos_token_id",       "tokenizer.ggml.eos_token_id",
      "tokenizer.ggml.eot_token_id",       "tokenizer.ggml.eom_token_id",
      "tokenizer.ggml.unknown_token_id",   "tokenizer.ggml.padding_token_id",
      "tokenizer.ggml.seperator_token_id", "tokenizer.ggml.add_bos_token"};
  for (const auto key : kSpecialIds) {
    const auto* vt = t.find(key);
    const auto* vd = d.find(key);
    const auto as_text = [](const gguf::Value* v) {
      if (!v) return std::string("unset");
      if (v->is_integer()) return std::to_string(v->as_int(""));
      if (const auto* flag = std::get_if<bool>(&v->data))
        return std::string(*flag ? "true" : "false");
      return std::string("set");
    };
    if (as_text(vt) != as_text(vd)) {
      throw mismatch(fmt::format("{} differs ({} vs {})", key, as_text(vt), as_text(vd)));
    }
  }
}

}  // namespace augur::spec
