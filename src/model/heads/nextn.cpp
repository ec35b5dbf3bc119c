#include "model/heads/nextn.h"

#include <fmt/format.h>

#include <algorithm>
#include <string>

#include "common/error.h"
#include "kernels/matmul.h"
#include "model/blocks/attention.h"
#include "model/blocks/ops.h"
#include "model/blocks/weights.h"

namespace augur::model::heads {
namespace {

using blocks::load_matrix;
using blocks::load_vector;

struct NextNWorkspace final : Workspace {
  NextNWorkspace(const HParams& hp, int64_t rows)
      : max_rows(rows),
        x2(rows * 2 * hp.n_embd),
        x(rows * hp.n_embd),
        h(rows * hp.n_embd),
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
    for (const auto* b : {&x2, &x, &h, &q, &k, &v, &attn, &proj, &gate, &up, &rope}) {
      n += static_cast<int64_t>(b->capacity() * sizeof(float));
    }
    return n;
  }
  int64_t max_rows;
  std::vector<float> x2, x, h, q, k, v, attn, proj, gate, up, rope;
};

}  // namespace

std::unique_ptr<NextN> NextN::load(const Model& target) {
  return std::unique_ptr<NextN>(new NextN(target));
}

NextN::NextN(const Model& target) : target_(target) {
  const HParams& thp = target.hparams();
  const gguf::File& f = target.file();
  if (thp.n_nextn == 0) {
    throw Unsupported(fmt::format(
        "{}: the model has no MTP / NextN layer ({}.nextn_predict_layers is absent or 0): "
        "--draft mtp needs one",
        f.path(), thp.arch));
  }
  if (thp.n_nextn > 1) {
    throw Unsupported(
        fmt::format("{}: {} NextN layers; only one is supported", f.path(), thp.n_nextn));
  }
  if (thp.arch != "llama" && thp.arch != "qwen3") {
    throw Unsupported(
        fmt::format("{}: MTP layers of architecture '{}' are not supported (llama and qwen3 are)",
                    f.path(), thp.arch));
  }
  hp_ = thp;
  hp_.arch = "mtp";
  hp_.n_layer = 1;
  hp_.n_nextn = 0;
  taps_ = {static_cast<int32_t>(thp.n_layer)};
  const int64_t D = hp_.n_embd;
  const int64_t L = thp.n_layer;
  const auto name = [L](const char* what) { return fmt::format("blk.{}.{}.weight", L, what); };
  for (const auto& t : f.tensors()) {
    if (t.name.starts_with(fmt::format("blk.{}.", L)))
      own_bytes_ += static_cast<int64_t>(t.n_bytes);
  }
  if (f.find_tensor(name("attn_q.bias")) || f.find_tensor(fmt::format("blk.{}.attn_q.bias", L))) {
    throw Unsupported(
        fmt::format("{}: attention biases in the MTP layer are not supported", f.path()));
  }
  eh_proj_ = load_matrix(f, name("nextn.eh_proj"), 2 * D, D);
  enorm_ = load_vector(f, name("nextn.enorm"), D);
  hnorm_ = load_vector(f, name("nextn.hnorm"), D);
  const auto own_or = [&](const char* own, const char* shared) {
    return f.find_tensor(name(own)) ? name(own) : std::string(shared);
  };
  token_embd_ = load_matrix(f, own_or("nextn.embed_tokens", "token_embd.weight"), D, hp_.n_vocab);
  const std::string head = f.find_tensor(name("nextn.shared_head_head"))
                               ? name("nextn.shared_head_head")
                           : f.find_tensor("output.weight") ? std::string("output.weight")
                                                            : std::string("token_embd.weight");
  output_ = load_matrix(f, head, D, hp_.n_vocab);
  head_norm_ = load_vector(f, own_or("nextn.shared_head_norm", "output_norm.weight"), D);

  attn_norm_ = load_vector(f, name("attn_norm"), D);
  wq_ = load_matrix(f, name("attn_q"), D, hp_.q_dim());
  wk_ = load_matrix(f, name("attn_k"), D, hp_.kv_dim());
  wv_ = load_matrix(f, name("attn_v"), D, hp_.kv_dim());
  wo_ = load_matrix(f, name("attn_output"), hp_.q_dim(), D);
  if (f.find_tensor(name("attn_q_norm"))) {
    q_norm_ = load_vector(f, name("attn_q_norm"), hp_.head_dim);
    k_norm_ = load_vector(f, name("attn_k_norm"), hp_.head_dim);
  }
  ffn_norm_ = load_vector(f, name("ffn_norm"), D);
  w_gate_ = load_matrix(f, name("ffn_gate"), D, hp_.n_ff);
  w_up_ = load_matrix(f, name("ffn_up"), D, hp_.n_ff);
  w_down_ = load_matrix(f, name("ffn_down"), hp_.n_ff, D);
}

std::unique_ptr<Workspace> NextN::make_workspace(int64_t max_rows, int64_t /*n_ctx*/) const {
  return std::make_unique<NextNWorkspace>(hp_, max_rows);
}

void NextN::fuse(const float* features, int64_t rows, float* hidden,
                 kernels::ThreadPool& /*pool*/) const {
  std::copy(features, features + rows * hp_.n_embd, hidden);  // h itself
}

