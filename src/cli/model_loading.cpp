#include "cli/model_loading.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <thread>

#include "common/error.h"

namespace augur::cli {

void RuntimeOptions::add_options(CLI::App& app) {
  app.add_option("-m,--model", model_path, "GGUF model file")->required();
  app.add_option("-t,--threads", threads, "worker threads (default: all hardware threads)")
      ->check(CLI::Range(1, 1024));
  app.add_option("-c,--ctx-size", n_ctx,
                 "context size in tokens (default: the model's, at most 4096)")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 24));
  app.add_option("--ubatch", ubatch, "max tokens per forward pass during prefill")
      ->capture_default_str()
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 16));
  app.add_option("--cache-type-k", cache_type_k, "K cache type: f32, f16, q8_0 or q4_0")
      ->capture_default_str();
  app.add_option("--cache-type-v", cache_type_v, "V cache type: f32, f16, q8_0 or q4_0")
      ->capture_default_str();
}

cache::CacheTypes RuntimeOptions::cache_types() const {
  return parse_cache_types(cache_type_k, cache_type_v);
}

cache::CacheTypes parse_cache_types(const std::string& k, const std::string& v) {
  const auto parse = [](const std::string& name, const char* option) {
    try {
      return cache::parse_cache_type(name);
    } catch (const InvalidArgument& e) {
      throw InvalidArgument(fmt::format("{}: {}", option, e.what()));
    }
  };
  return {parse(k, "--cache-type-k"), parse(v, "--cache-type-v")};
}

int RuntimeOptions::resolved_threads() const {
  if (threads > 0) return threads;
  return std::max(1u, std::thread::hardware_concurrency());
}

int64_t RuntimeOptions::resolved_ctx(const model::Model& model) const {
  if (n_ctx > 0) return n_ctx;
  return std::min<int64_t>(model.hparams().n_ctx_train, 4096);
}

std::unique_ptr<model::Model> load_model_with_progress(const std::string& path) {
  constexpr uintmax_t kShowProgressFrom = uintmax_t{256} << 20;
  std::error_code ec;
  const auto size = std::filesystem::file_size(path, ec);
  const bool show = !ec && size >= kShowProgressFrom;
  std::function<void(double)> progress;
  if (show) {
    progress = [&](double fraction) {
      std::fprintf(stderr, "\rloading %s: %3d%%", path.c_str(), static_cast<int>(fraction * 100));
      if (fraction >= 1.0) std::fprintf(stderr, "\n");
      std::fflush(stderr);
    };
  }
  return model::load_model(path, progress);
}

}  // namespace augur::cli
