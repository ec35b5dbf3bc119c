// `augur quantize` end to end through the real binary: Q8_0/Q4_0 files identical to the ones
// llama-quantize --pure made (tiny-llama-Q8_0/Q4_0.gguf) and logits equal to their references
// but for near-tie roundings; Q5_0/Q4_K/Q5_K/Q6_K and Q4_K_M files that load and stay close to the
// F32 model; llama.cpp's tensor selection, mixes and fallbacks; and the error cases, which leave no
// file behind.
#include "tensor/quantize.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <ostream>
#include <set>
#include <string>
#include <type_traits>
#include <variant>
#include <vector>

#include "gguf/file.h"
#include "gguf/writer.h"
#include "kernels/thread_pool.h"
#include "model/quantize_model.h"
#include "support/gguf_rewrite.h"
#include "support/model_session.h"
#include "support/near_tie.h"
#include "support/reference.h"
#include "support/run_command.h"
#include "tensor/matrix.h"
#include "test_paths.h"

namespace augur {
namespace {

using gguf::TensorType;
namespace fs = std::filesystem;

fs::path fixture(const std::string& name) {
  return testing::fixtures_dir() / name;
}

testing::CommandResult quantize(const fs::path& in, const fs::path& out, const std::string& type,
                                const std::string& extra = "") {
  return testing::run_command(testing::quote(testing::augur_bin()) + " quantize " + extra + " " +
                              testing::quote(in) + " " + testing::quote(out) + " " + type);
}

// A scratch directory per test, removed with everything in it.
class QuantizeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = testing::temp_path("quantize");
    fs::create_directories(dir_);
  }
  void TearDown() override {
    std::error_code ec;
    fs::permissions(dir_, fs::perms::owner_all, fs::perm_options::add, ec);
    fs::remove_all(dir_, ec);
  }
  fs::path path(const std::string& name) const { return dir_ / name; }
  // Files in the scratch directory other than `keep`.
  std::vector<std::string> files_except(const std::vector<fs::path>& keep = {}) const {
    std::vector<std::string> names;
    for (const auto& entry : fs::recursive_directory_iterator(dir_)) {
      if (std::find(keep.begin(), keep.end(), entry.path()) == keep.end()) {
        names.push_back(entry.path().string());
      }
    }
    return names;
  }
  fs::path dir_;
};

// ---- GGUF comparison helpers ----

bool same_value(const gguf::Value& a, const gguf::Value& b) {
  if (a.type != b.type || a.data.index() != b.data.index()) return false;
  return std::visit(
      [&](const auto& x) {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, gguf::Array>) {
          const auto& y = std::get<gguf::Array>(b.data);
          if (x.element_type != y.element_type || x.items.size() != y.items.size()) return false;
          for (size_t i = 0; i < x.items.size(); ++i) {
            if (!same_value(x.items[i], y.items[i])) return false;
          }
          return true;
        } else {
          return x == std::get<T>(b.data);
        }
      },
      a.data);
}

// Keys in order, with values; `skip` keys left out.
std::vector<std::pair<std::string, const gguf::Value*>> metadata_without(
    const gguf::File& f, const std::vector<std::string>& skip) {
  std::vector<std::pair<std::string, const gguf::Value*>> out;
  for (const auto& [key, value] : f.metadata()) {
    if (std::find(skip.begin(), skip.end(), key) == skip.end()) out.emplace_back(key, &value);
  }
  return out;
}

void expect_same_metadata(const gguf::File& got, const gguf::File& want,
                          const std::vector<std::string>& skip = {}) {
  const auto a = metadata_without(got, skip), b = metadata_without(want, skip);
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].first, b[i].first) << "key " << i;
    EXPECT_TRUE(same_value(*a[i].second, *b[i].second)) << a[i].first;
  }
}

// ---- logits helpers ----

struct Reference {
  explicit Reference(const std::string& name)
      : ref(testing::read_json(fixture(name + ".ref.json"))) {
    n_vocab = ref["n_vocab"].get<int64_t>();
  }
  size_t n_prompts() const { return ref["prompts"].size(); }
  std::vector<int32_t> prompt(size_t p) const {
    return ref["prompts"][p].get<std::vector<int32_t>>();
  }
  // [rows of every prompt, n_vocab], in the logits_file layout.
  std::vector<float> read(const std::string& file) const {
    return testing::read_f32(fixture(file));
  }
  std::vector<float> main_logits() const {
    return read(ref["logits_file"]["name"].get<std::string>());
  }
  std::vector<float> upcast_logits() const {
    return read(ref["f32_upcast_comparison"]["upcast_reference"]["logits_file"].get<std::string>());
  }
  nlohmann::json ref;
  int64_t n_vocab = 0;
};

// augur's logits for every prompt position of every reference prompt, each prompt one batch.
std::vector<float> prompt_logits(const fs::path& model, const Reference& ref) {
  std::vector<float> all;
  for (size_t p = 0; p < ref.n_prompts(); ++p) {
    testing::ModelSession s(model);
    const auto logits = s.all_logits(ref.prompt(p));
    all.insert(all.end(), logits.begin(), logits.end());
  }
  return all;
}

struct Deviation {
  float max_abs = 0;            // over every row and vocab entry
  double rms = 0;               // root mean square difference over every row and vocab entry
  double argmax_agreement = 0;  // fraction of rows with the same top token
};

