// Building blocks for speculative-decoding tests: a target model with its pool, a drafter made
// from a short description ("model:PATH", "ngram", "layerskip:L", "auto" = the draft policy over
// n-gram and layer-skip, "auto+model:PATH" = the same plus a draft model, "eagle3:PATH" an EAGLE-3
// head, "eagle3:echo" the echo head of eagle3_heads.h made for the target, "dflash:PATH" a DFlash
// drafter, "dflash:random" the random one of dflash_heads.h, "auto+eagle3:..." / "auto+dflash:..."
// the policy with one), prompts from the shared files.
#pragma once

#include <unistd.h>

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "engine/generator.h"
#include "kernels/thread_pool.h"
#include "model/heads/load_head.h"
#include "model/model.h"
#include "sampling/sampler.h"
#include "spec/auto_sources.h"
#include "spec/dflash_drafter.h"
#include "spec/pair_head_drafter.h"
#include "spec/head_drafters.h"
#include "spec/model_drafter.h"
#include "spec/ngram_drafter.h"
#include "support/dflash_heads.h"
#include "support/eagle3_heads.h"
#include "support/reference.h"
#include "test_paths.h"
#include "tokenizer/tokenizer.h"

namespace augur::testing {

struct DrafterHolder {
  std::unique_ptr<model::Model> draft_model;  // for "model:PATH"
  std::unique_ptr<spec::DraftSource> drafter;
  std::unique_ptr<model::Model> head;                 // for "eagle3:..." and "dflash:..."
  const spec::ModelDrafter* model_drafter = nullptr;  // when the drafter has a cache
  const spec::PairHeadDrafter* pair_drafter = nullptr;
  const spec::DFlashDrafter* dflash_drafter = nullptr;
  int n_layers = -1;  // layer-skip depth
};

inline DrafterHolder make_test_drafter(const std::string& kind, const model::Model& target,
                                       kernels::ThreadPool& pool, int64_t n_ctx, int64_t ubatch,
                                       cache::CacheTypes types = {}) {
  DrafterHolder h;
  // "eagle3:echo", "dflash:random" or "KIND:PATH" -> the loaded head.
  const auto load_head = [&](const std::string& head_kind, const std::string& what) {
    if (what != "echo" && what != "random") return model::heads::load_head(what, target);
    const auto path =
        std::filesystem::temp_directory_path() /
        ("augur-" + what + "-" + head_kind + "-" + std::to_string(::getpid()) + ".gguf");
    if (head_kind == "eagle3") {
      write_echo_eagle3(target, path);
    } else {
      write_random_dflash(target, path);
    }
    auto head = model::heads::load_head(path, target);
    std::filesystem::remove(path);  // the mapping stays valid
    return head;
  };
  for (const std::string head_kind : {"eagle3", "dflash"}) {
    if (kind.rfind(head_kind + ":", 0) == 0) {
      h.head = load_head(head_kind, kind.substr(head_kind.size() + 1));
      h.drafter = spec::make_head_drafter(*h.head, pool, n_ctx, ubatch, types);
      h.pair_drafter = dynamic_cast<const spec::PairHeadDrafter*>(h.drafter.get());
      h.dflash_drafter = dynamic_cast<const spec::DFlashDrafter*>(h.drafter.get());
      return h;
    }
    if (kind.rfind("auto+" + head_kind + ":", 0) == 0) {
      h.head = load_head(head_kind, kind.substr(head_kind.size() + 6));
      h.drafter =
          spec::make_auto_drafter(spec::all_auto_sources(false, head_kind), target, nullptr, pool,
                                  n_ctx, ubatch, engine::kMaxDraft, types, h.head.get());
      return h;
    }
  }
  if (kind == "ngram") {
    h.drafter = std::make_unique<spec::NgramDrafter>(1, 4);
  } else if (kind.rfind("layerskip:", 0) == 0) {
    h.n_layers = std::stoi(kind.substr(10));
    auto d = std::make_unique<spec::ModelDrafter>(target, pool, n_ctx, ubatch, h.n_layers, types);
    h.model_drafter = d.get();
    h.drafter = std::move(d);
  } else if (kind == "auto" || kind.rfind("auto+model:", 0) == 0) {
    if (kind != "auto") h.draft_model = model::load_model(kind.substr(11));
    h.drafter =
        spec::make_auto_drafter(spec::all_auto_sources(h.draft_model != nullptr), target,
                                h.draft_model.get(), pool, n_ctx, ubatch, engine::kMaxDraft, types);
  } else if (kind.rfind("model:", 0) == 0) {
    h.draft_model = model::load_model(kind.substr(6));
    auto d = std::make_unique<spec::ModelDrafter>(*h.draft_model, pool, n_ctx, ubatch, -1, types);
    h.model_drafter = d.get();
    h.drafter = std::move(d);
  } else {
    throw std::invalid_argument("unknown test drafter " + kind);
  }
  return h;
}

inline sampling::Sampler make_sampler(const model::Model& m, float temperature,
                                      float repeat_penalty = 1.0f, uint64_t seed = 7) {
  sampling::SamplerConfig c;
  c.temperature = temperature;
  c.repeat_penalty = repeat_penalty;
  c.seed = seed;
  return sampling::Sampler(c, static_cast<int>(m.hparams().n_vocab));
}

// The first n prompts of prompts-code.jsonl, each encoded with the model's tokenizer (BOS added).
inline std::vector<std::vector<int32_t>> zoo_prompts(const model::Model& m, size_t n) {
  const auto tok = tokenizer::Tokenizer::from_gguf(m.file());
  std::vector<std::vector<int32_t>> out;
  for (const auto& line : read_jsonl(models_dir() / "prompts-code.jsonl")) {
    if (out.size() == n) break;
    out.push_back(tok->encode(line["prompt"].get<std::string>(), true, false));
  }
  return out;
}

inline const engine::EogPredicate kNeverEog = [](int32_t) { return false; };

}  // namespace augur::testing
