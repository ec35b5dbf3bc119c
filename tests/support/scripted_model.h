// A model::Model whose logits are a chosen function of the token history, for tests that drive
// the real Evaluator, ModelCache, Generator and drafters without weights. Each forward writes its
// tokens into the cache it is given (one layer, one KV head, head_dim 1: the key row of a token is
// the token id) and computes every wanted row from the history that cache holds for that row
// (committed rows, pending rows, then the batch up to the row). So whatever the generation loop
// commits, truncates or positions wrongly changes what the model sees, and the logits with it.
// It also checks that every batch sits at the positions its memory says (RoPE positions).
//
// The GGUF behind file() is a metadata-only file (general.architecture = "scripted"), written to
// the temp directory once per model and unlinked at once (the mapping stays valid).
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "gguf/file.h"
#include "gguf/writer.h"
#include "model/model.h"

namespace augur::testing {

// logits(history, out): history oldest first, never empty; out: [n_vocab].
using HistoryLogits = std::function<void(std::span<const int32_t>, std::span<float>)>;

class ScriptedModel : public model::Model {
 public:
  ScriptedModel(int n_vocab, HistoryLogits logits) : logits_(std::move(logits)) {
    hp_.arch = "scripted";
    hp_.n_vocab = n_vocab;
    hp_.n_embd = 1;
    hp_.n_layer = 1;
    hp_.n_head = 1;
    hp_.n_head_kv = 1;
    hp_.head_dim = 1;
    hp_.n_ff = 1;
    hp_.n_ctx_train = 1 << 20;
    hp_.n_rot = 1;
    static std::atomic<int> counter{0};
    const auto path =
        std::filesystem::temp_directory_path() / ("augur-scripted-" + std::to_string(::getpid()) +
                                                  "-" + std::to_string(counter++) + ".gguf");
    {
      gguf::Writer writer(path);
      writer.set_string("general.architecture", "scripted");
      writer.set_u32("scripted.vocab_size", static_cast<uint32_t>(n_vocab));
      writer.write_header();
      writer.finish();
    }
    file_ = gguf::File::open(path);
    std::filesystem::remove(path);
  }

  const model::HParams& hparams() const override { return hp_; }
  const gguf::File& file() const override { return *file_; }
  std::unique_ptr<model::Workspace> make_workspace(int64_t, int64_t) const override {
    return std::make_unique<model::Workspace>();
  }

  void forward_ubatch(const model::UbatchRequest& request, model::Memory& memory, model::Workspace&,
                      kernels::ThreadPool&) const override {
    const int64_t base = memory.n_rows();
    const auto rows = static_cast<int64_t>(request.tokens.size());
    EXPECT_LE(base + rows, memory.capacity()) << "a batch past the memory's capacity";
    // Layer 0's keys and values ([capacity, 1] floats) hold the token ids.
    const model::KvRows kv = memory.kv(0);
    const auto keys = [&](int64_t row) { return reinterpret_cast<float*>(kv.key(0, row)); };
    for (int64_t row = 0; row < rows; ++row) {
      EXPECT_EQ(request.positions[row], base + row) << "batch row " << row << " of " << rows;
      *keys(base + row) = static_cast<float>(request.tokens[row]);
      *reinterpret_cast<float*>(kv.value(0, base + row)) = static_cast<float>(request.tokens[row]);
    }
    history_.resize(static_cast<size_t>(base + rows));
    for (int64_t row = 0; row < base + rows; ++row) {
      history_[row] = static_cast<int32_t>(*keys(row));
    }
    const auto vocab = static_cast<size_t>(hp_.n_vocab);
    for (size_t out = 0; out < request.out_rows.size(); ++out) {
      const int64_t row = request.out_rows[out];
      const Row where{base, row, request.out_rows.size()};
      row_logits(std::span<const int32_t>(history_.data(), static_cast<size_t>(base + row + 1)),
                 where, std::span<float>(request.logits + out * vocab, vocab));
    }
    memory.advance(rows);
    rows_evaluated_ += rows;
  }

  // Rows evaluated so far (prompt, catch-up, draft and verify rows).
  int64_t rows_evaluated() const { return rows_evaluated_; }

 protected:
  // Where a wanted row sits: the memory rows before its ubatch, its index in the ubatch and how
  // many rows of the ubatch are wanted.
  struct Row {
    int64_t memory_rows;
    int64_t index;
    size_t n_wanted;
  };
  // The logits of one wanted row; a test-side subclass may plant a defect here.
  virtual void row_logits(std::span<const int32_t> history, const Row&,
                          std::span<float> out) const {
    logits_(history, out);
  }
  void scripted_logits(std::span<const int32_t> history, std::span<float> out) const {
    logits_(history, out);
  }

 private:
  model::HParams hp_;
  HistoryLogits logits_;
  std::unique_ptr<gguf::File> file_;
  mutable std::vector<int32_t> history_;  // [memory rows + batch] scratch
  mutable int64_t rows_evaluated_ = 0;
};

}  // namespace augur::testing