Deviation deviation(const std::vector<float>& got, const std::vector<float>& want,
                    int64_t n_vocab) {
  Deviation d;
  d.max_abs = testing::max_abs_diff(got.data(), want.data(), want.size());
  const size_t rows = want.size() / static_cast<size_t>(n_vocab);
  size_t agree = 0;
  double sum_sq = 0;
  for (size_t i = 0; i < want.size(); ++i) sum_sq += double(got[i] - want[i]) * (got[i] - want[i]);
  d.rms = std::sqrt(sum_sq / static_cast<double>(want.size()));
  for (size_t row = 0; row < rows; ++row) {
    const float* g = got.data() + row * n_vocab;
    const float* w = want.data() + row * n_vocab;
    agree += testing::ModelSession::argmax(g, n_vocab) == testing::ModelSession::argmax(w, n_vocab);
  }
  d.argmax_agreement = static_cast<double>(agree) / static_cast<double>(rows);
  return d;
}

// ---- Q8_0 / Q4_0: what llama-quantize --pure wrote ----

class LlamaQuantizeTypes : public QuantizeTest,
                           public ::testing::WithParamInterface<std::string> {};

TEST_P(LlamaQuantizeTypes, OutputIsTheLlamaQuantizeFileByteForByte) {
  const std::string type = GetParam();
  const auto out = path("out.gguf");
  const auto r = quantize(fixture("tiny-llama.gguf"), out, type);
  ASSERT_EQ(r.exit_code, 0) << r.err;

  const auto got = gguf::File::open(out);
  const auto want = gguf::File::open(fixture("tiny-llama-" + type + ".gguf"));
  // Tensors: same order, names, shapes, types and bytes.
  ASSERT_EQ(got->tensors().size(), want->tensors().size());
  for (size_t i = 0; i < want->tensors().size(); ++i) {
    const auto& g = got->tensors()[i];
    const auto& w = want->tensors()[i];
    EXPECT_EQ(g.name, w.name) << "tensor " << i;
    EXPECT_EQ(g.ne, w.ne) << w.name;
    EXPECT_EQ(g.type, w.type) << w.name << ": " << gguf::type_name(g.type) << " vs "
                              << gguf::type_name(w.type);
    ASSERT_EQ(g.n_bytes, w.n_bytes) << w.name;
    EXPECT_EQ(std::memcmp(g.data, w.data, w.n_bytes), 0) << w.name << " bytes differ";
  }
  // Metadata: identical to llama-quantize's, and to the source's except for what quantizing sets.
  expect_same_metadata(*got, *want);
  const auto source = gguf::File::open(fixture("tiny-llama.gguf"));
  expect_same_metadata(*got, *source, {"general.file_type", "general.quantization_version"});
  EXPECT_EQ(got->get_int("general.file_type"), want->get_int("general.file_type"));
  EXPECT_EQ(got->get_int("general.quantization_version"), 2);
  // And so the whole file.
  EXPECT_TRUE(testing::slurp(out) == testing::slurp(fixture("tiny-llama-" + type + ".gguf")));
}

// augur computes Q8_0/Q4_0 products as llama.cpp does (integer dots on Q8_0 activations), so the
// file's prompt logits match llama.cpp's quantized reference within logits_atol on every row, but
// where an activation rounding sat at a near-tie that the two engines settle differently
// (tests/support/near_tie.h, tests/model/fixture_test.cpp).
TEST_P(LlamaQuantizeTypes, OutputLogitsMatchTheFixturesQuantizedReference) {
  const std::string type = GetParam();
  const auto out = path("out.gguf");
  ASSERT_EQ(quantize(fixture("tiny-llama.gguf"), out, type).exit_code, 0);
  const Reference ref("tiny-llama-" + type);
  const float atol = ref.ref["recommended_tolerance"]["logits_atol"].get<float>();
  const auto want = ref.main_logits();
  for (size_t p = 0; p < ref.n_prompts(); ++p) {
    std::vector<testing::ForwardPass> passes(1);
    passes[0].tokens = ref.prompt(p);
    const auto offset = ref.ref["logits_file"]["row_offsets"][p].get<size_t>();
    for (size_t i = 0; i < passes[0].tokens.size(); ++i) {
      passes[0].want.push_back(want.data() + (offset + i) * ref.n_vocab);
    }
    testing::ModelSession s(out);
    EXPECT_EQ(testing::explain_departures(s, passes, atol).unexplained, "")
        << type << " prompt " << p;
  }
}

TEST_P(LlamaQuantizeTypes, ThreadCountAndChunkSizeDoNotChangeTheBytes) {
  const std::string type = GetParam();
  const auto one = path("one.gguf");
  ASSERT_EQ(quantize(fixture("tiny-llama.gguf"), one, type, "-t 1").exit_code, 0);
  // In-process with chunks of 3 rows of 256 (tensors span many chunks) on 2 threads.
  const auto input = gguf::File::open(fixture("tiny-llama.gguf"));
  kernels::ThreadPool pool(2);
  const auto chunked = path("chunked.gguf");
  model::quantize_model(*input, chunked, model::parse_quantize_target(type), pool, {},
                        /*chunk_elements=*/3 * 256);
  EXPECT_TRUE(testing::slurp(one) == testing::slurp(chunked));
  EXPECT_TRUE(testing::slurp(one) == testing::slurp(fixture("tiny-llama-" + type + ".gguf")));
}

