// Options and steps shared by the commands that run a model: -m, -t, -c, --ubatch, and a
// load that reports progress on stderr for large files.
#pragma once

#include <CLI/CLI.hpp>
#include <memory>
#include <string>

#include "model/model.h"

namespace augur::cli {

struct RuntimeOptions {
  std::string model_path;
  int threads = 0;    // 0: all hardware threads
  int64_t n_ctx = 0;  // 0: the model's training context, capped at 4096
  int64_t ubatch = 512;

  void add_options(CLI::App& app);
  int resolved_threads() const;
  int64_t resolved_ctx(const model::Model& model) const;
};

// Loads the model, printing "loading ... NN%" on stderr when the file is large.
std::unique_ptr<model::Model> load_model_with_progress(const std::string& path);

}  // namespace augur::cli