void NextN::forward_ubatch(const UbatchRequest& req, Memory& memory, Workspace& workspace,
                           kernels::ThreadPool& pool) const {
  auto& ws = static_cast<NextNWorkspace&>(workspace);
  const int64_t M = static_cast<int64_t>(req.tokens.size());
  AUGUR_CHECK(M > 0 && M <= ws.max_rows, "ubatch larger than the workspace");
  AUGUR_CHECK(req.positions.size() == req.tokens.size(), "one position per token");
  if (!req.hidden_in) throw InvalidArgument("an MTP forward needs h for every row");
  if (!req.capture_layers.empty()) throw Unsupported("feature capture from a drafter head");
  const int64_t n_past = memory.n_rows();
  if (n_past + M > memory.capacity()) {
    throw InvalidArgument(fmt::format("context full: {} rows held + {} new > context size {}",
                                      n_past, M, memory.capacity()));
  }
  const int64_t D = hp_.n_embd, q_dim = hp_.q_dim(), kv_dim = hp_.kv_dim(), hd = hp_.head_dim;
  for (int64_t row = 0; row < M; ++row) {
    const int32_t token = req.tokens[static_cast<size_t>(row)];
    if (token < 0 || token >= hp_.n_vocab) {
      throw InvalidArgument(fmt::format("token id {} out of range [0, {})", token, hp_.n_vocab));
    }
    float* x2 = &ws.x2[row * 2 * D];
    tensor::dequantize_row(token_embd_.type, token_embd_.row(token), x2, D);
    blocks::rms_norm(x2, enorm_.data(), x2, D, hp_.rms_eps);
    blocks::rms_norm(req.hidden_in + row * D, hnorm_.data(), x2 + D, D, hp_.rms_eps);
    blocks::rope_angles(req.positions[static_cast<size_t>(row)], hp_.n_rot, hp_.rope_base,
                        &ws.rope[row * hp_.n_rot]);
  }
  kernels::matmul(eh_proj_, ws.x2.data(), M, ws.x.data(), pool);
  for (int64_t row = 0; row < M; ++row) {
    blocks::rms_norm(&ws.x[row * D], attn_norm_.data(), &ws.h[row * D], D, hp_.rms_eps);
  }
  kernels::matmul(wq_, ws.h.data(), M, ws.q.data(), pool);
  kernels::matmul(wk_, ws.h.data(), M, ws.k.data(), pool);
  kernels::matmul(wv_, ws.h.data(), M, ws.v.data(), pool);
  const KvRows kv = memory.kv(0);
  for (int64_t row = 0; row < M; ++row) {
    float* q = &ws.q[row * q_dim];
    float* k = &ws.k[row * kv_dim];
    if (!q_norm_.empty()) {
      for (int64_t h = 0; h < hp_.n_head; ++h) {
        blocks::rms_norm(q + h * hd, q_norm_.data(), q + h * hd, hd, hp_.rms_eps);
      }
      for (int64_t h = 0; h < hp_.n_head_kv; ++h) {
        blocks::rms_norm(k + h * hd, k_norm_.data(), k + h * hd, hd, hp_.rms_eps);
      }
    }
    blocks::apply_rope(q, hp_.n_head, hd, hp_.n_rot, hp_.rope_type, &ws.rope[row * hp_.n_rot]);
    blocks::apply_rope(k, hp_.n_head_kv, hd, hp_.n_rot, hp_.rope_type, &ws.rope[row * hp_.n_rot]);
    for (int64_t head = 0; head < hp_.n_head_kv; ++head) {
      blocks::write_kv(kv, head, n_past + row, k + head * hd, &ws.v[row * kv_dim + head * hd], hd);
    }
  }
  blocks::attention(ws.q.data(), memory, 0, n_past, M, hp_, ws.attn.data(), pool);
  kernels::matmul(wo_, ws.attn.data(), M, ws.proj.data(), pool);
  for (int64_t i = 0; i < M * D; ++i) ws.x[i] += ws.proj[i];
  for (int64_t row = 0; row < M; ++row) {
    blocks::rms_norm(&ws.x[row * D], ffn_norm_.data(), &ws.h[row * D], D, hp_.rms_eps);
  }
  kernels::matmul(w_gate_, ws.h.data(), M, ws.gate.data(), pool);
  kernels::matmul(w_up_, ws.h.data(), M, ws.up.data(), pool);
  blocks::silu_mul(ws.gate.data(), ws.up.data(), M * hp_.n_ff);
  kernels::matmul(w_down_, ws.gate.data(), M, ws.proj.data(), pool);
  for (int64_t i = 0; i < M * D; ++i) ws.x[i] += ws.proj[i];
  memory.advance(M);
  // h' = the shared head's norm of the block output: fed back as h, and what the logits read.
  for (int64_t row = 0; row < M; ++row) {
    blocks::rms_norm(&ws.x[row * D], head_norm_.data(), &ws.h[row * D], D, hp_.rms_eps);
  }
  if (req.hidden_out) std::copy(ws.h.begin(), ws.h.begin() + M * D, req.hidden_out);
  if (req.out_rows.empty()) return;
  const auto n_out = static_cast<int64_t>(req.out_rows.size());
  for (int64_t i = 0; i < n_out; ++i) {
    const int32_t row = req.out_rows[static_cast<size_t>(i)];
    AUGUR_CHECK(row >= 0 && row < M, "out_rows index within the ubatch");
    std::copy_n(&ws.h[row * D], D, &ws.proj[i * D]);
  }
  kernels::matmul(output_, ws.proj.data(), n_out, req.logits, pool);
}

}  // namespace augur::model::heads