INSTANTIATE_TEST_SUITE_P(Fixtures, LlamaQuantizeTypes, ::testing::Values("Q8_0", "Q4_0"));

TEST_F(QuantizeTest, ProgressIsOneLinePerTensorWhenNotATerminal) {
  const auto r = quantize(fixture("tiny-llama.gguf"), path("out.gguf"), "Q8_0");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto input = gguf::File::open(fixture("tiny-llama.gguf"));
  const size_t n = input->tensors().size();
  size_t lines = 0;
  for (size_t pos = 0; (pos = r.err.find("quantizing ", pos)) != std::string::npos; ++pos) ++lines;
  EXPECT_EQ(lines, n) << r.err;
  EXPECT_NE(r.err.find("quantizing output.weight [1/" + std::to_string(n) + "]"), std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("[" + std::to_string(n) + "/" + std::to_string(n) + "] 100%"),
            std::string::npos)
      << r.err;
  EXPECT_EQ(r.err.find('\r'), std::string::npos);
  EXPECT_TRUE(r.out.empty());
}

TEST_F(QuantizeTest, QuantizingToTheTypeAlreadyThereCopiesTheFile) {
  const auto out = path("same.gguf");
  const auto r = quantize(fixture("tiny-llama-Q4_0.gguf"), out, "Q4_0");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(testing::slurp(out) == testing::slurp(fixture("tiny-llama-Q4_0.gguf")));
}

// ---- Q4_K / Q5_K / Q6_K / Q5_0: no llama.cpp file to equal, so a bound against the F32 model ----
//
// The yardstick is llama.cpp's own quantization of the same model, read from the fixtures: how far
// the Q4_0 / Q8_0 files' upcast logits lie from the F32 model's. This random-weight model is very
// sensitive (llama-quantize's Q4_0 moves its logits by ~11 rms, logit std 30, and keeps the top
// token on only about half of the rows), so a fixed number would be either meaningless or
// brittle. Logit error grows with the quantization step:
// - Q4_K has Q4_0's budget (4-bit codes per 32 weights with an f16-coded scale, plus a min):
//   expected step ratio 1 to Q4_0.
// - Q5_K's step is (max - min)/31 <= 2 amax/31 per 32 weights against Q4_0's amax/8: 16/31 of it.
// - Q5_0's step is amax/16 per 32 weights, half of Q4_0's amax/8.
// - Q6_K's step is at most amax/31.5 over 16 weights against Q8_0's amax/127 over 32: at most
//   127/31.5 times coarser than Q8_0.
// Allowed: rms within 1.25x and max-abs within 1.5x of (step ratio x yardstick), and top-token
// agreement with F32 at most 0.1 below llama.cpp's Q4_0 (a file no less faithful than a 4-bit one).
// BoundRejectsAFileWithOneTensorsNibblesSwapped shows that a layout bug in a single tensor fails.

struct KQuantCase {
  std::string type;
  std::string yardstick;  // fixture quantized by llama-quantize
  double step_ratio;      // target step / yardstick step
  int64_t file_type;      // LLAMA_FTYPE (include/llama.h)
};

std::ostream& operator<<(std::ostream& os, const KQuantCase& c) {
  return os << c.type;
}

// Empty when `logits` [prompt rows, n_vocab] is within the bound, else what broke it.
std::string k_quant_bound_violation(const KQuantCase& c, const std::vector<float>& logits) {
  const Reference f32("tiny-llama");
  const auto want = f32.main_logits();
  const auto yard =
      deviation(Reference("tiny-llama-" + c.yardstick).upcast_logits(), want, f32.n_vocab);
  const auto q4_0 = deviation(Reference("tiny-llama-Q4_0").upcast_logits(), want, f32.n_vocab);
  const auto got = deviation(logits, want, f32.n_vocab);
  std::string why;
  if (got.rms > 1.25 * c.step_ratio * yard.rms) {
    why += "rms " + std::to_string(got.rms) + " > 1.25 x " + std::to_string(c.step_ratio) + " x " +
           std::to_string(yard.rms) + "; ";
  }
  if (got.max_abs > 1.5 * c.step_ratio * yard.max_abs) {
    why += "max " + std::to_string(got.max_abs) + " > 1.5 x " + std::to_string(c.step_ratio) +
           " x " + std::to_string(yard.max_abs) + "; ";
  }
  if (got.argmax_agreement < q4_0.argmax_agreement - 0.1) {
    why += "top-token agreement " + std::to_string(got.argmax_agreement) + " < " +
           std::to_string(q4_0.argmax_agreement) + " - 0.1; ";
  }
  return why;
}

class KQuantTypes : public QuantizeTest, public ::testing::WithParamInterface<KQuantCase> {};

