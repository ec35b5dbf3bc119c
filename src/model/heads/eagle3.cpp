#include "model/heads/eagle3.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>

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

struct Eagle3Workspace final : Workspace {
  Eagle3Workspace(const HParams& hp, int64_t rows)
      : max_rows(rows),
        x2(rows * 2 * hp.n_embd),
        q(rows * hp.q_dim()),
        k(rows * hp.kv_dim()),
        v(rows * hp.kv_dim()),
        attn(rows * hp.q_dim()),
        r(rows * hp.n_embd),
        rn(rows * hp.n_embd),
        gate(rows * hp.n_ff),
        up(rows * hp.n_ff),
        y(rows * hp.n_embd),
        rope(rows * hp.n_rot),
        out_hidden(rows * hp.n_embd) {}
  int64_t bytes() const override {
    int64_t n = 0;
    for (const auto* b : {&x2, &q, &k, &v, &attn, &r, &rn, &gate, &up, &y, &rope, &out_hidden}) {
      n += static_cast<int64_t>(b->capacity() * sizeof(float));
    }
    return n + static_cast<int64_t>(draft_logits.capacity() * sizeof(float));
  }
  int64_t max_rows;
  std::vector<float> x2, q, k, v, attn, r, rn, gate, up, y, rope, out_hidden, draft_logits;
};

}  // namespace

std::unique_ptr<Eagle3> Eagle3::load(const std::filesystem::path& path, const Model& target) {
  return load(gguf::File::open(path), target);
}

std::unique_ptr<Eagle3> Eagle3::load(std::unique_ptr<gguf::File> file, const Model& target) {
  const std::string arch(file->get_string_opt("general.architecture").value_or(""));
  if (arch != "eagle3") {
    throw InvalidArgument(
        fmt::format("{}: general.architecture is '{}', not 'eagle3': not an EAGLE-3 drafter",
                    file->path(), arch));
  }
  return std::unique_ptr<Eagle3>(new Eagle3(std::move(file), target));
}

