// The pre-norm decoder-only transformer shared by llama, qwen2, qwen3 and gemma3:
//   h = x + Wo·Attn(RoPE(Wq·n(x) + bq), RoPE(Wk·n(x) + bk), Wv·n(x) + bv)
//   x' = h + Wdown(silu(Wgate·n(h)) * Wup·n(h));  logits = Wout·n(x_L)
// with options for what gemma3 adds: scaled embeddings, post-norms of each block's output
// (h = x + n(Attn(..))), a GELU FFN, and sliding-window layers (HParams::swa_layers) whose
// attention sees only the last `sliding_window` rows and uses their own RoPE base; for
// qwen35, Gated DeltaNet layers (HParams::recurrent_layers) in place of attention and a
// sigmoid gate on the attention output; for qwen3moe, x' = h + MoE(n(h)) (moe.h).
// Architecture files read their metadata into HParams + DecoderOptions and hand over here;
// the weights are typed views into the GGUF mapping the model owns.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "model/blocks/gated_deltanet.h"
#include "model/blocks/moe.h"
#include "model/model.h"
#include "tensor/matrix.h"

namespace augur::model::blocks {

enum class FfnActivation {
  kSilu,      // silu(gate) * up
  kGeluTanh,  // gelu_tanh(gate) * up, through llama.cpp's FP16 table (gemma3)
};

struct DecoderOptions {
  bool qkv_bias = false;     // attn_{q,k,v}.bias (qwen2)
  bool qk_norm = false;      // per-head RMSNorm of q and k before RoPE (qwen3)
  bool tied_output = false;  // allow a missing output.weight: use token_embd (qwen2)
  bool post_norms = false;   // RMSNorm of the attention and FFN outputs before the residual add
  bool scale_embeddings = false;  // token embeddings times sqrt(n_embd) (gemma)
  FfnActivation ffn_activation = FfnActivation::kSilu;
  bool moe = false;  // the FFN is a mixture of experts (blocks/moe.h; qwen3moe)
  // W_q gives per head [q | gate]; the attention output is multiplied by sigmoid(gate) (qwen35).
  bool attn_output_gate = false;
  std::string ffn_norm = "ffn_norm";  // the pre-FFN norm's tensor (qwen35: post_attention_norm)
  GatedDeltaNetShape deltanet;        // the recurrent layers' shape, if any
};

struct DecoderLayer {
  std::vector<float> attn_norm;         // [n_embd]
  tensor::Matrix wq, wk, wv, wo;        // [q_dim, n_embd], [kv_dim, n_embd] x2, [n_embd, q_dim]
  std::vector<float> bq, bk, bv;        // empty unless qkv_bias
  std::vector<float> q_norm, k_norm;    // [head_dim], empty unless qk_norm
  std::vector<float> post_attn_norm;    // [n_embd], empty unless post_norms
  std::vector<float> ffn_norm;          // [n_embd]
  std::vector<float> post_ffn_norm;     // [n_embd], empty unless post_norms
  tensor::Matrix w_gate, w_up, w_down;  // [n_ff, n_embd] x2, [n_embd, n_ff]; unset with moe
  std::optional<MoeWeights> moe;        // replaces the dense FFN when options.moe
  GatedDeltaNetWeights deltanet;        // a recurrent layer's mixer (no attention weights)
};

struct DecoderWorkspace;

class Decoder final : public Model {
 public:
  Decoder(std::unique_ptr<gguf::File> file, HParams hparams, DecoderOptions options);

  const HParams& hparams() const override { return hp_; }
  const gguf::File& file() const override { return *file_; }
  std::unique_ptr<Workspace> make_workspace(int64_t max_rows, int64_t n_ctx) const override;
  std::vector<LayerCache> cache_layout() const override;
  void forward_ubatch(const UbatchRequest& request, Memory& memory, Workspace& workspace,
                      kernels::ThreadPool& pool) const override;
  void forward_segments(const UbatchRequest& request, std::span<const MemorySegment> segments,
                        Workspace& workspace, kernels::ThreadPool& pool) const override;

 private:
  // Attention of one layer over ws.xn: its output projection into ws.xn, its K/V into memory.
  void attention_mixer(int layer, std::span<const MemorySegment> segments,
                       std::span<const int64_t> n_past, DecoderWorkspace& ws,
                       kernels::ThreadPool& pool) const;
  // x += post_norm(out) (or out when there is no post-norm), for M rows; out is overwritten.
  void add_block_output(const std::vector<float>& post_norm, float* out, float* x, int64_t M) const;

  std::unique_ptr<gguf::File> file_;
  HParams hp_;
  DecoderOptions options_;
  tensor::Matrix token_embd_;
  tensor::Matrix output_;
  std::vector<float> output_norm_;
  std::vector<DecoderLayer> layers_;
};

// Reads the hyper-parameters every decoder shares from `<arch>.*` keys (decoder_hparams.cpp).
// Every count is checked against sane limits and against the tensors the file holds, before
// anything is sized by it: FormatError names the file, the key and what was expected;
// Unsupported names what this build cannot run (rope scaling; experts in a dense architecture).
// What an architecture tells the reader about its layers: which have no attention (qwen35:
// heads are checked against the first layer that has), whether W_q holds a gate per query, and
// whether the FFN is a mixture of experts (qwen3moe: expert_count (1..512), expert_used_count
// (1..expert_count) and expert_feed_forward_length are then required and checked against
// blk.0.ffn_up_exps; otherwise expert counts must be absent or 0).
struct LayerHints {
  std::function<std::vector<bool>(int64_t n_layer)> recurrent_layers;
  bool gated_query = false;
  bool moe = false;
};
[[nodiscard]] HParams read_decoder_hparams(const gguf::File& file, const std::string& arch,
                                           const LayerHints& hints = {});

}  // namespace augur::model::blocks