TEST_P(KQuantTypes, EveryMatrixGetsTheTypeAndTheRestIsKept) {
  const auto& c = GetParam();
  const auto out = path("out.gguf");
  const auto r = quantize(fixture("tiny-llama.gguf"), out, c.type);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto got = gguf::File::open(out);
  const auto source = gguf::File::open(fixture("tiny-llama.gguf"));
  const auto order = gguf::File::open(fixture("tiny-llama-Q8_0.gguf"));  // llama-quantize's order
  ASSERT_EQ(got->tensors().size(), order->tensors().size());
  for (size_t i = 0; i < got->tensors().size(); ++i) {
    const auto& t = got->tensors()[i];
    EXPECT_EQ(t.name, order->tensors()[i].name);
    const auto& src = source->tensor(t.name);
    EXPECT_EQ(t.ne, src.ne);
    // Matrices (token_embd and output included, as --pure) get the type; 1-D norms stay F32.
    const TensorType expected =
        src.ne.size() >= 2 ? model::parse_quantize_target(c.type).type : src.type;
    EXPECT_EQ(gguf::type_name(t.type), gguf::type_name(expected)) << t.name;
    if (t.type == src.type) {
      EXPECT_EQ(std::memcmp(t.data, src.data, src.n_bytes), 0) << t.name;
    }
  }
  EXPECT_EQ(got->get_int("general.file_type"), c.file_type);
  EXPECT_EQ(got->get_int("general.quantization_version"), 2);
  expect_same_metadata(*got, *source, {"general.file_type", "general.quantization_version"});
}

TEST_P(KQuantTypes, LogitsStayWithinTheBoundSetByLlamaCppsOwnQuantization) {
  const auto& c = GetParam();
  const auto out = path("out.gguf");
  ASSERT_EQ(quantize(fixture("tiny-llama.gguf"), out, c.type).exit_code, 0);
  const auto logits = prompt_logits(out, Reference("tiny-llama"));
  EXPECT_EQ(k_quant_bound_violation(c, logits), "");
}

// Swapping the two nibbles of every code byte in one tensor is the kind of layout slip (which
// half holds which element) a quantizer can make; the bound must not let it through, even when it
// touches only the last layer's ffn_down, the tensor whose damage moved logits least.
TEST_P(KQuantTypes, BoundRejectsAFileWithOneTensorsNibblesSwapped) {
  const auto& c = GetParam();
  const auto good = path("good.gguf"), bad = path("bad.gguf");
  ASSERT_EQ(quantize(fixture("tiny-llama.gguf"), good, c.type).exit_code, 0);
  testing::rewrite_tensor_bytes(
      good, bad, [](const gguf::TensorInfo& t, std::vector<uint8_t>& bytes) {
        if (t.name != "blk.3.ffn_down.weight") return false;
        // Q4_K: d, dmin (4 bytes) and 12 scale bytes, then 128 bytes of nibbles.
        // Q5_K: the same with 32 bytes of fifth bits before the nibbles.
        // Q6_K: 128 bytes of low nibbles first (then qh, scales, d).
        const size_t block = gguf::traits(t.type).block_bytes;
        // Q5_0: d and 4 bytes of fifth bits, then 16 bytes of nibbles.
        const size_t first = t.type == TensorType::Q4_K   ? 16
                             : t.type == TensorType::Q5_K ? 48
                             : t.type == TensorType::Q5_0 ? 6
                                                          : 0;
        const size_t count = t.type == TensorType::Q5_0 ? 16 : 128;
        for (size_t b = 0; b < bytes.size(); b += block) {
          for (size_t i = first; i < first + count; ++i) {
            bytes[b + i] = static_cast<uint8_t>((bytes[b + i] >> 4) | (bytes[b + i] << 4));
          }
        }
        return true;
      });
  const auto reference = Reference("tiny-llama");
  ASSERT_EQ(k_quant_bound_violation(c, prompt_logits(good, reference)), "");
  EXPECT_NE(k_quant_bound_violation(c, prompt_logits(bad, reference)), "");
}

INSTANTIATE_TEST_SUITE_P(Types, KQuantTypes,
                         ::testing::Values(KQuantCase{"Q4_K", "Q4_0", 1.0, 15},
                                           KQuantCase{"Q5_K", "Q4_0", 16.0 / 31, 17},
                                           KQuantCase{"Q5_0", "Q4_0", 0.5, 8},
                                           KQuantCase{"Q6_K", "Q8_0", 127.0 / 31.5, 18}),
                         [](const auto& info) { return info.param.type; });

// ---- the Q4_K_M / Q5_K_M mixes: llama-quantize's per-tensor choices ----

// A llama-shaped tensor list in llama-quantize's order (non-layer tensors first, then layer by
// layer, names sorted), with F16 matrices of `cols` columns.
std::vector<gguf::TensorInfo> llama_tensors(int n_layer, bool with_output, int64_t cols = 4096,
                                            bool experts = false) {
  std::vector<gguf::TensorInfo> t;
  const auto add = [&](std::string name, std::vector<int64_t> ne, TensorType type) {
    gguf::TensorInfo info;
    info.name = std::move(name);
    info.ne = std::move(ne);
    info.type = type;
    t.push_back(std::move(info));
  };
  if (with_output) add("output.weight", {cols, 32000}, TensorType::F16);
  add("output_norm.weight", {cols}, TensorType::F32);
  add("token_embd.weight", {cols, 32000}, TensorType::F16);
  std::vector<int> layers(n_layer);
  for (int i = 0; i < n_layer; ++i) layers[i] = i;
  // Sorted by layer number, then by name (as the loader's comparator).
  for (int i : layers) {
    const std::string p = "blk." + std::to_string(i) + ".";
    add(p + "attn_k.weight", {cols, 1024}, TensorType::F16);
    add(p + "attn_norm.weight", {cols}, TensorType::F32);
    add(p + "attn_output.weight", {cols, cols}, TensorType::F16);
    add(p + "attn_q.weight", {cols, cols}, TensorType::F16);
    add(p + "attn_v.weight", {cols, 1024}, TensorType::F16);
    if (experts) {
      add(p + "ffn_down_exps.weight", {14336, cols, 8}, TensorType::F16);
      add(p + "ffn_gate_exps.weight", {cols, 14336, 8}, TensorType::F16);
      add(p + "ffn_gate_inp.weight", {cols, 8}, TensorType::F32);
      add(p + "ffn_up_exps.weight", {cols, 14336, 8}, TensorType::F16);
    } else {
      add(p + "ffn_down.weight", {14336, cols}, TensorType::F16);
      add(p + "ffn_gate.weight", {cols, 14336}, TensorType::F16);
      add(p + "ffn_up.weight", {cols, 14336}, TensorType::F16);
    }
    add(p + "ffn_norm.weight", {cols}, TensorType::F32);
  }
  return t;
}

