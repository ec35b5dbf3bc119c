// The EAGLE-3 head (model/heads/eagle3.h) against an independent float64 NumPy forward of
// design/drafter-formats.md §1.3 (tools/train_drafter/make_reference_eagle3.py): a tiny head
// with its own embeddings, its own output head and a reduced vocabulary (d2t), six rows of pairs
// from given features, then three autoregressive steps fed their own y. g, y and the
// full-vocabulary logits (-inf off d2t) must match within 1e-4.
//
// Round trip: every GGUF the training tool writes comes with <file>.manifest.json listing every
// key (type, value or the sha256 of an array's packed items) and tensor (shape, type, sha256 of
// its bytes); augur's reader must see exactly those, nothing more, and the head must load.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <limits>
#include <memory>
#include <numeric>
#include <string>
#include <vector>

#include "bench/build_info.h"
#include "cache/model_cache.h"
#include "common/error.h"
#include "gguf/file.h"
#include "gguf/writer.h"
#include "kernels/thread_pool.h"
#include "model/evaluator.h"
#include "model/heads/eagle3.h"
#include "support/reference.h"
#include "test_paths.h"

namespace augur::model::heads {
namespace {

using nlohmann::json;

// Only the shape a head is checked against (hidden size, vocabulary, layers); never run.
class ShapeOnlyTarget final : public Model {
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
  const HParams& hparams() const override { return hp_; }
  const gguf::File& file() const override { return *file_; }
  std::unique_ptr<Workspace> make_workspace(int64_t, int64_t) const override { return nullptr; }
  void forward_ubatch(const UbatchRequest&, Memory&, Workspace&,
                      kernels::ThreadPool&) const override {
    throw Unsupported("a shape-only target does not run");
  }

 private:
  HParams hp_;
  std::unique_ptr<gguf::File> file_;
};

std::filesystem::path data_dir() {
  return testing::source_dir() / "tests" / "data" / "drafters";
}

std::vector<float> floats(const json& j) {
  std::vector<float> v;
  for (const auto& x : j) {
    v.push_back(x.is_null() ? -std::numeric_limits<float>::infinity() : x.get<float>());
  }
  return v;
}

// Largest |got - want| (infinite entries must agree exactly).
double max_difference(const float* got, const std::vector<float>& want) {
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

TEST(Eagle3Head, MatchesTheNumpyFloat64Reference) {
  const json ref = testing::read_json(data_dir() / "tiny-eagle3-ref.json");
  const json& dims = ref["dims"];
  const ShapeOnlyTarget target(dims["Ht"].get<int64_t>(), dims["n_vocab"].get<int64_t>(), 4);
  const auto head = Eagle3::load(data_dir() / ref["gguf"].get<std::string>(), target);
  ASSERT_EQ(head->draft_vocab(), dims["n_draft_vocab"].get<int64_t>());
  const auto taps = head->target_layers();
  EXPECT_EQ(std::vector<int32_t>(taps.begin(), taps.end()),
            ref["target_layers"].get<std::vector<int32_t>>());
  kernels::ThreadPool pool(2);
  const int64_t D = head->hparams().n_embd, V = head->hparams().n_vocab;
  cache::ModelCache cache(*head, {.capacity = 16, .max_batch = 8});
  Evaluator eval(*head, pool, 8, 16);
  constexpr double kTolerance = 1e-4;

  // Case 1: six pairs in one forward.
  const json& c1 = ref["case1"];
  const auto n = static_cast<int64_t>(c1["tokens"].size());
  std::vector<float> features;
  for (const auto& row : c1["features"]) {
    const auto f = floats(row);
    features.insert(features.end(), f.begin(), f.end());
  }
  std::vector<float> g(static_cast<size_t>(n * D)), y(g.size());
  head->fuse(features.data(), n, g.data(), pool);
  std::vector<int32_t> rows(static_cast<size_t>(n));
  std::iota(rows.begin(), rows.end(), 0);
  std::vector<float> logits(static_cast<size_t>(n * V));
  eval.forward(c1["tokens"].get<std::vector<int32_t>>(),
               c1["positions"].get<std::vector<int32_t>>(), rows, cache.memory(), logits.data(), -1,
               {.hidden_in = g.data(), .hidden_out = y.data()});
  cache.commit(n);
  for (int64_t r = 0; r < n; ++r) {
    const json& want = c1["rows"][static_cast<size_t>(r)];
    EXPECT_LT(max_difference(&g[r * D], floats(want["g"])), kTolerance) << "g of row " << r;
    EXPECT_LT(max_difference(&y[r * D], floats(want["y"])), kTolerance) << "y of row " << r;
    EXPECT_LT(max_difference(&logits[r * V], floats(want["logits"])), kTolerance)
        << "logits of row " << r;
  }

  // Case 2: autoregressive steps on the same cache, each fed the previous y.
  std::vector<float> last(y.end() - D, y.end());
  for (const json& step : ref["case2"]["steps"]) {
    EXPECT_LT(max_difference(last.data(), floats(step["g"])), kTolerance);
    const int32_t token = step["token"].get<int32_t>(), pos = step["pos"].get<int32_t>(), row = 0;
    std::vector<float> out(static_cast<size_t>(D)), step_logits(static_cast<size_t>(V));
    eval.forward(std::span<const int32_t>(&token, 1), std::span<const int32_t>(&pos, 1),
                 std::span<const int32_t>(&row, 1), cache.memory(), step_logits.data(), -1,
                 {.hidden_in = last.data(), .hidden_out = out.data()});
    cache.commit(1);
    EXPECT_LT(max_difference(out.data(), floats(step["y"])), kTolerance) << "step at " << pos;
    EXPECT_LT(max_difference(step_logits.data(), floats(step["logits"])), kTolerance)
        << "step at " << pos;
    last = out;
  }
}

TEST(Eagle3Head, RefusesHeadsThatDoNotFitTheTarget) {
  const auto path = data_dir() / "tiny-eagle3.gguf";
  // Another hidden size, and too few layers for its taps.
  EXPECT_THROW(Eagle3::load(path, ShapeOnlyTarget(64, 64, 4)), InvalidArgument);
  EXPECT_THROW(Eagle3::load(path, ShapeOnlyTarget(32, 64, 2)), InvalidArgument);
  // d2t ids past a smaller vocabulary.
  EXPECT_THROW(Eagle3::load(path, ShapeOnlyTarget(32, 40, 4)), Error);
}

std::string sha256(const uint8_t* data, size_t n) {
  return bench::sha256_bytes(std::span<const uint8_t>(data, n));
}

// An array's items packed as GGUF stores them (strings with their u64 length), no header.
std::string packed(const gguf::Array& a) {
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

std::string upper(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return out;
}

// Every key and tensor of `gguf` as its manifest lists them, and nothing else.
void expect_matches_manifest(const std::filesystem::path& gguf) {
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

TEST(Eagle3Head, ToolWrittenFilesMatchTheirManifests) {
  expect_matches_manifest(data_dir() / "tiny-eagle3.gguf");
  const auto trained = testing::source_dir() / "models" / "zoo-target-eagle3-f16.gguf";
  expect_matches_manifest(trained);
  const auto target = model::load_model(testing::models_dir() / "zoo-target-f16.gguf");
  const auto head = Eagle3::load(trained, *target);
  EXPECT_EQ(head->target_hidden(), target->hparams().n_embd);
}

}  // namespace
}  // namespace augur::model::heads
