// The MTP / NextN layer stored in a target GGUF after its trunk (`<arch>.nextn_predict_layers`,
// blocks blk.L.. with `nextn.*` tensors; design/drafter-formats.md §4), run as a drafter head for
// `--draft mtp`. Its input at position p is (t_p, h_{p-1}), h the target's final hidden state after
// output_norm (tap n_layer):
//   x = eh_proj·[n(Emb(t); enorm) ; n(h; hnorm)]        (embedding first)
//   out = the target architecture's decoder block over x, causal over its own KV cache
//   h' = n(out; shared_head_norm, else output_norm)      -> hidden_out (fed back as h when
//   drafting) logits = (shared_head_head, else output)·h'
// Weights are views into the target's mapping: the target must outlive the head. One NextN layer
// (llama.cpp asserts the same for its dense archs); llama and qwen3 trunks.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "model/heads/pair_head.h"
#include "tensor/matrix.h"

namespace augur::model::heads {

class NextN final : public PairHead {
 public:
  // Unsupported names what is missing: no NextN layer in the target, more than one, or an
  // architecture whose MTP block this build does not run.
  static std::unique_ptr<NextN> load(const Model& target);

  const HParams& hparams() const override { return hp_; }
  const gguf::File& file() const override { return target_.file(); }
  std::unique_ptr<Workspace> make_workspace(int64_t max_rows, int64_t n_ctx) const override;
  int64_t hidden_in_width() const override { return hp_.n_embd; }
  // request.hidden_in is h per row (required); request.hidden_out gets h' per row if set.
  void forward_ubatch(const UbatchRequest& request, Memory& memory, Workspace& workspace,
                      kernels::ThreadPool& pool) const override;

  std::string_view kind() const override { return "mtp"; }
  std::span<const int32_t> target_layers() const override { return taps_; }
  int64_t target_hidden() const override { return hp_.n_embd; }
  void fuse(const float* features, int64_t rows, float* hidden,
            kernels::ThreadPool& pool) const override;
  int32_t position_offset() const override { return 1; }
  // The layer's own tensors in the target's file (the rest is the target's).
  int64_t weight_bytes() const override { return own_bytes_; }

 private:
  explicit NextN(const Model& target);

  const Model& target_;
  HParams hp_;
  std::vector<int32_t> taps_;  // {n_layer}: the final hidden state
  int64_t own_bytes_ = 0;
  tensor::Matrix token_embd_, eh_proj_, output_;
  std::vector<float> enorm_, hnorm_, head_norm_;
  std::vector<float> attn_norm_, q_norm_, k_norm_, ffn_norm_;  // q/k norms empty unless present
  tensor::Matrix wq_, wk_, wv_, wo_, w_gate_, w_up_, w_down_;
};

}  // namespace augur::model::heads