std::map<std::string, TensorType> mix_of(const std::vector<gguf::TensorInfo>& tensors,
                                         const std::string& target, const model::MixModel& m) {
  std::vector<const gguf::TensorInfo*> ptrs;
  for (const auto& t : tensors) ptrs.push_back(&t);
  const auto types = model::mix_types(ptrs, model::parse_quantize_target(target), m);
  std::map<std::string, TensorType> out;
  for (size_t i = 0; i < tensors.size(); ++i) out[tensors[i].name] = types[i];
  return out;
}

// use_more_bits(i, 32): i < 4, i >= 28, or (i - 4) % 3 == 2.
const std::set<int> kMoreBits32 = {0, 1, 2, 3, 6, 9, 12, 15, 18, 21, 24, 27, 28, 29, 30, 31};

TEST(QuantizeMix, Q4_K_MOnALlama7BShapedModel) {
  const auto types = mix_of(llama_tensors(32, true), "Q4_K_M", {"llama", 32, 0});
  EXPECT_EQ(types.at("output.weight"), TensorType::Q6_K);
  EXPECT_EQ(types.at("token_embd.weight"), TensorType::Q4_K);  // untied: the default
  EXPECT_EQ(types.at("output_norm.weight"), TensorType::F32);  // not quantized
  for (int i = 0; i < 32; ++i) {
    const std::string p = "blk." + std::to_string(i) + ".";
    const TensorType more = kMoreBits32.count(i) ? TensorType::Q6_K : TensorType::Q4_K;
    EXPECT_EQ(types.at(p + "attn_v.weight"), more) << i;
    EXPECT_EQ(types.at(p + "ffn_down.weight"), more) << i;
    for (const char* name : {"attn_q.weight", "attn_k.weight", "attn_output.weight",
                             "ffn_gate.weight", "ffn_up.weight"}) {
      EXPECT_EQ(types.at(p + name), TensorType::Q4_K) << p << name;
    }
    EXPECT_EQ(types.at(p + "attn_norm.weight"), TensorType::F32);
  }
}

TEST(QuantizeMix, Q5_K_MUsesQ5_KWithTheSameQ6_KLayers) {
  const auto types = mix_of(llama_tensors(32, true), "Q5_K_M", {"llama", 32, 0});
  EXPECT_EQ(types.at("output.weight"), TensorType::Q6_K);
  EXPECT_EQ(types.at("token_embd.weight"), TensorType::Q5_K);
  for (int i = 0; i < 32; ++i) {
    const std::string p = "blk." + std::to_string(i) + ".";
    const TensorType more = kMoreBits32.count(i) ? TensorType::Q6_K : TensorType::Q5_K;
    EXPECT_EQ(types.at(p + "attn_v.weight"), more) << i;
    EXPECT_EQ(types.at(p + "ffn_down.weight"), more) << i;
    EXPECT_EQ(types.at(p + "attn_q.weight"), TensorType::Q5_K) << i;
  }
}

TEST(QuantizeMix, TiedEmbeddingsGetTheOutputRuleAndOddWidthsQ8_0) {
  // No output.weight: token_embd is the output matrix too.
  auto types = mix_of(llama_tensors(8, false), "Q4_K_M", {"llama", 8, 0});
  EXPECT_EQ(types.at("token_embd.weight"), TensorType::Q6_K);
  // use_more_bits(i, 8): i < 1, i >= 7, or (i - 1) % 3 == 2.
  for (int i = 0; i < 8; ++i) {
    const bool more = i == 0 || i == 3 || i == 6 || i == 7;
    EXPECT_EQ(types.at("blk." + std::to_string(i) + ".attn_v.weight"),
              more ? TensorType::Q6_K : TensorType::Q4_K)
        << i;
  }
  // A width that is no multiple of 256: the output matrix becomes Q8_0 (the rule itself, not a
  // fallback); other matrices keep the rule's type here and fall back at planning time.
  types = mix_of(llama_tensors(2, true, 2880), "Q4_K_M", {"llama", 2, 0});
  EXPECT_EQ(types.at("output.weight"), TensorType::Q8_0);
  gguf::TensorInfo q;
  q.ne = {2880, 64};
  EXPECT_EQ(model::with_fallback(q, TensorType::Q4_K), TensorType::Q5_0);
  EXPECT_EQ(model::with_fallback(q, TensorType::Q6_K), TensorType::Q8_0);
  EXPECT_EQ(model::with_fallback(q, TensorType::Q5_K), TensorType::Q8_0);
}