Eagle3::Eagle3(std::unique_ptr<gguf::File> file, const Model& target) : file_(std::move(file)) {
  const gguf::File& f = *file_;
  const HParams& thp = target.hparams();
  if (checked_int(f, "eagle3.block_count", 1, kMaxHeadWidth) != 1) {
    throw Unsupported(fmt::format("{}: eagle3.block_count must be 1", f.path()));
  }
  hp_.arch = "eagle3";
  hp_.n_layer = 1;
  hp_.n_embd = checked_int(f, "eagle3.embedding_length", 1, kMaxHeadWidth);
  hp_.n_ff = checked_int(f, "eagle3.feed_forward_length", 1, 4 * kMaxHeadWidth);
  hp_.n_head = checked_int(f, "eagle3.attention.head_count", 1, 1024);
  hp_.n_head_kv = f.has("eagle3.attention.head_count_kv")
                      ? checked_int(f, "eagle3.attention.head_count_kv", 1, hp_.n_head)
                      : hp_.n_head;
  if (hp_.n_embd % hp_.n_head != 0 || hp_.n_head % hp_.n_head_kv != 0) {
    throw FormatError(fmt::format("{}: {} heads ({} kv heads) do not divide width {}", f.path(),
                                  hp_.n_head, hp_.n_head_kv, hp_.n_embd));
  }
  hp_.head_dim = hp_.n_embd / hp_.n_head;
  hp_.n_rot = f.has("eagle3.rope.dimension_count")
                  ? checked_int(f, "eagle3.rope.dimension_count", 2, hp_.head_dim)
                  : hp_.head_dim;
  if (hp_.n_rot % 2 != 0) throw FormatError(fmt::format("{}: odd rope dimension", f.path()));
  if (f.has("eagle3.rope.scaling.type") &&
      f.get_string("eagle3.rope.scaling.type") != std::string_view("none")) {
    throw Unsupported(fmt::format("{}: eagle3 rope scaling '{}' is not supported", f.path(),
                                  f.get_string("eagle3.rope.scaling.type")));
  }
  if (f.find_tensor("rope_freqs.weight")) {
    throw Unsupported(
        fmt::format("{}: rope_freqs (llama3 rope scaling) is not supported", f.path()));
  }
  hp_.rope_base = static_cast<float>(f.get_float_opt("eagle3.rope.freq_base").value_or(10000.0));
  hp_.rms_eps =
      static_cast<float>(f.get_float_opt("eagle3.attention.layer_norm_rms_epsilon").value_or(1e-6));
  hp_.rope_type = RopeType::Norm;
  hp_.n_ctx_train = f.get_int_opt("eagle3.context_length").value_or(thp.n_ctx_train);
  hp_.n_vocab = thp.n_vocab;

  // Taps: exactly three target layer inputs (index n_layer = the target's final hidden state).
  const std::vector<int64_t> taps = f.get_int_array("eagle3.target_layers");
  if (taps.size() != 3) {
    throw FormatError(
        fmt::format("{}: eagle3.target_layers has {} entries, expected 3", f.path(), taps.size()));
  }
  for (const int64_t t : taps) {
    if (t < 0 || t > thp.n_layer) {
      throw InvalidArgument(
          fmt::format("{}: eagle3.target_layers entry {} is outside the target's layers 0..{}",
                      f.path(), t, thp.n_layer));
    }
    target_layers_.push_back(static_cast<int32_t>(t));
  }
  target_hidden_ = checked_int(f, "eagle3.target_hidden_size", 1, kMaxHeadWidth);
  if (target_hidden_ != thp.n_embd) {
    throw InvalidArgument(fmt::format(
        "{}: eagle3.target_hidden_size is {} but the target's hidden size is {}: a drafter for "
        "another model",
        f.path(), target_hidden_, thp.n_embd));
  }
  norm_before_residual_ = f.get_bool_opt("eagle3.norm_before_residual").value_or(false);
  const int64_t D = hp_.n_embd, F3 = 3 * target_hidden_;
  if (f.get_bool_opt("eagle3.norm_before_fc").value_or(false)) {
    fc_norm_ = load_vector(f, "enc.output_norm.weight", F3);
  }
  fc_ = load_matrix(f, "fc.weight", F3, D);

  HeadVocab vocab = load_head_vocab(f, target, D);
  token_embd_ = vocab.token_embd;
  output_ = vocab.output;
  d2t_ = std::move(vocab.d2t);

  attn_norm_ = load_vector(f, "blk.0.attn_norm.weight", D);
  attn_norm_2_ = load_vector(f, "blk.0.attn_norm_2.weight", D);
  wq_ = load_matrix(f, "blk.0.attn_q.weight", 2 * D, hp_.q_dim());
  wk_ = load_matrix(f, "blk.0.attn_k.weight", 2 * D, hp_.kv_dim());
  wv_ = load_matrix(f, "blk.0.attn_v.weight", 2 * D, hp_.kv_dim());
  wo_ = load_matrix(f, "blk.0.attn_output.weight", hp_.q_dim(), D);
  ffn_norm_ = load_vector(f, "blk.0.ffn_norm.weight", D);
  w_gate_ = load_matrix(f, "blk.0.ffn_gate.weight", D, hp_.n_ff);
  w_up_ = load_matrix(f, "blk.0.ffn_up.weight", D, hp_.n_ff);
  w_down_ = load_matrix(f, "blk.0.ffn_down.weight", hp_.n_ff, D);
  output_norm_ = load_vector(f, "output_norm.weight", D);
}

std::unique_ptr<Workspace> Eagle3::make_workspace(int64_t max_rows, int64_t /*n_ctx*/) const {
  auto ws = std::make_unique<Eagle3Workspace>(hp_, max_rows);
  if (!d2t_.empty()) ws->draft_logits.resize(static_cast<size_t>(max_rows * output_.rows));
  return ws;
}

void Eagle3::fuse(const float* features, int64_t rows, float* g, kernels::ThreadPool& pool) const {
  const int64_t F3 = 3 * target_hidden_;
  if (fc_norm_.empty()) {
    kernels::matmul(fc_, features, rows, g, pool);
    return;
  }
  std::vector<float> normed(static_cast<size_t>(rows * F3));
  for (int64_t r = 0; r < rows; ++r) {
    blocks::rms_norm(features + r * F3, fc_norm_.data(), normed.data() + r * F3, F3, hp_.rms_eps);
  }
  kernels::matmul(fc_, normed.data(), rows, g, pool);
}

