// Options and steps shared by the commands that run a model: -m, -t, -c, --ubatch,
// --cache-type-k/-v, and a
// load that reports progress on stderr for large files.
#pragma once

#include <CLI/CLI.hpp>
#include <memory>
#include <string>

#include "cache/model_cache.h"
#include "model/model.h"

namespace augur::cli {

struct RuntimeOptions {
  std::string model_path;
  int threads = 0;    // 0: all hardware threads
  int64_t n_ctx = 0;  // 0: the model's training context, capped at 4096
  int64_t ubatch = 512;
  // K/V cache row types, llama.cpp's names (its default is f16; ours stays f32, exact).
  std::string cache_type_k = "f32";
  std::string cache_type_v = "f32";

  void add_options(CLI::App& app);
  int resolved_threads() const;
  int64_t resolved_ctx(const model::Model& model) const;
  // InvalidArgument names an unknown type and the supported ones.
  cache::CacheTypes cache_types() const;
};

// --cache-type-k / --cache-type-v values; InvalidArgument names the option, the value and the
// supported types.
cache::CacheTypes parse_cache_types(const std::string& k, const std::string& v);

// Loads the model, printing "loading ... NN%" on stderr when the file is large.
std::unique_ptr<model::Model> load_model_with_progress(const std::string& path);

}  // namespace augur::cli