TEST(QuantizeMix, EightExpertsAndFalconRules) {
  // 8 experts (Mixtral-like): attn_v and attn_k Q8_0, attn_output Q5_K, ffn_down_exps by the layer
  // number in its name; the router stays F32.
  auto types = mix_of(llama_tensors(32, true, 4096, true), "Q4_K_M", {"llama", 32, 8});
  for (int i = 0; i < 32; ++i) {
    const std::string p = "blk." + std::to_string(i) + ".";
    EXPECT_EQ(types.at(p + "attn_v.weight"), TensorType::Q8_0) << i;
    EXPECT_EQ(types.at(p + "attn_k.weight"), TensorType::Q8_0) << i;
    EXPECT_EQ(types.at(p + "attn_output.weight"), TensorType::Q5_K) << i;
    EXPECT_EQ(types.at(p + "ffn_down_exps.weight"),
              kMoreBits32.count(i) ? TensorType::Q6_K : TensorType::Q4_K)
        << i;
    EXPECT_EQ(types.at(p + "ffn_gate_inp.weight"), TensorType::F32) << i;
  }
  // Falcon, Q4_K_M: output Q8_0; ffn_down Q6_K below n_layer/16, Q5_K where use_more_bits, else
  // Q4_K.
  types = mix_of(llama_tensors(32, true), "Q4_K_M", {"falcon", 32, 0});
  EXPECT_EQ(types.at("output.weight"), TensorType::Q8_0);
  for (int i = 0; i < 32; ++i) {
    const TensorType want = i < 2                      ? TensorType::Q6_K
                            : kMoreBits32.count(i) > 0 ? TensorType::Q5_K
                                                       : TensorType::Q4_K;
    EXPECT_EQ(types.at("blk." + std::to_string(i) + ".ffn_down.weight"), want) << i;
  }
}

TEST(QuantizeMix, PureTargetsGiveEveryAllowedTensorTheirType) {
  const auto types = mix_of(llama_tensors(4, true), "Q4_K", {"llama", 4, 0});
  for (const auto& [name, type] : types) {
    const bool norm = name.find("_norm") != std::string::npos;
    EXPECT_EQ(type, norm ? TensorType::F32 : TensorType::Q4_K) << name;
  }
}

// End to end on tiny-llama (4 layers: use_more_bits picks layers 2 and 3): the file's types follow
// the rules, general.file_type is LLAMA_FTYPE_MOSTLY_Q4_K_M, and the logits stay within Q4_K's
// bound against the F32 model.
TEST_F(QuantizeTest, Q4_K_MFileFollowsTheMixAndStaysClose) {
  const auto out = path("mix.gguf");
  const auto r = quantize(fixture("tiny-llama.gguf"), out, "q4_k_m");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto got = gguf::File::open(out);
  EXPECT_EQ(got->get_int("general.file_type"), 15);
  EXPECT_EQ(got->tensor("output.weight").type, TensorType::Q6_K);
  EXPECT_EQ(got->tensor("token_embd.weight").type, TensorType::Q4_K);
  for (int i = 0; i < 4; ++i) {
    const std::string p = "blk." + std::to_string(i) + ".";
    const TensorType more = i >= 2 ? TensorType::Q6_K : TensorType::Q4_K;
    EXPECT_EQ(got->tensor(p + "attn_v.weight").type, more) << i;
    EXPECT_EQ(got->tensor(p + "ffn_down.weight").type, more) << i;
    EXPECT_EQ(got->tensor(p + "attn_q.weight").type, TensorType::Q4_K) << i;
  }
  const KQuantCase bound{"Q4_K_M", "Q4_0", 1.0, 15};
  EXPECT_EQ(k_quant_bound_violation(bound, prompt_logits(out, Reference("tiny-llama"))), "");
}

// ---- which tensors are converted, to what, in which order (a synthetic model) ----

struct SyntheticTensor {
  std::string name;
  std::vector<int64_t> ne;
  TensorType type;
};

// F32/F16/BF16 tensors in a scrambled order, filled with a deterministic pattern.
void write_synthetic(const fs::path& path, const std::vector<SyntheticTensor>& tensors,
                     int64_t split_count = 0) {
  gguf::Writer w(path);
  w.set_string("general.architecture", "llama");
  w.set_u32("general.file_type", 0);
  if (split_count) w.set_u16("split.count", static_cast<uint16_t>(split_count));
  for (const auto& t : tensors) w.add_tensor(t.name, t.type, t.ne);
  w.write_header();
  int64_t seed = 1;
  for (const auto& t : tensors) {
    int64_t n = 1;
    for (const auto d : t.ne) n *= d;
    std::vector<float> values(static_cast<size_t>(n));
    for (auto& v : values) v = std::sin(0.731f * static_cast<float>(seed++)) * 0.05f;
    std::vector<uint8_t> bytes(gguf::row_bytes(t.type, n));
    tensor::quantize_row(t.type, values.data(), bytes.data(), n);
    w.write_tensor_data(t.name, std::span<const uint8_t>(bytes));
  }
  w.finish();
}

