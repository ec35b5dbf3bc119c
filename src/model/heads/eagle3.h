// EAGLE-3 drafter head in llama.cpp's GGUF layout (general.architecture = "eagle3";
// design/drafter-formats.md §1). It reads three of the target's hidden states per token, fused
// by fc into g (fuse()), and runs one decoder layer over pairs (token t_{P+1}, g_P) at RoPE
// position P, with its own KV cache:
//   e = n(Emb(t); attn_norm), gn = n(g; attn_norm_2), x = [e ; gn]         (2D wide)
//   r = Wo·Attn(RoPE(Wq·x), RoPE(Wk·x), Wv·x) + (norm_before_residual ? gn : g)
//   y = r + Wdown(silu(Wgate·n(r)) * Wup·n(r))      -> hidden_out (fed back as g when drafting)
//   logits = Wout·n(y; output_norm), scattered through d2t into the target vocabulary (-inf
//   elsewhere) when the head has a reduced vocabulary.
// The token embeddings and the output head are the file's own when it has them, else the
// target's (views into the target's mapping: the target must outlive the head).
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <span>
#include <vector>

#include "model/heads/pair_head.h"
#include "tensor/matrix.h"

namespace augur::model::heads {

class Eagle3 final : public PairHead {
 public:
  // Loads an eagle3 GGUF for `target`; FormatError/Unsupported name the file and what is wrong
  // (a tap outside the target, a hidden size that does not match, a malformed d2t).
  static std::unique_ptr<Eagle3> load(const std::filesystem::path& path, const Model& target);
  static std::unique_ptr<Eagle3> load(std::unique_ptr<gguf::File> file, const Model& target);

  const HParams& hparams() const override { return hp_; }
  const gguf::File& file() const override { return *file_; }
  std::unique_ptr<Workspace> make_workspace(int64_t max_rows, int64_t n_ctx) const override;
  int64_t hidden_in_width() const override { return hp_.n_embd; }
  // request.hidden_in is g per row (required); request.hidden_out gets y per row if set.
  void forward_ubatch(const UbatchRequest& request, Memory& memory, Workspace& workspace,
                      kernels::ThreadPool& pool) const override;

  std::string_view kind() const override { return "eagle3"; }
  // The target layers it reads (eagle3.target_layers), in concatenation order.
  std::span<const int32_t> target_layers() const override { return target_layers_; }
  // g = fc·[f_low ; f_mid ; f_high] (after the optional norm_before_fc RMSNorm) for `rows` rows
  // of features [rows, 3, target_hidden] → g [rows, n_embd].
  void fuse(const float* features, int64_t rows, float* g,
            kernels::ThreadPool& pool) const override;
  int64_t target_hidden() const override { return target_hidden_; }
  int32_t position_offset() const override { return 0; }
  // Rows of its own output head: the draft vocabulary (d2t's length), or the target's.
  int64_t draft_vocab() const { return output_.rows; }

 private:
  Eagle3(std::unique_ptr<gguf::File> file, const Model& target);

  std::unique_ptr<gguf::File> file_;
  HParams hp_;
  std::vector<int32_t> target_layers_;
  int64_t target_hidden_ = 0;
  bool norm_before_residual_ = false;
  std::vector<float> fc_norm_;  // [3 * target_hidden] when norm_before_fc, else empty
  tensor::Matrix fc_;           // [n_embd, 3 * target_hidden]
  tensor::Matrix token_embd_;   // [n_vocab, n_embd]
  std::vector<float> attn_norm_, attn_norm_2_, ffn_norm_, output_norm_;
  tensor::Matrix wq_, wk_, wv_, wo_, w_gate_, w_up_, w_down_;
  tensor::Matrix output_;     // [draft_vocab, n_embd]
  std::vector<int32_t> d2t_;  // [draft_vocab] target ids, empty = identity
};

}  // namespace augur::model::heads
