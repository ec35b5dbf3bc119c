// The forward-pass interface every architecture implements, and loading by architecture name.
// A Model is immutable weights (views into the GGUF mapping it owns) plus hyper-parameters;
// per-session state lives in a Workspace (scratch) and a Memory (the cache), so one loaded
// model can serve several sessions.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <span>
#include <string_view>
#include <vector>

#include "gguf/file.h"
#include "kernels/thread_pool.h"
#include "model/hparams.h"
#include "model/memory.h"

namespace augur::model {

// Scratch buffers of one session, sized once for a maximum ubatch and context.
class Workspace {
 public:
  virtual ~Workspace() = default;
  // Bytes of the buffers it holds (memory figures of benchmark reports).
  virtual int64_t bytes() const { return 0; }
};

// One forward call over a ubatch.
struct UbatchRequest {
  std::span<const int32_t> tokens;     // [M]
  std::span<const int32_t> positions;  // [M] RoPE positions
  std::span<const int32_t> out_rows;   // ascending indexes into tokens whose logits are wanted
  float* logits = nullptr;             // [out_rows.size(), n_vocab]
  int n_layers = -1;  // run only the first n layers (layer-skip drafting); -1 = all
  // Feature capture for drafters that read the target (EAGLE-3, DFlash, MTP): for each listed
  // layer l, every row's residual stream entering block l (l == n_layer: the final hidden state
  // after output_norm), into features [M, capture_layers.size(), n_embd]. Empty: no cost.
  std::span<const int32_t> capture_layers;
  float* features = nullptr;
  // A drafter head's per-row hidden input besides the token ([M, Model::hidden_in_width()]) and
  // the hidden state it hands on per row ([M, n_embd]); models without one ignore both.
  const float* hidden_in = nullptr;
  float* hidden_out = nullptr;
};

// Rows [first_row, first_row + n_rows) of a ubatch that continue `memory`: a forward over
// several sessions (each its own cache) at once has one segment per session.
struct MemorySegment {
  int64_t first_row = 0;
  int64_t n_rows = 0;
  Memory* memory = nullptr;
};

class Model {
 public:
  virtual ~Model() = default;
  virtual const HParams& hparams() const = 0;
  virtual const gguf::File& file() const = 0;
  virtual std::unique_ptr<Workspace> make_workspace(int64_t max_rows, int64_t n_ctx) const = 0;
  // How each layer keeps its past (the cache builds its layers from this). Default: every layer
  // keeps all K/V rows.
  virtual std::vector<LayerCache> cache_layout() const;
  // Floats of the hidden input each row needs besides its token (UbatchRequest::hidden_in): 0
  // for a language model, the fused-feature width for a drafter head.
  virtual int64_t hidden_in_width() const { return 0; }
  // Evaluates one ubatch on top of `memory`: row i attends to every memory row plus batch rows
  // 0..i (causal), and its K/V are appended to `memory`. M must not exceed the workspace's
  // max_rows.
  virtual void forward_ubatch(const UbatchRequest& request, Memory& memory, Workspace& workspace,
                              kernels::ThreadPool& pool) const = 0;
  // The same over contiguous segments of the ubatch, each on its own memory (row i of a segment
  // attends to that memory and the segment's rows up to i): the weights stream once for every
  // session's rows. A row's logits are bitwise those of a forward_ubatch of its segment alone.
  // The default runs a single segment; more throw Unsupported.
  virtual void forward_segments(const UbatchRequest& request,
                                std::span<const MemorySegment> segments, Workspace& workspace,
                                kernels::ThreadPool& pool) const;
};

using ArchLoader = std::unique_ptr<Model> (*)(std::unique_ptr<gguf::File> file);

// Registers an architecture under its `general.architecture` name; used by AUGUR_REGISTER_ARCH.
bool register_arch(std::string_view name, ArchLoader loader);

// Loads the model for the file's `general.architecture`; Unsupported names an unknown one and
// lists the registered ones. `progress(fraction)` is called while the weights are paged in.
[[nodiscard]] std::unique_ptr<Model> load_model(const std::filesystem::path& path,
                                                const std::function<void(double)>& progress = {});
[[nodiscard]] std::unique_ptr<Model> load_model(std::unique_ptr<gguf::File> file);

}  // namespace augur::model

#define AUGUR_REGISTER_ARCH(name, loader)                     \
  [[maybe_unused]] static const bool augur_arch_registered_ = \
      ::augur::model::register_arch(name, loader)