const std::vector<SyntheticTensor>& synthetic_tensors() {
  static const std::vector<SyntheticTensor> tensors = {
      {"blk.10.ffn_up.weight", {256, 3}, TensorType::BF16},
      {"blk.0.attn_q.weight", {96, 4}, TensorType::F32},  // 96: not a multiple of 256
      {"token_embd.weight", {256, 8}, TensorType::F32},
      {"blk.2.ffn_up.weight", {256, 4}, TensorType::F16},
      {"blk.0.attn_k.weight", {40, 4}, TensorType::F32},  // 40: not a multiple of 32
      {"blk.0.attn_norm.weight", {256}, TensorType::F32},
      {"blk.1.ffn_down.weight", {256, 1}, TensorType::F32},      // one row: 1-D for ggml
      {"blk.0.ffn_gate_inp.weight", {256, 4}, TensorType::F32},  // MoE router
      {"blk.0.attn_q.bias", {256, 2}, TensorType::F32},          // not a weight
      {"position_embd.weight", {256, 4}, TensorType::F32},
      {"output_norm.weight", {256}, TensorType::F32},
  };
  return tensors;
}

struct SelectionCase {
  std::string type;
  std::vector<std::pair<std::string, TensorType>> expected;  // in output order
  int n_fallback;
};

std::ostream& operator<<(std::ostream& os, const SelectionCase& c) {
  return os << c.type;
}

class TensorSelection : public QuantizeTest, public ::testing::WithParamInterface<SelectionCase> {};

TEST_P(TensorSelection, FollowsLlamaQuantizeWithDocumentedFallbacks) {
  const auto& c = GetParam();
  const auto in = path("in.gguf"), out = path("out.gguf");
  write_synthetic(in, synthetic_tensors());
  const auto r = quantize(in, out, c.type);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("(" + std::to_string(c.n_fallback) + " by fallback)"), std::string::npos)
      << r.err;
  const auto source = gguf::File::open(in);
  const auto got = gguf::File::open(out);
  ASSERT_EQ(got->tensors().size(), c.expected.size());
  for (size_t i = 0; i < c.expected.size(); ++i) {
    const auto& t = got->tensors()[i];
    const auto& [name, type] = c.expected[i];
    EXPECT_EQ(t.name, name) << "position " << i;
    EXPECT_EQ(gguf::type_name(t.type), gguf::type_name(type)) << name;
    const auto& src = source->tensor(t.name);
    EXPECT_EQ(t.ne, src.ne) << name;
    if (t.type == src.type) {
      EXPECT_EQ(std::memcmp(t.data, src.data, src.n_bytes), 0) << name << " not copied as is";
      continue;
    }
    // Converted: every row is the encoding of the exactly decoded source row.
    const auto m = tensor::Matrix::from(src);
    std::vector<float> row(static_cast<size_t>(m.cols));
    std::vector<uint8_t> encoded(gguf::row_bytes(t.type, m.cols));
    for (int64_t r = 0; r < src.rows(); ++r) {
      tensor::dequantize_row(src.type, m.row(r), row.data(), m.cols);
      tensor::quantize_row(t.type, row.data(), encoded.data(), m.cols);
      EXPECT_EQ(std::memcmp(t.data + r * encoded.size(), encoded.data(), encoded.size()), 0)
          << name << " row " << r;
    }
  }
}

std::vector<std::pair<std::string, TensorType>> expected_for(TensorType target, TensorType at_96) {
  using T = TensorType;
  // llama_model_loader's order: names outside blk.N first, then layer by layer (10 after 2).
  return {{"output_norm.weight", T::F32},     {"position_embd.weight", T::F32},
          {"token_embd.weight", target},      {"blk.0.attn_k.weight", T::F16},
          {"blk.0.attn_norm.weight", T::F32}, {"blk.0.attn_q.bias", T::F32},
          {"blk.0.attn_q.weight", at_96},     {"blk.0.ffn_gate_inp.weight", T::F32},
          {"blk.1.ffn_down.weight", T::F32},  {"blk.2.ffn_up.weight", target},
          {"blk.10.ffn_up.weight", target}};
}

INSTANTIATE_TEST_SUITE_P(
    Types, TensorSelection,
    ::testing::Values(SelectionCase{"Q8_0", expected_for(TensorType::Q8_0, TensorType::Q8_0), 1},
                      SelectionCase{"Q4_0", expected_for(TensorType::Q4_0, TensorType::Q4_0), 1},
                      SelectionCase{"Q5_0", expected_for(TensorType::Q5_0, TensorType::Q5_0), 1},
                      // Rows of 96 fall back as llama.cpp's do: Q5_0 for Q4_K, Q8_0 for Q6_K;
                      // Q8_0 for Q5_K (llama.cpp: Q5_1, which augur does not have); rows of 40
                      // to F16.
                      SelectionCase{"Q4_K", expected_for(TensorType::Q4_K, TensorType::Q5_0), 2},
                      SelectionCase{"Q5_K", expected_for(TensorType::Q5_K, TensorType::Q8_0), 2},
                      SelectionCase{"Q6_K", expected_for(TensorType::Q6_K, TensorType::Q8_0), 2}),
    [](const auto& info) { return info.param.type; });

// ---- F16 source with tied embeddings and biases (tiny-qwen2) ----

