#include "model/blocks/decoder.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "common/error.h"
#include "kernels/matmul.h"
#include "model/blocks/attention.h"
#include "model/blocks/ops.h"
#include "model/blocks/weights.h"
#include "model/feature_taps.h"

namespace augur::model::blocks {

namespace {

// [heads, 2, head_dim] (each head's query, then its gate) -> [heads, head_dim] twice.
void split_query_and_gate(const float* q_and_gate, int64_t heads, int64_t head_dim, float* q,
                          float* gate) {
  for (int64_t h = 0; h < heads; ++h) {
    const float* src = q_and_gate + 2 * h * head_dim;
    std::copy(src, src + head_dim, q + h * head_dim);
    std::copy(src + head_dim, src + 2 * head_dim, gate + h * head_dim);
  }
}

float sigmoid(float x) {
  return 1.0f / (1.0f + std::exp(-x));
}

// y = rms_norm(x) * w for M rows of n, the rows split over the pool when there are several: each
// row is normed on its own, so the bits do not depend on the split.
void norm_rows(const float* x, const float* w, float* y, int64_t M, int64_t n, float eps,
               kernels::ThreadPool& pool) {
  const struct {
    const float *x, *w;
    float* y;
    int64_t n;
    float eps;
  } job{x, w, y, n, eps};
  // Captures one pointer, so std::function does not allocate.
  const auto* at = &job;
  pool.parallel_for(M, [at](int64_t begin, int64_t end) {
    for (int64_t row = begin; row < end; ++row) {
      rms_norm(at->x + row * at->n, at->w, at->y + row * at->n, at->n, at->eps);
    }
  });
}

// gate = act(gate) * up over M rows of n_ff, rows split over the pool: element-wise, so the
// same bits on any split, and at a verify's few rows of a wide FFN worth more than one core.
void ffn_activation(FfnActivation act, float* gate, const float* up, int64_t M, int64_t n_ff,
                    kernels::ThreadPool& pool) {
  const struct {
    FfnActivation act;
    float* gate;
    const float* up;
    int64_t n_ff;
  } job{act, gate, up, n_ff};
  // Captures one pointer, so std::function does not allocate.
  const auto* at = &job;
  pool.parallel_for(M, [at](int64_t begin, int64_t end) {
    float* g = at->gate + begin * at->n_ff;
    const float* u = at->up + begin * at->n_ff;
    const int64_t n = (end - begin) * at->n_ff;
    if (at->act == FfnActivation::kGeluTanh) {
      gelu_mul(g, u, n);
    } else {
      silu_mul(g, u, n);
    }
  });
}

}  // namespace

struct DecoderWorkspace final : Workspace {
  DecoderWorkspace(const HParams& hp, const DecoderOptions& options, int64_t max_rows_,
                   int64_t n_ctx_)
      : max_rows(max_rows_),
        n_ctx(n_ctx_),
        x(max_rows * hp.n_embd),
        xn(max_rows * hp.n_embd),
        q(max_rows * hp.q_dim()),
        k(max_rows * hp.kv_dim()),
        v(max_rows * hp.kv_dim()),
        attn(max_rows * hp.q_dim()),
        gate(max_rows * hp.n_ff),
        up(max_rows * hp.n_ff),
        rope(max_rows * hp.n_rot),
        rope_swa(hp.rope_base_swa > 0 ? max_rows * hp.n_rot : 0),
        out_hidden(max_rows * hp.n_embd),
        q_and_gate(options.attn_output_gate ? 2 * max_rows * hp.q_dim() : 0),
        attn_gate(options.attn_output_gate ? max_rows * hp.q_dim() : 0) {
    if (!hp.recurrent_layers.empty()) deltanet = GatedDeltaNetScratch(options.deltanet, max_rows);
    if (hp.n_expert > 0) moe.emplace(hp, max_rows);
  }
  int64_t bytes() const override {
    int64_t n = deltanet.bytes() + (moe ? moe->bytes() : 0);
    for (const auto* buffer : {&x, &xn, &q, &k, &v, &attn, &gate, &up, &rope, &rope_swa,
                               &out_hidden, &q_and_gate, &attn_gate}) {
      n += static_cast<int64_t>(buffer->capacity() * sizeof(float));
    }
    return n;
  }
  int64_t max_rows, n_ctx;
  std::vector<float> x, xn;       // [max_rows, n_embd] residual stream, normed input
  std::vector<float> q, k, v;     // [max_rows, q_dim], [max_rows, kv_dim] x2
  std::vector<float> attn;        // [max_rows, q_dim]
  std::vector<float> gate, up;    // [max_rows, n_ff]
  std::vector<float> rope;        // [max_rows, n_rot/2, 2]
  std::vector<float> rope_swa;    // the same with the sliding-window layers' base, if their own
  std::vector<float> out_hidden;  // [max_rows, n_embd] normed rows whose logits are wanted
  std::vector<float> q_and_gate;  // [max_rows, n_head, 2, head_dim] if attn_output_gate
  std::vector<float> attn_gate;   // [max_rows, q_dim] the gate part of it
  GatedDeltaNetScratch deltanet;  // if any layer is recurrent
  std::optional<MoeScratch> moe;  // mixture-of-experts models only
};

Decoder::Decoder(std::unique_ptr<gguf::File> file, HParams hparams, DecoderOptions options)
    : file_(std::move(file)), hp_(std::move(hparams)), options_(options) {
  AUGUR_CHECK(options_.moe == (hp_.n_expert > 0), "expert counts read for MoE decoders only");
  const gguf::File& f = *file_;
  const int64_t n_embd = hp_.n_embd, q_dim = hp_.q_dim(), kv_dim = hp_.kv_dim();
  token_embd_ = load_matrix(f, "token_embd.weight", n_embd, hp_.n_vocab);
  if (f.find_tensor("output.weight") || !options_.tied_output) {
    output_ = load_matrix(f, "output.weight", n_embd, hp_.n_vocab);
  } else {
    output_ = token_embd_;
  }
  output_norm_ = load_vector(f, "output_norm.weight", n_embd);
  // n_layer matches the file's blk.N tensors (read_decoder_hparams), so this is bounded by them.
  layers_.resize(static_cast<size_t>(hp_.n_layer));
  for (int layer = 0; layer < hp_.n_layer; ++layer) {
    auto& l = layers_[static_cast<size_t>(layer)];
    auto name = [&](const char* n) { return layer_tensor(layer, n); };
    l.attn_norm = load_vector(f, name("attn_norm.weight"), n_embd);
    l.ffn_norm = load_vector(f, name((options_.ffn_norm + ".weight").c_str()), n_embd);
    if (options_.moe) {
      l.moe = load_moe_weights(f, layer, hp_);
    } else {
      l.w_gate = load_matrix(f, name("ffn_gate.weight"), n_embd, hp_.n_ff);
      l.w_up = load_matrix(f, name("ffn_up.weight"), n_embd, hp_.n_ff);
      l.w_down = load_matrix(f, name("ffn_down.weight"), hp_.n_ff, n_embd);
    }
    if (hp_.is_recurrent(layer)) {
      l.deltanet = load_gated_deltanet(f, layer, options_.deltanet);
      continue;
    }
    l.wq = load_matrix(f, name("attn_q.weight"), n_embd,
                       options_.attn_output_gate ? 2 * q_dim : q_dim);
    l.wk = load_matrix(f, name("attn_k.weight"), n_embd, kv_dim);
    l.wv = load_matrix(f, name("attn_v.weight"), n_embd, kv_dim);
    l.wo = load_matrix(f, name("attn_output.weight"), q_dim, n_embd);
    if (options_.qkv_bias) {
      l.bq = load_vector(f, name("attn_q.bias"), q_dim);
      l.bk = load_vector(f, name("attn_k.bias"), kv_dim);
      l.bv = load_vector(f, name("attn_v.bias"), kv_dim);
    }
    if (options_.qk_norm) {
      l.q_norm = load_vector(f, name("attn_q_norm.weight"), hp_.head_dim);
      l.k_norm = load_vector(f, name("attn_k_norm.weight"), hp_.head_dim);
    }
    if (options_.post_norms) {
      l.post_attn_norm = load_vector(f, name("post_attention_norm.weight"), n_embd);
      l.post_ffn_norm = load_vector(f, name("post_ffw_norm.weight"), n_embd);
    }
  }
}

std::unique_ptr<Workspace> Decoder::make_workspace(int64_t max_rows, int64_t n_ctx) const {
  return std::make_unique<DecoderWorkspace>(hp_, options_, max_rows, n_ctx);
}

std::vector<LayerCache> Decoder::cache_layout() const {
  std::vector<LayerCache> layout;
  for (int64_t layer = 0; layer < hp_.n_layer; ++layer) {
    layout.push_back(hp_.is_recurrent(layer)
                         ? LayerCache::recurrent(options_.deltanet.state_floats())
                         : LayerCache::attention(hp_.is_swa(layer) ? hp_.sliding_window : 0));
  }
  return layout;
}

void Decoder::forward_ubatch(const UbatchRequest& req, Memory& memory, Workspace& workspace,
                             kernels::ThreadPool& pool) const {
  const MemorySegment whole{0, static_cast<int64_t>(req.tokens.size()), &memory};
  forward_segments(req, std::span<const MemorySegment>(&whole, 1), workspace, pool);
}

void Decoder::forward_segments(const UbatchRequest& req, std::span<const MemorySegment> segments,
                               Workspace& workspace, kernels::ThreadPool& pool) const {
  auto& ws = static_cast<DecoderWorkspace&>(workspace);
  const int64_t M = static_cast<int64_t>(req.tokens.size());
  AUGUR_CHECK(M > 0 && M <= ws.max_rows, "ubatch larger than the workspace");
  AUGUR_CHECK(req.positions.size() == req.tokens.size(), "one position per token");
  // Each segment's rows held before this batch; the segments tile the batch in order.
  std::vector<int64_t> n_past(segments.size());
  int64_t covered = 0;
  for (size_t s = 0; s < segments.size(); ++s) {
    const MemorySegment& seg = segments[s];
    AUGUR_CHECK(seg.first_row == covered && seg.n_rows > 0, "segments tile the ubatch in order");
    covered += seg.n_rows;
    n_past[s] = seg.memory->n_rows();
    if (n_past[s] + seg.n_rows > seg.memory->capacity()) {
      throw InvalidArgument(fmt::format("context full: {} rows held + {} new > context size {}",
                                        n_past[s], seg.n_rows, seg.memory->capacity()));
    }
    if (seg.n_rows > seg.memory->max_batch()) {
      throw InvalidArgument(fmt::format("a forward of {} rows on a cache made for batches of {}",
                                        seg.n_rows, seg.memory->max_batch()));
    }
  }
  AUGUR_CHECK(covered == M, "segments cover the ubatch");
  const int64_t n_embd = hp_.n_embd;
  const int n_layers = req.n_layers < 0 ? static_cast<int>(hp_.n_layer)
                                        : std::min(req.n_layers, static_cast<int>(hp_.n_layer));

  for (int64_t row = 0; row < M; ++row) {
    const int32_t token = req.tokens[static_cast<size_t>(row)];
    if (token < 0 || token >= hp_.n_vocab) {
      throw InvalidArgument(fmt::format("token id {} out of range [0, {})", token, hp_.n_vocab));
    }
    float* x = &ws.x[row * n_embd];
    tensor::dequantize_row(token_embd_.type, token_embd_.row(token), x, n_embd);
    if (options_.scale_embeddings) {
      const float scale = std::sqrt(static_cast<float>(n_embd));
      for (int64_t i = 0; i < n_embd; ++i) x[i] *= scale;
    }
    const int32_t position = req.positions[static_cast<size_t>(row)];
    rope_angles(position, hp_.n_rot, hp_.rope_base, &ws.rope[row * hp_.n_rot]);
    if (!ws.rope_swa.empty()) {
      rope_angles(position, hp_.n_rot, hp_.rope_base_swa, &ws.rope_swa[row * hp_.n_rot]);
    }
  }

  const FeatureTaps taps(req, static_cast<int>(hp_.n_layer), n_layers);
  for (int layer = 0; layer < n_layers; ++layer) {
    const DecoderLayer& l = layers_[static_cast<size_t>(layer)];
    taps.capture(layer, ws.x.data(), M, n_embd);
    norm_rows(ws.x.data(), l.attn_norm.data(), ws.xn.data(), M, n_embd, hp_.rms_eps, pool);
    if (hp_.is_recurrent(layer)) {
      gated_deltanet(l.deltanet, options_.deltanet, layer, ws.xn.data(), M, segments, n_past,
                     ws.deltanet, ws.xn.data(), pool);
    } else {
      attention_mixer(layer, segments, n_past, ws, pool);
    }
    add_block_output(l.post_attn_norm, ws.xn.data(), ws.x.data(), M);

    norm_rows(ws.x.data(), l.ffn_norm.data(), ws.xn.data(), M, n_embd, hp_.rms_eps, pool);
    if (l.moe) {
      moe_ffn(*l.moe, ws.xn.data(), M, ws.xn.data(), *ws.moe, pool);
    } else {
      kernels::matmul(l.w_gate, ws.xn.data(), M, ws.gate.data(), pool);
      kernels::matmul(l.w_up, ws.xn.data(), M, ws.up.data(), pool);
      ffn_activation(options_.ffn_activation, ws.gate.data(), ws.up.data(), M, hp_.n_ff, pool);
      kernels::matmul(l.w_down, ws.gate.data(), M, ws.xn.data(), pool);
    }
    add_block_output(l.post_ffn_norm, ws.xn.data(), ws.x.data(), M);
  }
  // Layers past n_layers wrote no rows; a layer-skip memory only holds the layers it ran.
  for (const MemorySegment& seg : segments) seg.memory->advance(seg.n_rows);
  if (taps.wants(static_cast<int>(hp_.n_layer))) {
    for (int64_t row = 0; row < M; ++row) {
      rms_norm(&ws.x[row * n_embd], output_norm_.data(), &ws.out_hidden[row * n_embd], n_embd,
               hp_.rms_eps);
    }
    taps.capture(static_cast<int>(hp_.n_layer), ws.out_hidden.data(), M, n_embd);
  }

  if (req.out_rows.empty()) return;
  const int64_t n_out = static_cast<int64_t>(req.out_rows.size());
  for (int64_t i = 0; i < n_out; ++i) {
    const int32_t row = req.out_rows[static_cast<size_t>(i)];
    AUGUR_CHECK(row >= 0 && row < M, "out_rows index within the ubatch");
    rms_norm(&ws.x[row * n_embd], output_norm_.data(), &ws.out_hidden[i * n_embd], n_embd,
             hp_.rms_eps);
  }
  kernels::matmul(output_, ws.out_hidden.data(), n_out, req.logits, pool);
  if (hp_.logit_softcap > 0) softcap(req.logits, n_out * hp_.n_vocab, hp_.logit_softcap);
}

void Decoder::attention_mixer(int layer, std::span<const MemorySegment> segments,
                              std::span<const int64_t> n_past, DecoderWorkspace& ws,
                              kernels::ThreadPool& pool) const {
  const DecoderLayer& l = layers_[static_cast<size_t>(layer)];
  const int64_t M = segments.back().first_row + segments.back().n_rows;
  const int64_t q_dim = hp_.q_dim(), kv_dim = hp_.kv_dim(), head_dim = hp_.head_dim;
  const std::vector<float>& rope_table =
      hp_.is_swa(layer) && !ws.rope_swa.empty() ? ws.rope_swa : ws.rope;
  if (options_.attn_output_gate) {
    kernels::matmul(l.wq, ws.xn.data(), M, ws.q_and_gate.data(), pool);
    split_query_and_gate(ws.q_and_gate.data(), M * hp_.n_head, head_dim, ws.q.data(),
                         ws.attn_gate.data());
  } else {
    kernels::matmul(l.wq, ws.xn.data(), M, ws.q.data(), pool);
  }
  kernels::matmul(l.wk, ws.xn.data(), M, ws.k.data(), pool);
  kernels::matmul(l.wv, ws.xn.data(), M, ws.v.data(), pool);
  for (size_t s = 0; s < segments.size(); ++s) {
    const KvRows kv = segments[s].memory->kv(layer);
    for (int64_t row = segments[s].first_row; row < segments[s].first_row + segments[s].n_rows;
         ++row) {
      const int64_t slot = n_past[s] + row - segments[s].first_row;  // the row's memory row
      float* q = &ws.q[row * q_dim];
      float* k = &ws.k[row * kv_dim];
      float* v = &ws.v[row * kv_dim];
      if (options_.qkv_bias) {
        for (int64_t i = 0; i < q_dim; ++i) q[i] += l.bq[i];
        for (int64_t i = 0; i < kv_dim; ++i) k[i] += l.bk[i];
        for (int64_t i = 0; i < kv_dim; ++i) v[i] += l.bv[i];
      }
      if (options_.qk_norm) {
        for (int64_t head = 0; head < hp_.n_head; ++head) {
          rms_norm(q + head * head_dim, l.q_norm.data(), q + head * head_dim, head_dim,
                   hp_.rms_eps);
        }
        for (int64_t head = 0; head < hp_.n_head_kv; ++head) {
          rms_norm(k + head * head_dim, l.k_norm.data(), k + head * head_dim, head_dim,
                   hp_.rms_eps);
        }
      }
      const float* rope = &rope_table[row * hp_.n_rot];
      apply_rope(q, hp_.n_head, head_dim, hp_.n_rot, hp_.rope_type, rope);
      apply_rope(k, hp_.n_head_kv, head_dim, hp_.n_rot, hp_.rope_type, rope);
      for (int64_t head = 0; head < hp_.n_head_kv; ++head) {
        write_kv(kv, head, slot, k + head * head_dim, v + head * head_dim, head_dim);
      }
    }
  }
  for (size_t s = 0; s < segments.size(); ++s) {
    const int64_t first = segments[s].first_row;
    attention(ws.q.data() + first * q_dim, *segments[s].memory, layer, n_past[s],
              segments[s].n_rows, hp_, ws.attn.data() + first * q_dim, pool);
  }
  if (options_.attn_output_gate) {
    for (int64_t i = 0; i < M * q_dim; ++i) ws.attn[i] *= sigmoid(ws.attn_gate[i]);
  }
  kernels::matmul(l.wo, ws.attn.data(), M, ws.xn.data(), pool);
}

void Decoder::add_block_output(const std::vector<float>& post_norm, float* out, float* x,
                               int64_t M) const {
  const int64_t n_embd = hp_.n_embd;
  if (!post_norm.empty()) {
    for (int64_t row = 0; row < M; ++row) {
      rms_norm(out + row * n_embd, post_norm.data(), out + row * n_embd, n_embd, hp_.rms_eps);
    }
  }
  for (int64_t i = 0; i < M * n_embd; ++i) x[i] += out[i];
}

}  // namespace augur::model::blocks
