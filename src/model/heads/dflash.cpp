#include "model/heads/dflash.h"

#include <fmt/format.h>

#include <algorithm>
#include <string>

#include "common/error.h"
#include "kernels/matmul.h"
#include "model/blocks/attention.h"
#include "model/blocks/ops.h"
#include "model/blocks/weights.h"
#include "model/heads/head_vocab.h"

namespace augur::model::heads {
namespace {

using blocks::load_matrix;
using blocks::load_vector;

constexpr int64_t kMaxLayers = 64;
constexpr int64_t kMaxTaps = 64;
constexpr int64_t kMaxBlock = 256;

struct DFlashWorkspace final : Workspace {
  DFlashWorkspace(const HParams& hp, int64_t rows, int64_t taps)
      : max_rows(rows),
        x(rows * hp.n_embd),
        h(rows * std::max(hp.n_embd, taps * hp.n_embd)),
        q(rows * hp.q_dim()),
        k(rows * hp.kv_dim()),
        v(rows * hp.kv_dim()),
        attn(rows * hp.q_dim()),
        proj(rows * hp.n_embd),
        gate(rows * hp.n_ff),
        up(rows * hp.n_ff),
        rope(rows * hp.n_rot) {}
  int64_t bytes() const override {
    int64_t n = 0;
    for (const auto* b : {&x, &h, &q, &k, &v, &attn, &proj, &gate, &up, &rope, &draft_logits}) {
      n += static_cast<int64_t>(b->capacity() * sizeof(float));
    }
    return n;
  }
  int64_t max_rows;
  std::vector<float> x, h, q, k, v, attn, proj, gate, up, rope, draft_logits;
};

void refuse_variants(const gguf::File& f) {
  for (const char* key : {"dflash.conv_kernel_size", "dflash.conv_group_size",
                          "dflash.selector_rank", "dflash.selector_top_k"}) {
    if (f.has(key)) {
      throw Unsupported(
          fmt::format("{}: {} marks a DFlash2 drafter, which is not supported", f.path(), key));
    }
  }
  if (f.find_tensor("markov_w1.weight")) {
    throw Unsupported(fmt::format(
        "{}: markov_w1.weight marks a DSpark drafter (DFlash + Markov head), which is not "
        "supported",
        f.path()));
  }
  if (f.get_bool_opt("dflash.attention.causal").value_or(false)) {
    throw Unsupported(fmt::format(
        "{}: dflash.attention.causal = true (a causal block) is not supported", f.path()));
  }
  if (f.has("dflash.attention.sliding_window")) {
    throw Unsupported(fmt::format(
        "{}: dflash.attention.sliding_window (sliding-window layers) is not supported", f.path()));
  }
  if (f.has("dflash.rope.scaling.type") &&
      f.get_string("dflash.rope.scaling.type") != std::string_view("none")) {
    throw Unsupported(fmt::format("{}: dflash rope scaling '{}' is not supported", f.path(),
                                  f.get_string("dflash.rope.scaling.type")));
  }
  if (f.find_tensor("rope_freqs.weight")) {
    throw Unsupported(
        fmt::format("{}: rope_freqs (llama3 rope scaling) is not supported", f.path()));
  }
  // M-RoPE sections [dh/2, 0, 0, 0] (a Qwen-VL target) amount to NeoX RoPE on the temporal
  // position, which is the only position a text drafter has.
  if (f.has("dflash.rope.dimension_sections")) {
    const auto sections = f.get_int_array("dflash.rope.dimension_sections");
    if (std::any_of(sections.begin() + std::min<size_t>(1, sections.size()), sections.end(),
                    [](int64_t s) { return s != 0; })) {
      throw Unsupported(fmt::format(
          "{}: dflash.rope.dimension_sections with spatial sections is not supported", f.path()));
    }
  }
}

}  // namespace

std::unique_ptr<DFlash> DFlash::load(const std::filesystem::path& path, const Model& target) {
  return load(gguf::File::open(path), target);
}

std::unique_ptr<DFlash> DFlash::load(std::unique_ptr<gguf::File> file, const Model& target) {
  const std::string arch(file->get_string_opt("general.architecture").value_or(""));
  if (arch != "dflash") {
    throw InvalidArgument(
        fmt::format("{}: general.architecture is '{}', not 'dflash': not a DFlash drafter",
                    file->path(), arch));
  }
  return std::unique_ptr<DFlash>(new DFlash(std::move(file), target));
}

DFlash::DFlash(std::unique_ptr<gguf::File> file, const Model& target) : file_(std::move(file)) {
  const gguf::File& f = *file_;
  const HParams& thp = target.hparams();
  refuse_variants(f);
  hp_.arch = "dflash";
  hp_.n_layer = checked_int(f, "dflash.block_count", 1, kMaxLayers);
  hp_.n_embd = checked_int(f, "dflash.embedding_length", 1, kMaxHeadWidth);
  hp_.n_ff = checked_int(f, "dflash.feed_forward_length", 1, 4 * kMaxHeadWidth);
  hp_.n_head = checked_int(f, "dflash.attention.head_count", 1, 1024);
  hp_.n_head_kv = f.has("dflash.attention.head_count_kv")
                      ? checked_int(f, "dflash.attention.head_count_kv", 1, hp_.n_head)
                      : hp_.n_head;
  if (hp_.n_head % hp_.n_head_kv != 0) {
    throw FormatError(fmt::format("{}: {} heads are not a multiple of {} kv heads", f.path(),
                                  hp_.n_head, hp_.n_head_kv));
  }
  if (f.has("dflash.attention.key_length")) {
    hp_.head_dim = checked_int(f, "dflash.attention.key_length", 2, 4096);
  } else if (hp_.n_embd % hp_.n_head == 0) {
    hp_.head_dim = hp_.n_embd / hp_.n_head;
  } else {
    throw FormatError(fmt::format("{}: {} heads do not divide width {} and no key_length is set",
                                  f.path(), hp_.n_head, hp_.n_embd));
  }
  if (f.has("dflash.attention.value_length") &&
      f.get_int("dflash.attention.value_length") != hp_.head_dim) {
    throw Unsupported(
        fmt::format("{}: dflash.attention.value_length differs from key_length", f.path()));
  }
  hp_.n_rot = f.has("dflash.rope.dimension_count")
                  ? checked_int(f, "dflash.rope.dimension_count", 2, hp_.head_dim)
                  : hp_.head_dim;
  if (hp_.n_rot % 2 != 0) throw FormatError(fmt::format("{}: odd rope dimension", f.path()));
  hp_.rope_base = static_cast<float>(f.get_float_opt("dflash.rope.freq_base").value_or(10000.0));
  hp_.rms_eps =
      static_cast<float>(f.get_float_opt("dflash.attention.layer_norm_rms_epsilon").value_or(1e-6));
  hp_.rope_type = RopeType::Neox;
  hp_.n_ctx_train = f.get_int_opt("dflash.context_length").value_or(thp.n_ctx_train);
  hp_.n_vocab = thp.n_vocab;

  // llama.cpp sizes fc from the draft's width: the target's hidden size must be the same.
  if (hp_.n_embd != thp.n_embd) {
    throw InvalidArgument(fmt::format(
        "{}: the drafter is {} wide but the target's hidden size is {}: a DFlash drafter reads "
        "features of its own width (a drafter for another model?)",
        f.path(), hp_.n_embd, thp.n_embd));
  }
  const std::vector<int64_t> taps = f.get_int_array("dflash.target_layers");
  if (taps.empty() || static_cast<int64_t>(taps.size()) > kMaxTaps) {
    throw FormatError(fmt::format("{}: dflash.target_layers has {} entries, expected 1..{}",
                                  f.path(), taps.size(), kMaxTaps));
  }
  for (const int64_t t : taps) {
    if (t < 0 || t > thp.n_layer) {
      throw InvalidArgument(
          fmt::format("{}: dflash.target_layers entry {} is outside the target's layers 0..{}",
                      f.path(), t, thp.n_layer));
    }
    target_layers_.push_back(static_cast<int32_t>(t));
  }
  block_size_ = f.has("dflash.block_size") ? checked_int(f, "dflash.block_size", 2, kMaxBlock)
                                           : 16;  // llama.cpp's default for a file without one
  if (!f.has("tokenizer.ggml.mask_token_id")) {
    throw FormatError(fmt::format(
        "{}: no tokenizer.ggml.mask_token_id: a DFlash block needs its mask token", f.path()));
  }
  mask_token_ =
      static_cast<int32_t>(checked_int(f, "tokenizer.ggml.mask_token_id", 0, thp.n_vocab - 1));

  const int64_t D = hp_.n_embd;
  fc_ = load_matrix(f, "fc.weight", hidden_in_width(), D);
  if (f.find_tensor("fc.scale")) fc_scale_ = load_vector(f, "fc.scale", 1)[0];
  enc_norm_ = load_vector(f, "enc.output_norm.weight", D);
  output_norm_ = load_vector(f, "output_norm.weight", D);
  HeadVocab vocab = load_head_vocab(f, target, D);
  token_embd_ = vocab.token_embd;
  output_ = vocab.output;
  d2t_ = std::move(vocab.d2t);

  const int64_t hd = hp_.head_dim;
  for (int64_t l = 0; l < hp_.n_layer; ++l) {
    const auto name = [l](const char* what) { return fmt::format("blk.{}.{}.weight", l, what); };
    if (f.find_tensor(fmt::format("blk.{}.attn_conv_base", l))) {
      throw Unsupported(fmt::format("{}: conv tensors mark a DFlash2 drafter", f.path()));
    }
    if (f.find_tensor(name("attn_sinks")) || f.find_tensor(fmt::format("blk.{}.attn_sinks", l))) {
      throw Unsupported(fmt::format("{}: attention sinks are not supported", f.path()));
    }
    Layer layer;
    layer.attn_norm = load_vector(f, name("attn_norm"), D);
    layer.wq = load_matrix(f, name("attn_q"), D, hp_.q_dim());
    layer.wk = load_matrix(f, name("attn_k"), D, hp_.kv_dim());
    layer.wv = load_matrix(f, name("attn_v"), D, hp_.kv_dim());
    layer.wo = load_matrix(f, name("attn_output"), hp_.q_dim(), D);
    layer.q_norm = load_vector(f, name("attn_q_norm"), hd);
    layer.k_norm = load_vector(f, name("attn_k_norm"), hd);
    layer.ffn_norm = load_vector(f, name("ffn_norm"), D);
    layer.w_gate = load_matrix(f, name("ffn_gate"), D, hp_.n_ff);
    layer.w_up = load_matrix(f, name("ffn_up"), D, hp_.n_ff);
    layer.w_down = load_matrix(f, name("ffn_down"), hp_.n_ff, D);
    layers_.push_back(std::move(layer));
  }
}

std::unique_ptr<Workspace> DFlash::make_workspace(int64_t max_rows, int64_t /*n_ctx*/) const {
  auto ws =
      std::make_unique<DFlashWorkspace>(hp_, max_rows, static_cast<int64_t>(target_layers_.size()));
  if (!d2t_.empty()) ws->draft_logits.resize(static_cast<size_t>(max_rows * output_.rows));
  return ws;
}

void DFlash::norm_rope(float* x, int64_t rows, int64_t n_heads, const std::vector<float>& norm,
                       const float* rope) const {
  const int64_t hd = hp_.head_dim;
  for (int64_t r = 0; r < rows; ++r) {
    float* row = x + r * n_heads * hd;
    for (int64_t h = 0; h < n_heads; ++h) {
      blocks::rms_norm(row + h * hd, norm.data(), row + h * hd, hd, hp_.rms_eps);
    }
    blocks::apply_rope(row, n_heads, hd, hp_.n_rot, hp_.rope_type, rope + r * hp_.n_rot);
  }
}

void DFlash::forward_ubatch(const UbatchRequest& req, Memory& memory, Workspace& workspace,
                            kernels::ThreadPool& pool) const {
  auto& ws = static_cast<DFlashWorkspace&>(workspace);
  const int64_t M = static_cast<int64_t>(req.tokens.size());
  AUGUR_CHECK(M > 0 && M <= ws.max_rows, "ubatch larger than the workspace");
  AUGUR_CHECK(req.positions.size() == req.tokens.size(), "one position per row");
  if (!req.hidden_in) throw InvalidArgument("a DFlash injection needs the target's features");
  if (!req.out_rows.empty()) throw InvalidArgument("a DFlash injection computes no logits");
  if (!req.capture_layers.empty()) throw Unsupported("feature capture from a drafter head");
  const int64_t n_past = memory.n_rows();
  if (n_past + M > memory.capacity()) {
    throw InvalidArgument(fmt::format("context full: {} rows held + {} new > context size {}",
                                      n_past, M, memory.capacity()));
  }
  const int64_t D = hp_.n_embd, kv_dim = hp_.kv_dim(), hd = hp_.head_dim;
  float* g = ws.x.data();
  kernels::matmul(fc_, req.hidden_in, M, g, pool);
  for (int64_t row = 0; row < M; ++row) {
    float* gr = g + row * D;
    for (int64_t i = 0; i < D; ++i) gr[i] *= fc_scale_;
    blocks::rms_norm(gr, enc_norm_.data(), gr, D, hp_.rms_eps);
    blocks::rope_angles(req.positions[static_cast<size_t>(row)], hp_.n_rot, hp_.rope_base,
                        &ws.rope[row * hp_.n_rot]);
  }
  for (int64_t l = 0; l < hp_.n_layer; ++l) {
    const Layer& layer = layers_[static_cast<size_t>(l)];
    kernels::matmul(layer.wk, g, M, ws.k.data(), pool);
    kernels::matmul(layer.wv, g, M, ws.v.data(), pool);
    norm_rope(ws.k.data(), M, hp_.n_head_kv, layer.k_norm, ws.rope.data());
    const KvRows kv = memory.kv(static_cast<int>(l));
    for (int64_t row = 0; row < M; ++row) {
      for (int64_t head = 0; head < hp_.n_head_kv; ++head) {
        blocks::write_kv(kv, head, n_past + row, &ws.k[row * kv_dim + head * hd],
                         &ws.v[row * kv_dim + head * hd], hd);
      }
    }
  }
  memory.advance(M);
}

void DFlash::block(std::span<const int32_t> tokens, Memory& memory, Workspace& workspace,
                   float* logits, kernels::ThreadPool& pool, int64_t first_out) const {
  auto& ws = static_cast<DFlashWorkspace&>(workspace);
  const auto M = static_cast<int64_t>(tokens.size());
  AUGUR_CHECK(M > 0 && M <= ws.max_rows, "a block within the workspace");
  const int64_t n_past = memory.n_rows();
  if (n_past + M > memory.capacity()) {
    throw InvalidArgument(
        fmt::format("context full: {} rows held + a block of {} > context size {}", n_past, M,
                    memory.capacity()));
  }
  const int64_t D = hp_.n_embd, q_dim = hp_.q_dim(), kv_dim = hp_.kv_dim(), hd = hp_.head_dim;
  for (int64_t row = 0; row < M; ++row) {
    const int32_t token = tokens[static_cast<size_t>(row)];
    if (token < 0 || token >= hp_.n_vocab) {
      throw InvalidArgument(fmt::format("token id {} out of range [0, {})", token, hp_.n_vocab));
    }
    tensor::dequantize_row(token_embd_.type, token_embd_.row(token), &ws.x[row * D], D);
    blocks::rope_angles(static_cast<int32_t>(n_past + row), hp_.n_rot, hp_.rope_base,
                        &ws.rope[row * hp_.n_rot]);
  }
  for (int64_t l = 0; l < hp_.n_layer; ++l) {
    const Layer& layer = layers_[static_cast<size_t>(l)];
    for (int64_t row = 0; row < M; ++row) {
      blocks::rms_norm(&ws.x[row * D], layer.attn_norm.data(), &ws.h[row * D], D, hp_.rms_eps);
    }
    kernels::matmul(layer.wq, ws.h.data(), M, ws.q.data(), pool);
    kernels::matmul(layer.wk, ws.h.data(), M, ws.k.data(), pool);
    kernels::matmul(layer.wv, ws.h.data(), M, ws.v.data(), pool);
    norm_rope(ws.q.data(), M, hp_.n_head, layer.q_norm, ws.rope.data());
    norm_rope(ws.k.data(), M, hp_.n_head_kv, layer.k_norm, ws.rope.data());
    const KvRows kv = memory.kv(static_cast<int>(l));
    for (int64_t row = 0; row < M; ++row) {
      for (int64_t head = 0; head < hp_.n_head_kv; ++head) {
        blocks::write_kv(kv, head, n_past + row, &ws.k[row * kv_dim + head * hd],
                         &ws.v[row * kv_dim + head * hd], hd);
      }
    }
    // Non-causal: each block row sees all n_past + M rows. attention() lets batch row i of a
    // call see rows up to n_past' + i, so each row is its own call with n_past' = n_past + M - 1.
    for (int64_t row = 0; row < M; ++row) {
      blocks::attention(&ws.q[row * q_dim], memory, static_cast<int>(l), n_past + M - 1, 1, hp_,
                        &ws.attn[row * q_dim], pool);
    }
    kernels::matmul(layer.wo, ws.attn.data(), M, ws.proj.data(), pool);
    for (int64_t i = 0; i < M * D; ++i) ws.x[i] += ws.proj[i];
    for (int64_t row = 0; row < M; ++row) {
      blocks::rms_norm(&ws.x[row * D], layer.ffn_norm.data(), &ws.h[row * D], D, hp_.rms_eps);
    }
    kernels::matmul(layer.w_gate, ws.h.data(), M, ws.gate.data(), pool);
    kernels::matmul(layer.w_up, ws.h.data(), M, ws.up.data(), pool);
    blocks::silu_mul(ws.gate.data(), ws.up.data(), M * hp_.n_ff);
    kernels::matmul(layer.w_down, ws.gate.data(), M, ws.proj.data(), pool);
    for (int64_t i = 0; i < M * D; ++i) ws.x[i] += ws.proj[i];
  }
  AUGUR_CHECK(first_out >= 0 && first_out < M, "a block's first output row within it");
  const int64_t n_out = M - first_out;
  for (int64_t i = 0; i < n_out; ++i) {
    blocks::rms_norm(&ws.x[(first_out + i) * D], output_norm_.data(), &ws.h[i * D], D, hp_.rms_eps);
  }
  if (d2t_.empty()) {
    kernels::matmul(output_, ws.h.data(), n_out, logits, pool);
    return;
  }
  kernels::matmul(output_, ws.h.data(), n_out, ws.draft_logits.data(), pool);
  scatter_d2t(d2t_, ws.draft_logits.data(), n_out, hp_.n_vocab, logits);
}

}  // namespace augur::model::heads
