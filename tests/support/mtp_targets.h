// Targets with an MTP / NextN layer for tests, made without training: a copy of a real llama or
// qwen3 GGUF with one more block (blk.L, `nextn_predict_layers` = 1) whose eh_proj passes the
// target's final hidden state h_{p-1} straight through and whose block adds a small random drift.
// Its logits are then about the target's own from h_{p-1}, i.e. a prediction of t_p, the token it
// is fed: its first draft tends to repeat the carry ("echo"), right where the text repeats a
// token, and its attention reads every cache row.
#pragma once

#include <filesystem>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "gguf/file.h"
#include "gguf/writer.h"

namespace augur::testing {

inline void write_target_with_echo_mtp(const std::filesystem::path& src,
                                       const std::filesystem::path& dst, float mix = 0.05f,
                                       uint32_t seed = 17) {
  const auto in = gguf::File::open(src);
  const std::string arch(in->get_string("general.architecture"));
  const auto L = in->get_int(arch + ".block_count");
  const auto D = in->get_int(arch + ".embedding_length");
  const std::string blk0 = "blk.0.", blk = "blk." + std::to_string(L) + ".";
  gguf::Writer out(dst);
  for (const auto& [key, value] : in->metadata()) {
    if (key == "general.alignment") continue;
    if (key == arch + ".block_count") {
      out.set_u32(key, static_cast<uint32_t>(L + 1));
    } else {
      out.set(key, value);
    }
  }
  out.set_u32(arch + ".nextn_predict_layers", 1);

  struct Extra {
    std::string name;
    std::vector<int64_t> ne;
    std::vector<float> data;
  };
  std::vector<Extra> extra;
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  // Layer tensors shaped like blk.0's (F32), random at `scale` / sqrt(fan-in), norms at one.
  for (const auto& t : in->tensors()) {
    if (!t.name.starts_with(blk0)) continue;
    Extra e{blk + t.name.substr(blk0.size()), t.ne, {}};
    int64_t n = 1;
    for (const int64_t d : t.ne) n *= d;
    e.data.resize(static_cast<size_t>(n));
    const bool norm = t.ne.size() == 1;
    const float scale = mix / std::sqrt(static_cast<float>(t.ne[0]));
    for (float& x : e.data) x = norm ? 1.0f : normal(rng) * scale;
    extra.push_back(std::move(e));
  }
  // eh_proj [D, 2D]: x = h (the second half of [e ; h]) plus a little of e.
  Extra eh{
      blk + "nextn.eh_proj.weight", {2 * D, D}, std::vector<float>(static_cast<size_t>(2 * D * D))};
  for (int64_t r = 0; r < D; ++r) {
    for (int64_t c = 0; c < 2 * D; ++c) {
      eh.data[static_cast<size_t>(r * 2 * D + c)] =
          c == D + r ? 1.0f
          : c < D    ? normal(rng) * mix / std::sqrt(static_cast<float>(D))
                     : 0.0f;
    }
  }
  extra.push_back(std::move(eh));
  extra.push_back({blk + "nextn.enorm.weight", {D}, std::vector<float>(static_cast<size_t>(D), 1)});
  extra.push_back({blk + "nextn.hnorm.weight", {D}, std::vector<float>(static_cast<size_t>(D), 1)});

  for (const auto& t : in->tensors()) out.add_tensor(t.name, t.type, t.ne);
  for (const auto& e : extra) out.add_tensor(e.name, gguf::TensorType::F32, e.ne);
  out.write_header();
  for (const auto& t : in->tensors()) {
    out.write_tensor_data(t.name, std::span<const uint8_t>(t.data, t.n_bytes));
  }
  for (const auto& e : extra) {
    out.write_tensor_data(e.name,
                          std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(e.data.data()),
                                                   e.data.size() * sizeof(float)));
  }
  out.finish();
}

}  // namespace augur::testing
