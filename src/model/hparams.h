// Hyper-parameters shared by the decoder-only architectures, read from GGUF metadata.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace augur::model {

enum class RopeType {
  Norm,  // rotate adjacent pairs (x[2i], x[2i+1]) — llama
  Neox,  // rotate (x[i], x[i + n_rot/2]) — qwen2, qwen3
};

struct HParams {
  std::string arch;
  int64_t n_vocab = 0;
  int64_t n_embd = 0;
  int64_t n_layer = 0;   // the trunk: blocks the forward runs
  int64_t n_nextn = 0;   // MTP / NextN blocks stored after the trunk (blk.n_layer..), drafters only
  int64_t n_head = 0;
  int64_t n_head_kv = 0;
  int64_t head_dim = 0;       // may differ from n_embd / n_head (qwen3)
  int64_t n_ff = 0;           // dense FFN length; 0 when the FFN is a mixture of experts
  int64_t n_expert = 0;       // experts per MoE FFN; 0 = dense FFN
  int64_t n_expert_used = 0;  // experts each token is routed to
  int64_t n_ff_exp = 0;       // FFN length of one expert
  int64_t n_ctx_train = 0;
  int64_t n_rot = 0;  // rotated dims per head
  float rms_eps = 1e-5f;
  float rope_base = 10000.0f;
  RopeType rope_type = RopeType::Norm;
  float attn_scale = 0;          // KQ scale; 0 = 1/sqrt(head_dim)
  float logit_softcap = 0;       // final logits c * tanh(l / c); 0 = none
  int64_t sliding_window = 0;    // a sliding-window layer's row sees itself and window - 1 before
  std::vector<bool> swa_layers;  // per layer: uses the sliding window (empty: none does)
  float rope_base_swa = 0;       // RoPE base of the sliding-window layers; 0 = rope_base
  std::vector<bool> recurrent_layers;  // per layer: a recurrent mixer, no attention (qwen35)

  bool is_swa(int64_t layer) const {
    return layer < static_cast<int64_t>(swa_layers.size()) && swa_layers[layer];
  }

  bool is_recurrent(int64_t layer) const {
    return layer < static_cast<int64_t>(recurrent_layers.size()) && recurrent_layers[layer];
  }

  int64_t q_dim() const { return n_head * head_dim; }
  int64_t kv_dim() const { return n_head_kv * head_dim; }
};

}  // namespace augur::model
