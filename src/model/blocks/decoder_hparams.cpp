// read_decoder_hparams: the `<arch>.*` metadata every decoder shares, checked before anything is
// sized by it. A count in a GGUF header is only a claim; the tensors are what the file really
// holds. So each count gets a sane range and is then compared with the tensors it describes:
// block_count with the blk.N tensors, embedding_length with token_embd, head counts with the
// first attention layer's attn_q/attn_k, feed_forward_length with blk.0.ffn_up (the expert counts
// of a mixture-of-experts architecture with blk.0.ffn_up_exps). A hostile file (block_count 2^31)
// then fails here, naming the file, the key and the expectation, instead of in an allocation.
#include <fmt/format.h>

#include <charconv>
#include <cmath>
#include <limits>
#include <optional>
#include <string>
#include <string_view>

#include "common/error.h"
#include "model/blocks/decoder.h"

namespace augur::model::blocks {
namespace {

// Layers, heads and positions are indexed with int (token positions are int32): a larger count
// cannot be meant.
constexpr int64_t kMaxCount = std::numeric_limits<int32_t>::max();
// blk.N with more digits than this is not a block index we could ever load.
constexpr size_t kMaxBlockDigits = 9;
// Experts per MoE layer, as llama.cpp's LLAMA_MAX_EXPERTS: no model it runs has more.
constexpr int64_t kMaxExperts = 512;

std::string shape_string(const std::vector<int64_t>& ne) {
  return fmt::format("[{}]", fmt::join(ne, ", "));
}

// A metadata value as a message shows it.
std::string value_text(const gguf::Value& v) {
  if (const auto* u = std::get_if<uint64_t>(&v.data)) return std::to_string(*u);
  if (const auto* i = std::get_if<int64_t>(&v.data)) return std::to_string(*i);
  if (const auto* d = std::get_if<double>(&v.data)) return fmt::format("{}", *d);
  if (const auto* b = std::get_if<bool>(&v.data)) return *b ? "true" : "false";
  if (const auto* s = std::get_if<std::string_view>(&v.data)) return fmt::format("'{}'", *s);
  const auto& a = std::get<gguf::Array>(v.data);
  return fmt::format("an array of {} {}", a.items.size(), gguf::value_type_name(a.element_type));
}

// The value as an int64 when it is an integer that fits one.
std::optional<int64_t> exact_int(const gguf::Value& v) {
  if (const auto* u = std::get_if<uint64_t>(&v.data)) {
    if (*u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) return std::nullopt;
    return static_cast<int64_t>(*u);
  }
  if (const auto* i = std::get_if<int64_t>(&v.data)) return *i;
  return std::nullopt;
}

// 1 + the highest N of the file's blk.N.* tensors; 0 when it has none.
int64_t blocks_in_file(const gguf::File& file) {
  int64_t blocks = 0;
  for (const auto& t : file.tensors()) {
    std::string_view name = t.name;
    if (!name.starts_with("blk.")) continue;
    name.remove_prefix(4);
    const size_t dot = name.find('.');
    if (dot == std::string_view::npos || dot == 0 || dot > kMaxBlockDigits) continue;
    int64_t index = 0;
    const auto [end, ec] = std::from_chars(name.data(), name.data() + dot, index);
    if (ec != std::errc() || end != name.data() + dot) continue;
    blocks = std::max(blocks, index + 1);
  }
  return blocks;
}

// Reads `<arch>.<suffix>` keys of one file; every error names the file and the full key.
class MetadataReader {
 public:
  MetadataReader(const gguf::File& file, const std::string& arch) : file_(file), arch_(arch) {}

  std::string key(std::string_view suffix) const { return fmt::format("{}.{}", arch_, suffix); }
  const gguf::Value* find(std::string_view suffix) const { return file_.find(key(suffix)); }

  [[noreturn]] void fail(const std::string& what) const {
    throw FormatError(fmt::format("{}: {}", file_.path(), what));
  }

  // A count in 1..max; `fallback` when the key is absent (an error when there is none).
  int64_t count(std::string_view suffix, std::optional<int64_t> fallback = std::nullopt,
                int64_t max = kMaxCount) const {
    const gguf::Value* v = find(suffix);
    if (!v) {
      if (fallback) return *fallback;
      fail(fmt::format("missing metadata key '{}'", key(suffix)));
    }
    const auto n = exact_int(*v);
    if (!n || *n < 1 || *n > max) {
      fail(fmt::format("{} is {}, expected a count in 1..{}", key(suffix), value_text(*v), max));
    }
    return *n;
  }

  // A count that may be 0 (expert counts of a dense model); nullopt when the key is absent.
  std::optional<int64_t> count_or_zero(std::string_view suffix) const {
    const gguf::Value* v = find(suffix);
    if (!v) return std::nullopt;
    const auto n = exact_int(*v);
    if (!n || *n < 0 || *n > kMaxCount) {
      fail(fmt::format("{} is {}, expected a count in 0..{}", key(suffix), value_text(*v),
                       kMaxCount));
    }
    return *n;
  }

