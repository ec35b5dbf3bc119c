// What the drafter-head tests share: a target that only has a shape, the tiny reference files
// under tests/data/drafters, comparisons against float64 references, and the manifest check of
// tool-written GGUFs (every key and tensor as <file>.manifest.json lists them, nothing more).
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "bench/build_info.h"
#include "common/error.h"
#include "gguf/file.h"
#include "gguf/writer.h"
#include "model/model.h"
#include "support/reference.h"
#include "test_paths.h"

namespace augur::testing {

using nlohmann::json;

// Only the shape a head is checked against (hidden size, vocabulary, layers); never run.
class ShapeOnlyTarget final : public model::Model {
 public:
  ShapeOnlyTarget(int64_t n_embd, int64_t n_vocab, int64_t n_layer) {
    hp_.arch = "shape";
    hp_.n_embd = n_embd;
    hp_.n_vocab = n_vocab;
    hp_.n_layer = n_layer;
    const auto path = std::filesystem::temp_directory_path() /
                      ("augur-shape-" + std::to_string(::getpid()) + ".gguf");
    {
      gguf::Writer w(path);
      w.set_string("general.architecture", "shape");
      w.write_header();
      w.finish();
    }
    file_ = gguf::File::open(path);
    std::filesystem::remove(path);
  }
  const model::HParams& hparams() const override { return hp_; }
  const gguf::File& file() const override { return *file_; }
  std::unique_ptr<model::Workspace> make_workspace(int64_t, int64_t) const override {
    return nullptr;
  }
  void forward_ubatch(const model::UbatchRequest&, model::Memory&, model::Workspace&,
                      kernels::ThreadPool&) const override {
    throw Unsupported("a shape-only target does not run");
  }

 private:
  model::HParams hp_;
  std::unique_ptr<gguf::File> file_;
};

inline std::filesystem::path drafter_data_dir() {
  return testing::source_dir() / "tests" / "data" / "drafters";
}

inline std::vector<float> floats(const json& j) {
  std::vector<float> v;
  for (const auto& x : j) {
    v.push_back(x.is_null() ? -std::numeric_limits<float>::infinity() : x.get<float>());
  }
  return v;
}

// Largest |got - want| (infinite entries must agree exactly).
inline double max_difference(const float* got, const std::vector<float>& want) {
  double worst = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    if (std::isinf(want[i]) || std::isinf(got[i])) {
      if (got[i] != want[i]) return std::numeric_limits<double>::infinity();
      continue;
    }
    worst = std::max(worst, std::abs(static_cast<double>(got[i]) - want[i]));
  }
  return worst;
}

inline std::string sha256(const uint8_t* data, size_t n) {
  return bench::sha256_bytes(std::span<const uint8_t>(data, n));
}

// An array's items packed as GGUF stores them (strings with their u64 length), no header.
inline std::string packed(const gguf::Array& a) {
  std::string out;
  const auto put = [&](const void* p, size_t n) { out.append(static_cast<const char*>(p), n); };
  for (const gguf::Value& v : a.items) {
    switch (a.element_type) {
      case gguf::ValueType::STRING: {
        const auto s = std::get<std::string_view>(v.data);
        const uint64_t len = s.size();
        put(&len, 8);
        put(s.data(), s.size());
        break;
      }
      case gguf::ValueType::FLOAT32: {
        const auto f = static_cast<float>(std::get<double>(v.data));
        put(&f, 4);
        break;
      }
      case gguf::ValueType::INT32: {
        const auto i = static_cast<int32_t>(v.as_int("item"));
        put(&i, 4);
        break;
      }
      case gguf::ValueType::INT64: {
        const int64_t i = v.as_int("item");
        put(&i, 8);
        break;
      }
      case gguf::ValueType::UINT32: {
        const auto u = static_cast<uint32_t>(v.as_int("item"));
        put(&u, 4);
        break;
      }
      default: ADD_FAILURE() << "array type not in the manifests' vocabulary";
    }
  }
  return out;
}

inline std::string upper(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return out;
}

// Every key and tensor of `gguf` as its manifest lists them, and nothing else.
inline void expect_matches_manifest(const std::filesystem::path& gguf) {
  SCOPED_TRACE(gguf.filename().string());
  const json manifest = testing::read_json(gguf.string() + ".manifest.json");
  const auto file = gguf::File::open(gguf);
  ASSERT_EQ(file->metadata().size(), manifest["metadata"].size()) << "key count";
  for (const json& key : manifest["metadata"]) {
    const std::string name = key["name"];
    const gguf::Value* v = file->find(name);
    ASSERT_NE(v, nullptr) << name;
    EXPECT_EQ(upper(gguf::value_type_name(v->type)), key["type"].get<std::string>()) << name;
    if (const auto* a = std::get_if<gguf::Array>(&v->data)) {
      EXPECT_EQ(upper(gguf::value_type_name(a->element_type)),
                key["element_type"].get<std::string>())
          << name;
      EXPECT_EQ(static_cast<int64_t>(a->items.size()), key["length"].get<int64_t>()) << name;
      const std::string bytes = packed(*a);
      EXPECT_EQ(sha256(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()),
                key["sha256"].get<std::string>())
          << name;
    } else if (v->type == gguf::ValueType::STRING) {
      EXPECT_EQ(std::get<std::string_view>(v->data), key["value"].get<std::string>()) << name;
    } else if (v->type == gguf::ValueType::BOOL) {
      EXPECT_EQ(std::get<bool>(v->data), key["value"].get<bool>()) << name;
    } else if (v->type == gguf::ValueType::FLOAT32 || v->type == gguf::ValueType::FLOAT64) {
      EXPECT_EQ(std::get<double>(v->data), key["value"].get<double>()) << name;
    } else {
      EXPECT_EQ(v->as_int(name), key["value"].get<int64_t>()) << name;
    }
  }
  ASSERT_EQ(file->tensors().size(), manifest["tensors"].size()) << "tensor count";
  for (const json& t : manifest["tensors"]) {
    const std::string name = t["name"];
    const gguf::TensorInfo* info = file->find_tensor(name);
    ASSERT_NE(info, nullptr) << name;
    EXPECT_EQ(info->ne, t["shape"].get<std::vector<int64_t>>()) << name;
    EXPECT_EQ(upper(gguf::type_name(info->type)), upper(t["type"].get<std::string>())) << name;
    EXPECT_EQ(sha256(info->data, info->n_bytes), t["sha256"].get<std::string>()) << name;
  }
}

}  // namespace augur::testing
