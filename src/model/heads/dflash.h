// DFlash block drafter in llama.cpp's GGUF layout (general.architecture = "dflash";
// design/drafter-formats.md §2). Its cache holds no tokens of its own: every committed row P is
// injected from the target's features f_P (the taps of dflash.target_layers, concatenated):
//   g = n((fc·f) * fc.scale; enc.output_norm);  per layer l: K_l = RoPE(n_head(Wk_l·g)), V_l =
//   Wv_l·g
// (forward_ubatch, hidden_in = f). A draft is one forward over the block [id_last, MASK × n] at
// positions n_past.., a Qwen3-style decoder (per-head q/k norms, NeoX RoPE) whose attention is
// NON-causal: every block row sees every injected row and every block row (block()). The block's
// K/V never stay in the cache. Row j of the block predicts the token at n_past + j.
// DFlash2 (conv tensors, selector), DSpark (markov head), causal blocks and sliding windows are
// refused by name.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <span>
#include <vector>

#include "model/model.h"
#include "tensor/matrix.h"

namespace augur::model::heads {

class DFlash final : public Model {
 public:
  // Loads a dflash GGUF for `target`; FormatError/Unsupported name the file and what is wrong.
  static std::unique_ptr<DFlash> load(const std::filesystem::path& path, const Model& target);
  static std::unique_ptr<DFlash> load(std::unique_ptr<gguf::File> file, const Model& target);

  const HParams& hparams() const override { return hp_; }
  const gguf::File& file() const override { return *file_; }
  std::unique_ptr<Workspace> make_workspace(int64_t max_rows, int64_t n_ctx) const override;
  // The raw features of a row: taps × target hidden.
  int64_t hidden_in_width() const override {
    return static_cast<int64_t>(target_layers_.size()) * hp_.n_embd;
  }
  // Injection: appends one K/V row per layer for each request row from request.hidden_in (the
  // row's features); tokens only count the rows; no logits.
  void forward_ubatch(const UbatchRequest& request, Memory& memory, Workspace& workspace,
                      kernels::ThreadPool& pool) const override;

  // The block forward over `tokens` at positions memory.n_rows().. (non-causal, see above):
  // logits [tokens.size() - first_out, n_vocab], one row per block position from first_out (a
  // drafter skips row 0, whose token it already has). `memory` keeps its rows; the
  // block's K/V are written past them and left there unheld. `workspace` is this head's, made for
  // at least tokens.size() rows.
  void block(std::span<const int32_t> tokens, Memory& memory, Workspace& workspace, float* logits,
             kernels::ThreadPool& pool, int64_t first_out = 0) const;

  std::span<const int32_t> target_layers() const { return target_layers_; }
  int64_t block_size() const { return block_size_; }
  int32_t mask_token() const { return mask_token_; }
  int64_t draft_vocab() const { return output_.rows; }

 private:
  DFlash(std::unique_ptr<gguf::File> file, const Model& target);

  struct Layer {
    std::vector<float> attn_norm, q_norm, k_norm, ffn_norm;
    tensor::Matrix wq, wk, wv, wo, w_gate, w_up, w_down;
  };

  // Per-head RMSNorm then RoPE of `rows` rows of q or k (n_heads heads each) at their positions.
  void norm_rope(float* x, int64_t rows, int64_t n_heads, const std::vector<float>& norm,
                 const float* rope) const;

  std::unique_ptr<gguf::File> file_;
  HParams hp_;
  std::vector<int32_t> target_layers_;
  int64_t block_size_ = 0;
  int32_t mask_token_ = 0;
  tensor::Matrix fc_;  // [n_embd, taps * n_embd]
  float fc_scale_ = 1.0f;
  std::vector<float> enc_norm_, output_norm_;
  std::vector<Layer> layers_;
  tensor::Matrix token_embd_;  // [n_vocab, n_embd]
  tensor::Matrix output_;      // [draft_vocab, n_embd]
  std::vector<int32_t> d2t_;   // [draft_vocab] target ids, empty = identity
};

}  // namespace augur::model::heads
