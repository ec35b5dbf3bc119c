// EAGLE-3 heads made for a target in tests, without training: the "echo" head passes the
// target's final hidden state (tap n_layer) straight through fc, so with the target's output head
// its first draft repeats the token the target just chose (g_P is what t_{P+1} was predicted
// from), up to the small random attention and FFN it adds; later drafts echo the last one with
// that drift. It is right where the text repeats a token and its attention reads every cache
// row, so a wrong row in its cache changes its drafts.
#pragma once

#include <filesystem>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "gguf/writer.h"
#include "model/model.h"

namespace augur::testing {

struct EchoHeadOptions {
  float mix = 0.05f;  // std of the random attention and FFN weights (0: a pure echo)
  int n_head = 4, n_head_kv = 2;
  int n_ff = 64;
  uint32_t seed = 11;
};

inline void write_echo_eagle3(const model::Model& target, const std::filesystem::path& path,
                              const EchoHeadOptions& o = {}) {
  const auto& thp = target.hparams();
  const int64_t D = thp.n_embd, F3 = 3 * D, hd = D / o.n_head;
  gguf::Writer w(path);
  w.set_string("general.architecture", "eagle3");
  w.set_u32("eagle3.block_count", 1);
  w.set_u32("eagle3.embedding_length", static_cast<uint32_t>(D));
  w.set_u32("eagle3.feed_forward_length", static_cast<uint32_t>(o.n_ff));
  w.set_u32("eagle3.attention.head_count", static_cast<uint32_t>(o.n_head));
  w.set_u32("eagle3.attention.head_count_kv", static_cast<uint32_t>(o.n_head_kv));
  w.set_f32("eagle3.attention.layer_norm_rms_epsilon", 1e-5f);
  w.set_f32("eagle3.rope.freq_base", 10000.0f);
  w.set_u32("eagle3.rope.dimension_count", static_cast<uint32_t>(hd));
  const std::vector<int32_t> taps = {0, static_cast<int32_t>(thp.n_layer / 2),
                                     static_cast<int32_t>(thp.n_layer)};
  w.set_array("eagle3.target_layers", std::span<const int32_t>(taps));
  w.set_u32("eagle3.target_hidden_size", static_cast<uint32_t>(D));
  std::mt19937 rng(o.seed);
  std::normal_distribution<float> normal(0.0f, o.mix);
  struct T {
    std::string name;
    std::vector<int64_t> ne;
    std::vector<float> data;
  };
  std::vector<T> tensors;
  const auto add = [&](std::string name, std::vector<int64_t> ne, auto fill) {
    std::vector<float> d(static_cast<size_t>(ne[0] * (ne.size() > 1 ? ne[1] : 1)));
    for (size_t i = 0; i < d.size(); ++i) d[i] = fill(i);
    tensors.push_back({std::move(name), std::move(ne), std::move(d)});
  };
  const auto ones = [](size_t) { return 1.0f; };
  const auto noise = [&](size_t) { return normal(rng); };
  // fc row i reads the third tap's element i: g = the target's final normed hidden state.
  add("fc.weight", {F3, D}, [&](size_t i) {
    return static_cast<int64_t>(i % F3) == 2 * D + static_cast<int64_t>(i / F3) ? 1.0f : 0.0f;
  });
  add("blk.0.attn_norm.weight", {D}, ones);
  add("blk.0.attn_norm_2.weight", {D}, ones);
  add("blk.0.attn_q.weight", {2 * D, o.n_head * hd}, [&](size_t) { return normal(rng) * 20; });
  add("blk.0.attn_k.weight", {2 * D, o.n_head_kv * hd}, [&](size_t) { return normal(rng) * 20; });
  add("blk.0.attn_v.weight", {2 * D, o.n_head_kv * hd}, noise);
  // Outputs scaled down so the drift stays well below the hidden state it is added to.
  const auto small = [&](size_t) { return normal(rng) * 0.1f; };
  add("blk.0.attn_output.weight", {o.n_head * hd, D}, small);
  add("blk.0.ffn_norm.weight", {D}, ones);
  add("blk.0.ffn_gate.weight", {D, o.n_ff}, noise);
  add("blk.0.ffn_up.weight", {D, o.n_ff}, noise);
  add("blk.0.ffn_down.weight", {o.n_ff, D}, small);
  add("output_norm.weight", {D}, ones);
  for (const auto& t : tensors) w.add_tensor(t.name, gguf::TensorType::F32, t.ne);
  w.write_header();
  for (const auto& t : tensors) {
    w.write_tensor_data(t.name,
                        std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(t.data.data()),
                                                 t.data.size() * sizeof(float)));
  }
  w.finish();
}

}  // namespace augur::testing