  // A finite number of at least `min` (`min` excluded when `strict`); `fallback` when absent.
  double number(std::string_view suffix, std::optional<double> fallback, double min,
                bool strict) const {
    const gguf::Value* v = find(suffix);
    if (!v) {
      if (fallback) return *fallback;
      fail(fmt::format("missing metadata key '{}'", key(suffix)));
    }
    const double* d = std::get_if<double>(&v->data);
    const auto n = exact_int(*v);
    const double x = d ? *d : n ? static_cast<double>(*n) : std::nan("");
    if (!std::isfinite(x) || x < min || (strict && x == min)) {
      fail(fmt::format("{} is {}, expected a finite number {} {}", key(suffix), value_text(*v),
                       strict ? ">" : ">=", min));
    }
    return x;
  }

  // Tensor `name`, which must be a matrix [cols, rows].
  const gguf::TensorInfo& matrix(const std::string& name) const {
    const auto& t = file_.tensor(name);
    if (t.ne.size() != 2) {
      fail(fmt::format("tensor '{}': shape {}, expected 2 dimensions", name, shape_string(t.ne)));
    }
    return t;
  }

  const gguf::File& file() const { return file_; }

 private:
  const gguf::File& file_;
  const std::string& arch_;
};

// block_count must name exactly the blocks whose tensors the file holds: every per-layer array is
// sized by it.
int64_t read_block_count(const MetadataReader& md) {
  const std::string key = md.key("block_count");
  const gguf::Value* v = md.find("block_count");
  if (!v) md.fail(fmt::format("missing metadata key '{}'", key));
  const int64_t blocks = blocks_in_file(md.file());
  const auto n = exact_int(*v);
  if (!n || *n != blocks) {
    md.fail(blocks == 0 ? fmt::format("{} is {}, but the file has no block tensors (blk.N.*)", key,
                                      value_text(*v))
                        : fmt::format("{} is {}, but the file has tensors for {} blocks "
                                      "(blk.0..blk.{})",
                                      key, value_text(*v), blocks, blocks - 1));
  }
  return blocks;
}

// The head counts and head_dim, against the q and k projections of the first attention layer
// (none: nothing to check them against).
void read_heads(const MetadataReader& md, HParams& hp, int64_t rows_per_query) {
  hp.n_head = md.count("attention.head_count");
  hp.n_head_kv = md.count("attention.head_count_kv", hp.n_head);
  if (hp.n_head % hp.n_head_kv != 0) {
    md.fail(fmt::format("{} {} is not a multiple of {} {}", md.key("attention.head_count"),
                        hp.n_head, md.key("attention.head_count_kv"), hp.n_head_kv));
  }
  const gguf::Value* key_length = md.find("attention.key_length");
  if (key_length) {
    hp.head_dim = md.count("attention.key_length");
  } else if (hp.n_embd % hp.n_head != 0) {
    md.fail(fmt::format("{} {} is not a multiple of {} {} (and {} is not set)",
                        md.key("embedding_length"), hp.n_embd, md.key("attention.head_count"),
                        hp.n_head, md.key("attention.key_length")));
  } else {
    hp.head_dim = hp.n_embd / hp.n_head;
  }
  if (md.find("attention.value_length")) {
    const int64_t value_length = md.count("attention.value_length");
    if (value_length != hp.head_dim) {
      throw Unsupported(fmt::format("{}: {} {} differs from key_length {}", md.file().path(),
                                    md.key("attention.value_length"), value_length, hp.head_dim));
    }
  }
  int64_t layer = 0;
  while (hp.is_recurrent(layer)) ++layer;
  if (layer == hp.n_layer) return;
  // Both factors are at most 2^31, so the products fit an int64. A gated query projection
  // (qwen35) holds a gate row per query row.
  const auto& wq = md.matrix(fmt::format("blk.{}.attn_q.weight", layer));
  const int64_t q_rows = rows_per_query * hp.q_dim();
  if (wq.ne[1] != q_rows) {
    md.fail(
        fmt::format("{} is {} (x head_dim {} = {} query rows), but tensor '{}' has shape {}, "
                    "expected [{}, {}]",
                    md.key("attention.head_count"), hp.n_head, hp.head_dim, q_rows, wq.name,
                    shape_string(wq.ne), hp.n_embd, q_rows));
  }
  const auto& wk = md.matrix(fmt::format("blk.{}.attn_k.weight", layer));
  if (wk.ne[1] != hp.kv_dim()) {
    md.fail(
        fmt::format("{} is {} (x head_dim {} = {} key rows), but tensor '{}' has shape {}, "
                    "expected [{}, {}]",
                    md.key("attention.head_count_kv"), hp.n_head_kv, hp.head_dim, hp.kv_dim(),
                    wk.name, shape_string(wk.ne), hp.n_embd, hp.kv_dim()));
  }
}

// A dense architecture has one FFN per block: expert counts must be absent or 0.
void reject_experts(const MetadataReader& md) {
  const auto experts = md.count_or_zero("expert_count");
  const auto used = md.count_or_zero("expert_used_count");
  if (used.value_or(0) > experts.value_or(0)) {
    md.fail(fmt::format("{} is {}, but {} is {}", md.key("expert_used_count"), *used,
                        md.key("expert_count"), experts.value_or(0)));
  }
  if (experts.value_or(0) > 0) {
    throw Unsupported(fmt::format("{}: {} is {}: mixture-of-experts models are not supported",
                                  md.file().path(), md.key("expert_count"), *experts));
  }
}

// A mixture-of-experts architecture: the expert counts, against blk.0's up-projection experts
// [n_embd, n_ff_exp, n_expert]. Every layer's expert tensors are checked where they are loaded.
void read_experts(const MetadataReader& md, HParams& hp) {
  hp.n_expert = md.count("expert_count", std::nullopt, kMaxExperts);
  hp.n_expert_used = md.count("expert_used_count", std::nullopt, hp.n_expert);
  hp.n_ff_exp = md.count("expert_feed_forward_length");
  const auto& up = md.file().tensor("blk.0.ffn_up_exps.weight");
  if (up.ne != std::vector<int64_t>{hp.n_embd, hp.n_ff_exp, hp.n_expert}) {
    md.fail(fmt::format(
        "{} is {} and {} is {}, but tensor '{}' has shape {}, expected [{}, {}, {}]",
        md.key("expert_count"), hp.n_expert, md.key("expert_feed_forward_length"), hp.n_ff_exp,
        up.name, shape_string(up.ne), hp.n_embd, hp.n_ff_exp, hp.n_expert));
  }
  hp.n_ff = 0;  // feed_forward_length, if present, sizes no tensor of a MoE block
}

}  // namespace

HParams read_decoder_hparams(const gguf::File& file, const std::string& arch,
                             const LayerHints& hints) {
  const MetadataReader md(file, arch);
  HParams hp;
  hp.arch = arch;
  if (!hints.moe) reject_experts(md);

  hp.n_embd = md.count("embedding_length");
  const auto& embd = md.matrix("token_embd.weight");
  if (embd.ne[0] != hp.n_embd) {
    md.fail(fmt::format("{} is {}, but tensor 'token_embd.weight' has shape {}, expected [{}, {}]",
                        md.key("embedding_length"), hp.n_embd, shape_string(embd.ne), hp.n_embd,
                        embd.ne[1]));
  }
  hp.n_vocab = embd.ne[1];
  if (md.find("vocab_size") && md.count("vocab_size") != hp.n_vocab) {
    md.fail(fmt::format("{} is {}, but tensor 'token_embd.weight' has {} rows",
                        md.key("vocab_size"), md.count("vocab_size"), hp.n_vocab));
  }

  hp.n_layer = read_block_count(md);
  // MTP / NextN blocks follow the trunk in the same file and are counted in block_count; the
  // forward never runs them (model/heads/nextn.h does, for `--draft mtp`).
  if (const auto nextn = md.count_or_zero("nextn_predict_layers"); nextn.value_or(0) > 0) {
    if (*nextn >= hp.n_layer) {
      md.fail(fmt::format("{} is {}, but {} is only {}", md.key("nextn_predict_layers"), *nextn,
                          md.key("block_count"), hp.n_layer));
    }
    hp.n_nextn = *nextn;
    hp.n_layer -= *nextn;
  }
  if (hints.recurrent_layers) hp.recurrent_layers = hints.recurrent_layers(hp.n_layer);
  read_heads(md, hp, hints.gated_query ? 2 : 1);

  if (hints.moe) {
    read_experts(md, hp);
  } else {
    hp.n_ff = md.count("feed_forward_length");
    const auto& up = md.matrix("blk.0.ffn_up.weight");
    if (up.ne[1] != hp.n_ff) {
      md.fail(fmt::format("{} is {}, but tensor '{}' has shape {}, expected [{}, {}]",
                          md.key("feed_forward_length"), hp.n_ff, up.name, shape_string(up.ne),
                          hp.n_embd, hp.n_ff));
    }
  }
  hp.n_ctx_train = md.count("context_length");

  hp.n_rot = md.count("rope.dimension_count", hp.head_dim);
  if (hp.n_rot > hp.head_dim || hp.n_rot % 2 != 0) {
    md.fail(fmt::format("{} is {}, expected an even count within head_dim {}",
                        md.key("rope.dimension_count"), hp.n_rot, hp.head_dim));
  }
  hp.rms_eps = static_cast<float>(md.number("attention.layer_norm_rms_epsilon", std::nullopt,
                                            /*min=*/0.0, /*strict=*/false));
  hp.rope_base =
      static_cast<float>(md.number("rope.freq_base", 10000.0, /*min=*/0.0, /*strict=*/true));
  if (auto scaling = file.get_string_opt(md.key("rope.scaling.type"));
      scaling && *scaling != "none") {
    throw Unsupported(fmt::format("{}: rope scaling '{}' is not supported", file.path(), *scaling));
  }
  return hp;
}

}  // namespace augur::model::blocks
