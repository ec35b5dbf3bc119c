#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <string>

#include "common/error.h"
#include "model/model.h"

namespace augur::model {
namespace {

std::map<std::string, ArchLoader, std::less<>>& registry() {
  static std::map<std::string, ArchLoader, std::less<>> loaders;
  return loaders;
}

// Touches every page of the tensor data so a large model's load shows progress instead of
// stalling on first use.
void page_in(const gguf::File& file, const std::function<void(double)>& progress) {
  file.prefetch();
  if (!progress) return;
  size_t total = 0;
  for (const auto& t : file.tensors()) total += t.n_bytes;
  if (total == 0) return;
  constexpr size_t kPage = 4096;
  constexpr size_t kReportEvery = size_t{64} << 20;
  size_t done = 0, next_report = 0;
  volatile uint8_t sink = 0;
  for (const auto& t : file.tensors()) {
    for (size_t off = 0; off < t.n_bytes; off += kPage) sink = sink + t.data[off];
    done += t.n_bytes;
    if (done >= next_report) {
      progress(static_cast<double>(done) / static_cast<double>(total));
      next_report = done + kReportEvery;
    }
  }
  progress(1.0);
}

// The loader of the file's architecture; Unsupported naming it and the known ones otherwise.
ArchLoader loader_for(const gguf::File& file) {
  const std::string arch(file.get_string("general.architecture"));
  auto it = registry().find(arch);
  if (it == registry().end()) {
    std::string known;
    for (const auto& [name, loader] : registry()) known += (known.empty() ? "" : ", ") + name;
    throw Unsupported(
        fmt::format("{}: unsupported architecture '{}' (supported: {})", file.path(), arch, known));
  }
  return it->second;
}

}  // namespace

bool register_arch(std::string_view name, ArchLoader loader) {
  registry().emplace(std::string(name), loader);
  return true;
}

std::unique_ptr<Model> load_model(std::unique_ptr<gguf::File> file) {
  const ArchLoader loader = loader_for(*file);
  return loader(std::move(file));
}

std::unique_ptr<Model> load_model(const std::filesystem::path& path,
                                  const std::function<void(double)>& progress) {
  auto file = gguf::File::open(path);
  const ArchLoader loader = loader_for(*file);
  // Before the loader: weights it packs for the kernels release their pages of the mapping, and
  // touching them afterwards would bring the whole file back into the resident set.
  page_in(*file, progress);
  return loader(std::move(file));
}

}  // namespace augur::model