// Q8_0 moves tiny-llama's logits by 2.5 % of their std (its fixture); a mis-decoded source lands
// near 100 %. 10 % leaves room for qwen2's signed, std-20 output norm, which amplifies errors.
TEST_F(QuantizeTest, F16ModelWithTiedEmbeddingsQuantizesAndRuns) {
  const auto out = path("qwen2-q8.gguf");
  const auto r = quantize(fixture("tiny-qwen2.gguf"), out, "q8_0");  // names are case-insensitive
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto got = gguf::File::open(out);
  EXPECT_EQ(got->find_tensor("output.weight"), nullptr);
  EXPECT_EQ(got->tensor("token_embd.weight").type, TensorType::Q8_0);
  EXPECT_EQ(got->tensor("blk.0.attn_q.bias").type, TensorType::F32);
  const Reference ref("tiny-qwen2");
  const auto want = ref.upcast_logits();
  double mean = 0, sq = 0;
  for (const float v : want) mean += v;
  mean /= static_cast<double>(want.size());
  for (const float v : want) sq += (v - mean) * (v - mean);
  const double logit_std = std::sqrt(sq / static_cast<double>(want.size()));
  const auto d = deviation(prompt_logits(out, ref), want, ref.n_vocab);
  EXPECT_LE(d.rms, 0.1 * logit_std);
}

// ---- errors: exit codes, messages, and no file left behind ----

TEST_F(QuantizeTest, UnknownTypeIsRejectedListingTheAllowedOnes) {
  const auto r = quantize(fixture("tiny-llama.gguf"), path("out.gguf"), "Q3_K");
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("unknown type 'Q3_K'"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("Q8_0, Q4_0, Q5_0, Q4_K, Q5_K, Q6_K, Q4_K_M, Q5_K_M"), std::string::npos)
      << r.err;
  EXPECT_TRUE(files_except().empty());
}

TEST_F(QuantizeTest, OutputThatIsTheInputIsRejectedAndTheInputKept) {
  const auto in = path("model.gguf");
  fs::copy_file(fixture("tiny-llama.gguf"), in);
  const auto link = path("link.gguf");
  fs::create_symlink(in, link);
  for (const auto& out : {in, dir_ / "." / "model.gguf", link}) {
    const auto r = quantize(in, out, "Q8_0");
    EXPECT_EQ(r.exit_code, 2) << out << ": " << r.err;
    EXPECT_NE(r.err.find("is the input file"), std::string::npos) << r.err;
  }
  EXPECT_TRUE(testing::slurp(in) == testing::slurp(fixture("tiny-llama.gguf")));
  EXPECT_EQ(files_except({in, link}), std::vector<std::string>{});
}

TEST_F(QuantizeTest, UnreadableInputIsNamed) {
  const auto missing = path("missing.gguf");
  auto r = quantize(missing, path("out.gguf"), "Q8_0");
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find(missing.string()), std::string::npos) << r.err;
  const auto text = path("notes.gguf");
  std::ofstream(text) << "not a gguf file\n";
  r = quantize(text, path("out.gguf"), "Q8_0");
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find(text.string()), std::string::npos) << r.err;
  EXPECT_EQ(files_except({text}), std::vector<std::string>{});
}

TEST_F(QuantizeTest, UnwritableOutputFailsWithoutLeavingAFile) {
  // A directory that does not exist: fails before any byte is written.
  const auto nowhere = path("no-such-dir") / "out.gguf";
  auto r = quantize(fixture("tiny-llama.gguf"), nowhere, "Q8_0");
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find(nowhere.string()), std::string::npos) << r.err;
  // An existing directory as the output: every byte is written to OUT.partial, then the rename
  // fails; the partial file must be gone.
  const auto occupied = path("occupied");
  fs::create_directories(occupied / "child");
  r = quantize(fixture("tiny-llama.gguf"), occupied, "Q8_0");
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find("cannot move"), std::string::npos) << r.err;
  EXPECT_EQ(files_except({occupied, occupied / "child"}), std::vector<std::string>{});
  // A read-only directory (root writes anyway, so only checked for other users).
  if (::geteuid() != 0) {
    const auto locked = path("locked");
    fs::create_directories(locked);
    fs::permissions(locked, fs::perms::owner_read | fs::perms::owner_exec);
    r = quantize(fixture("tiny-llama.gguf"), locked / "out.gguf", "Q8_0");
    EXPECT_EQ(r.exit_code, 1) << r.err;
    fs::permissions(locked, fs::perms::owner_all);
    EXPECT_TRUE(fs::is_empty(locked));
  }
}

TEST_F(QuantizeTest, RequantizingAQuantizedModelIsUnsupported) {
  const auto r = quantize(fixture("tiny-llama-Q4_0.gguf"), path("out.gguf"), "Q8_0");
  EXPECT_EQ(r.exit_code, 3) << r.err;
  EXPECT_NE(r.err.find("tensor 'output.weight' is already quantized (Q4_0)"), std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("F32/F16/BF16 original"), std::string::npos) << r.err;
  EXPECT_TRUE(files_except().empty());
}

TEST_F(QuantizeTest, OneShardOfASplitModelIsUnsupported) {
  const auto in = path("shard.gguf");
  write_synthetic(in, {{"token_embd.weight", {256, 2}, TensorType::F32}}, /*split_count=*/2);
  const auto r = quantize(in, path("out.gguf"), "Q8_0");
  EXPECT_EQ(r.exit_code, 3) << r.err;
  EXPECT_NE(r.err.find("split"), std::string::npos) << r.err;
  EXPECT_EQ(files_except({in}), std::vector<std::string>{});
}

}  // namespace
}  // namespace augur
