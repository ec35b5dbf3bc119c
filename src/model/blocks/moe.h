// The mixture-of-experts FFN of a decoder block, as llama.cpp's build_moe_ffn with SILU experts,
// softmax gating and renormalised top-k weights (qwen3moe):
//   p = softmax(W_router u);  S = the k experts of highest p, in that order;  w_e = p_e / sum_S p
//   out = w_S0 * E_S0(u) + w_S1 * E_S1(u) + ...,  E_e(u) = W_down,e(silu(W_gate,e u) * W_up,e u)
// Owns the expert weight views of one layer, the routing of rows and the scratch it needs; not
// the norm before the block or the residual add after it (the decoder's).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "gguf/file.h"
#include "kernels/thread_pool.h"
#include "model/hparams.h"
#include "tensor/matrix.h"

namespace augur::model::blocks {

// One layer's experts: views into the GGUF mapping (3-D tensors sliced per expert).
struct MoeWeights {
  tensor::Matrix router;                 // [n_expert, n_embd]
  std::vector<tensor::Matrix> gate, up;  // per expert [n_ff_exp, n_embd]
  std::vector<tensor::Matrix> down;      // per expert [n_embd, n_ff_exp]
};

// Views of blk.<layer>.ffn_gate_inp.weight (ne [n_embd, n_expert]), ffn_gate_exps.weight and
// ffn_up_exps.weight ([n_embd, n_ff_exp, n_expert]) and ffn_down_exps.weight ([n_ff_exp, n_embd,
// n_expert]). Each shape is checked before it is sliced: FormatError names the file, the tensor,
// its shape and the expected one.
[[nodiscard]] MoeWeights load_moe_weights(const gguf::File& file, int layer, const HParams& hp);

// Routes one row: turns its router logits [n_expert] into softmax probabilities in place, and
// writes the k = experts.size() chosen experts in selection order with their renormalised weights
// [k]. `order` [n_expert] is scratch.
// Selection is ggml's argsort (descending) cut to k: highest probability first, equal
// probabilities in ascending expert index. ggml-cpu sorts with std::sort, which for up to 16
// experts is libstdc++'s insertion sort and so settles ties exactly this way; for more it leaves
// them unspecified, and we keep the same rule so that a row's route is a function of its logits.
// A NaN probability ranks below every number.
void route_row(std::span<float> logits, std::span<int32_t> experts, std::span<float> weights,
               std::span<int32_t> order);

// Scratch of moe_ffn for up to max_rows rows, sized once per workspace.
struct MoeScratch {
  MoeScratch(const HParams& hp, int64_t max_rows);
  int64_t bytes() const;

  int64_t max_rows, k;           // rows, experts per row
  std::vector<float> probs;      // [max_rows, n_expert] router logits, then probabilities
  std::vector<int32_t> experts;  // [max_rows, k] chosen experts in selection order
  std::vector<float> weights;    // [max_rows, k] their renormalised weights
  std::vector<int32_t> order;    // [n_expert] route_row's sort scratch
  std::vector<int64_t> first;    // [n_expert + 1] each expert's range in `routed`
  std::vector<int32_t> routed;   // [max_rows * k] row * k + slot, grouped by expert
  std::vector<float> rows_in;    // [max_rows, n_embd] the rows routed to one expert
  std::vector<float> gate, up;   // [max_rows, n_ff_exp]
  std::vector<float> rows_out;   // [max_rows, n_embd] that expert's outputs
  std::vector<float> slot_out;   // [max_rows, k, n_embd] weighted outputs by row and slot
};

// out[row] = MoE(x[row]) for M <= scratch.max_rows rows; x and out [M, n_embd] may alias.
// Every expert runs once, over just the rows routed to it, so its weights stream once per call
// (a verify of k+1 rows costs about one decode per expert it touches). A row's result depends on
// that row alone, bitwise, whatever M and the other rows: each kernel is row-invariant and each
// row sums its experts in its own selection order (as ggml adds them).
void moe_ffn(const MoeWeights& w, const float* x, int64_t M, float* out, MoeScratch& scratch,
             kernels::ThreadPool& pool);

}  // namespace augur::model::blocks
