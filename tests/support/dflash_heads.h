// DFlash drafters made for a target in tests, without training: random weights of a size that
// makes every injected row matter (its attention reads them all), the target's embeddings and
// output head, taps {1, n_layer / 2, n_layer}. Its drafts are poor; tests use it for exactness
// and cache state, where any drafts will do.
#pragma once

#include <filesystem>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "gguf/writer.h"
#include "model/model.h"

namespace augur::testing {

struct RandomDFlashOptions {
  int n_layer = 2;
  int n_head = 4, n_head_kv = 2;
  int n_ff = 64;
  int block_size = 8;
  int mask_token = 0;
  uint32_t seed = 13;
};

inline void write_random_dflash(const model::Model& target, const std::filesystem::path& path,
                                const RandomDFlashOptions& o = {}) {
  const auto& thp = target.hparams();
  const int64_t D = thp.n_embd, hd = D / o.n_head;
  const std::vector<int32_t> taps = {1, static_cast<int32_t>(thp.n_layer / 2),
                                     static_cast<int32_t>(thp.n_layer)};
  const auto F = static_cast<int64_t>(taps.size()) * D;
  gguf::Writer w(path);
  w.set_string("general.architecture", "dflash");
  w.set_u32("dflash.block_count", static_cast<uint32_t>(o.n_layer));
  w.set_u32("dflash.embedding_length", static_cast<uint32_t>(D));
  w.set_u32("dflash.feed_forward_length", static_cast<uint32_t>(o.n_ff));
  w.set_u32("dflash.attention.head_count", static_cast<uint32_t>(o.n_head));
  w.set_u32("dflash.attention.head_count_kv", static_cast<uint32_t>(o.n_head_kv));
  w.set_u32("dflash.attention.key_length", static_cast<uint32_t>(hd));
  w.set_u32("dflash.attention.value_length", static_cast<uint32_t>(hd));
  w.set_f32("dflash.attention.layer_norm_rms_epsilon", 1e-5f);
  w.set_f32("dflash.rope.freq_base", 10000.0f);
  w.set_u32("dflash.block_size", static_cast<uint32_t>(o.block_size));
  w.set_array("dflash.target_layers", std::span<const int32_t>(taps));
  w.set_u32("tokenizer.ggml.mask_token_id", static_cast<uint32_t>(o.mask_token));
  std::mt19937 rng(o.seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  struct T {
    std::string name;
    std::vector<int64_t> ne;
    std::vector<float> data;
  };
  std::vector<T> tensors;
  const auto add = [&](std::string name, std::vector<int64_t> ne, float scale) {
    std::vector<float> d(static_cast<size_t>(ne[0] * (ne.size() > 1 ? ne[1] : 1)));
    for (float& x : d) x = scale == 0 ? 1.0f : normal(rng) * scale;
    tensors.push_back({std::move(name), std::move(ne), std::move(d)});
  };
  const auto inv_sqrt = [](int64_t n) { return 1.0f / std::sqrt(static_cast<float>(n)); };
  add("fc.weight", {F, D}, inv_sqrt(F));
  add("enc.output_norm.weight", {D}, 0);
  for (int l = 0; l < o.n_layer; ++l) {
    const auto name = [l](const char* what) { return "blk." + std::to_string(l) + "." + what; };
    add(name("attn_norm.weight"), {D}, 0);
    add(name("attn_q.weight"), {D, o.n_head * hd}, 3 * inv_sqrt(D));
    add(name("attn_k.weight"), {D, o.n_head_kv * hd}, 3 * inv_sqrt(D));
    add(name("attn_v.weight"), {D, o.n_head_kv * hd}, inv_sqrt(D));
    add(name("attn_output.weight"), {o.n_head * hd, D}, inv_sqrt(o.n_head * hd));
    add(name("attn_q_norm.weight"), {hd}, 0);
    add(name("attn_k_norm.weight"), {hd}, 0);
    add(name("ffn_norm.weight"), {D}, 0);
    add(name("ffn_gate.weight"), {D, o.n_ff}, inv_sqrt(D));
    add(name("ffn_up.weight"), {D, o.n_ff}, inv_sqrt(D));
    add(name("ffn_down.weight"), {o.n_ff, D}, inv_sqrt(o.n_ff));
  }
  add("output_norm.weight", {D}, 0);
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