void Eagle3::forward_ubatch(const UbatchRequest& req, Memory& memory, Workspace& workspace,
                            kernels::ThreadPool& pool) const {
  auto& ws = static_cast<Eagle3Workspace&>(workspace);
  const int64_t M = static_cast<int64_t>(req.tokens.size());
  AUGUR_CHECK(M > 0 && M <= ws.max_rows, "ubatch larger than the workspace");
  AUGUR_CHECK(req.positions.size() == req.tokens.size(), "one position per token");
  if (!req.hidden_in) throw InvalidArgument("an EAGLE-3 forward needs g for every row");
  if (!req.capture_layers.empty()) throw Unsupported("feature capture from a drafter head");
  const int64_t n_past = memory.n_rows();
  if (n_past + M > memory.capacity()) {
    throw InvalidArgument(fmt::format("context full: {} rows held + {} new > context size {}",
                                      n_past, M, memory.capacity()));
  }
  const int64_t D = hp_.n_embd, q_dim = hp_.q_dim(), kv_dim = hp_.kv_dim();
  const float* g = req.hidden_in;
  for (int64_t row = 0; row < M; ++row) {
    const int32_t token = req.tokens[static_cast<size_t>(row)];
    if (token < 0 || token >= hp_.n_vocab) {
      throw InvalidArgument(fmt::format("token id {} out of range [0, {})", token, hp_.n_vocab));
    }
    float* x = &ws.x2[row * 2 * D];
    tensor::dequantize_row(token_embd_.type, token_embd_.row(token), x, D);  // embedding first
    blocks::rms_norm(x, attn_norm_.data(), x, D, hp_.rms_eps);
    blocks::rms_norm(g + row * D, attn_norm_2_.data(), x + D, D, hp_.rms_eps);
    blocks::rope_angles(req.positions[static_cast<size_t>(row)], hp_.n_rot, hp_.rope_base,
                        &ws.rope[row * hp_.n_rot]);
  }
  kernels::matmul(wq_, ws.x2.data(), M, ws.q.data(), pool);
  kernels::matmul(wk_, ws.x2.data(), M, ws.k.data(), pool);
  kernels::matmul(wv_, ws.x2.data(), M, ws.v.data(), pool);
  const KvRows kv = memory.kv(0);
  for (int64_t row = 0; row < M; ++row) {
    float* q = &ws.q[row * q_dim];
    float* k = &ws.k[row * kv_dim];
    blocks::apply_rope(q, hp_.n_head, hp_.head_dim, hp_.n_rot, hp_.rope_type,
                       &ws.rope[row * hp_.n_rot]);
    blocks::apply_rope(k, hp_.n_head_kv, hp_.head_dim, hp_.n_rot, hp_.rope_type,
                       &ws.rope[row * hp_.n_rot]);
    for (int64_t head = 0; head < hp_.n_head_kv; ++head) {
      blocks::write_kv(kv, head, n_past + row, k + head * hp_.head_dim,
                       &ws.v[row * kv_dim + head * hp_.head_dim], hp_.head_dim);
    }
  }
  blocks::attention(ws.q.data(), memory, 0, n_past, M, hp_, ws.attn.data(), pool);
  kernels::matmul(wo_, ws.attn.data(), M, ws.r.data(), pool);
  for (int64_t row = 0; row < M; ++row) {
    const float* residual = norm_before_residual_ ? &ws.x2[row * 2 * D + D] : g + row * D;
    for (int64_t i = 0; i < D; ++i) ws.r[row * D + i] += residual[i];
    blocks::rms_norm(&ws.r[row * D], ffn_norm_.data(), &ws.rn[row * D], D, hp_.rms_eps);
  }
  kernels::matmul(w_gate_, ws.rn.data(), M, ws.gate.data(), pool);
  kernels::matmul(w_up_, ws.rn.data(), M, ws.up.data(), pool);
  blocks::silu_mul(ws.gate.data(), ws.up.data(), M * hp_.n_ff);
  kernels::matmul(w_down_, ws.gate.data(), M, ws.y.data(), pool);
  for (int64_t i = 0; i < M * D; ++i) ws.y[i] += ws.r[i];
  memory.advance(M);
  if (req.hidden_out) std::copy(ws.y.begin(), ws.y.begin() + M * D, req.hidden_out);

  if (req.out_rows.empty()) return;
  const auto n_out = static_cast<int64_t>(req.out_rows.size());
  for (int64_t i = 0; i < n_out; ++i) {
    const int32_t row = req.out_rows[static_cast<size_t>(i)];
    AUGUR_CHECK(row >= 0 && row < M, "out_rows index within the ubatch");
    blocks::rms_norm(&ws.y[row * D], output_norm_.data(), &ws.out_hidden[i * D], D, hp_.rms_eps);
  }
  if (d2t_.empty()) {
    kernels::matmul(output_, ws.out_hidden.data(), n_out, req.logits, pool);
    return;
  }
  // Reduced vocabulary: the head's rows land on their target ids; no other token can be drafted.
  kernels::matmul(output_, ws.out_hidden.data(), n_out, ws.draft_logits.data(), pool);
  scatter_d2t(d2t_, ws.draft_logits.data(), n_out, hp_.n_vocab, req.logits);
}

}  // namespace augur::model::heads
