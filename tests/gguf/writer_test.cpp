#include "gguf/writer.h"

#include <gtest/gtest.h>

#include <array>
#include <cstring>

#include "common/error.h"
#include "gguf/file.h"
#include "gguf_test_support.h"
#include "test_paths.h"

namespace augur::gguf {
namespace {

using test::TempDir;

std::span<const uint8_t> bytes_of(const TensorInfo& t) {
  return {t.data, t.n_bytes};
}

void expect_metadata_equal(const std::vector<std::pair<std::string, Value>>& want,
                           const std::vector<std::pair<std::string, Value>>& got) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_EQ(got[i].first, want[i].first) << "key " << i;
    EXPECT_TRUE(test::same_value(want[i].second, got[i].second, want[i].first));
  }
}

void expect_synthetic_tensors(const File& f) {
  const auto want = test::synthetic_tensors();
  ASSERT_EQ(f.tensors().size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    const TensorInfo& t = f.tensors()[i];
    EXPECT_EQ(t.name, want[i].name);
    EXPECT_EQ(t.type, want[i].type) << t.name;
    EXPECT_EQ(t.ne, want[i].ne) << t.name;
    EXPECT_EQ(t.n_bytes, want[i].n_bytes) << t.name;
    EXPECT_EQ(t.offset % f.alignment(), 0u) << t.name;
    const auto data = test::synthetic_data(i, want[i].n_bytes);
    EXPECT_TRUE(std::equal(data.begin(), data.end(), t.data, t.data + t.n_bytes)) << t.name;
  }
}

TEST(GgufWriter, EveryValueTypeAndTensorReadsBackIdentical) {
  TempDir dir;
  const auto path = dir.file("synthetic.gguf");
  test::write_synthetic(path);
  auto f = File::open(path);
  EXPECT_EQ(f->version(), 3u);
  EXPECT_EQ(f->alignment(), 32u);
  expect_metadata_equal(test::synthetic_metadata(), f->metadata());
  expect_synthetic_tensors(*f);
}

TEST(GgufWriter, WritesVersion2OnRequest) {
  TempDir dir;
  const auto path = dir.file("v2.gguf");
  test::write_synthetic(path, 2);
  auto f = File::open(path);
  EXPECT_EQ(f->version(), 2u);
  expect_metadata_equal(test::synthetic_metadata(), f->metadata());
  expect_synthetic_tensors(*f);
}

TEST(GgufWriter, RejectsVersionsOtherThan2And3) {
  TempDir dir;
  EXPECT_THROW(Writer(dir.file("v1.gguf"), 1), InvalidArgument);
  EXPECT_THROW(Writer(dir.file("v4.gguf"), 4), InvalidArgument);
}

// The data section starts aligned, each tensor starts aligned, and the file ends with the last
// tensor's padding, so the size is exactly data offset + padded tensor sizes.
class GgufWriterAlignment : public ::testing::TestWithParam<uint32_t> {};

TEST_P(GgufWriterAlignment, PlacesTensorsAtAlignedOffsetsBackToBack) {
  const uint32_t alignment = GetParam();
  TempDir dir;
  const auto path = dir.file("aligned.gguf");
  test::write_synthetic(path, 3, alignment);
  auto f = File::open(path);
  EXPECT_EQ(f->alignment(), alignment);
  expect_synthetic_tensors(*f);

  const std::string bytes = test::read_bytes(path);
  const test::Layout layout = test::LayoutWalker(bytes).walk();
  EXPECT_EQ(layout.data_offset % alignment, 0u);
  uint64_t expected_offset = 0;
  for (const auto& t : f->tensors()) {
    EXPECT_EQ(t.offset, expected_offset) << t.name;
    EXPECT_EQ(t.data, reinterpret_cast<const uint8_t*>(f->tensors()[0].data) + t.offset) << t.name;
    expected_offset += (t.n_bytes + alignment - 1) / alignment * alignment;
  }
  EXPECT_EQ(bytes.size(), layout.data_offset + expected_offset);
  // Padding is zeros.
  for (size_t at = layout.header_end; at < layout.data_offset; ++at) EXPECT_EQ(bytes[at], '\0');
}

INSTANTIATE_TEST_SUITE_P(Alignments, GgufWriterAlignment,
                         ::testing::Values(1u, 8u, 32u, 64u, 4096u));

TEST(GgufWriter, TypedSettersStoreTheirExactTypes) {
  TempDir dir;
  const auto path = dir.file("typed.gguf");
  {
    Writer w(path);
    w.set_u8("u8", 200);
    w.set_i8("i8", -100);
    w.set_u16("u16", 60000);
    w.set_i16("i16", -30000);
    w.set_u32("u32", 4000000000u);
    w.set_i32("i32", -2000000000);
    w.set_u64("u64", 1ull << 63);
    w.set_i64("i64", -(1ll << 62));
    w.set_f32("f32", 0.1f);
    w.set_f64("f64", 0.1);
    w.set_bool("bool", true);
    w.set_string("string", "text");
    const std::vector<uint8_t> a_u8{1, 2};
    const std::vector<int8_t> a_i8{-1};
    const std::vector<uint16_t> a_u16{65535};
    const std::vector<int16_t> a_i16{-2};
    const std::vector<uint32_t> a_u32{3};
    const std::vector<int32_t> a_i32{-4, 5};
    const std::vector<uint64_t> a_u64{1ull << 50};
    const std::vector<int64_t> a_i64{-(1ll << 50)};
    const std::vector<float> a_f32{0.5f, -0.1f};
    const std::vector<double> a_f64{-0.1};
    const std::array<bool, 3> a_bool{true, false, true};
    const std::vector<std::string> a_str{"x", "", "yy"};
    const std::vector<std::string_view> a_sv{"p", "q"};
    w.set_array("a.u8", a_u8);
    w.set_array("a.i8", a_i8);
    w.set_array("a.u16", a_u16);
    w.set_array("a.i16", a_i16);
    w.set_array("a.u32", a_u32);
    w.set_array("a.i32", a_i32);
    w.set_array("a.u64", a_u64);
    w.set_array("a.i64", a_i64);
    w.set_array("a.f32", a_f32);
    w.set_array("a.f64", a_f64);
    w.set_array("a.bool", a_bool);
    w.set_array("a.str", a_str);
    w.set_array("a.sv", a_sv);
    w.finish();
  }
  auto f = File::open(path);
  const auto type_of = [&](std::string_view key) { return f->find(key)->type; };
  EXPECT_EQ(type_of("u8"), ValueType::UINT8);
  EXPECT_EQ(type_of("i8"), ValueType::INT8);
  EXPECT_EQ(type_of("u16"), ValueType::UINT16);
  EXPECT_EQ(type_of("i16"), ValueType::INT16);
  EXPECT_EQ(type_of("u32"), ValueType::UINT32);
  EXPECT_EQ(type_of("i32"), ValueType::INT32);
  EXPECT_EQ(type_of("u64"), ValueType::UINT64);
  EXPECT_EQ(type_of("i64"), ValueType::INT64);
  EXPECT_EQ(type_of("f32"), ValueType::FLOAT32);
  EXPECT_EQ(type_of("f64"), ValueType::FLOAT64);
  EXPECT_EQ(type_of("bool"), ValueType::BOOL);
  EXPECT_EQ(type_of("string"), ValueType::STRING);
  EXPECT_EQ(f->get_int("u8"), 200);
  EXPECT_EQ(f->get_int("i8"), -100);
  EXPECT_EQ(f->get_int("u16"), 60000);
  EXPECT_EQ(f->get_int("i16"), -30000);
  EXPECT_EQ(f->get_int("u32"), 4000000000);
  EXPECT_EQ(f->get_int("i32"), -2000000000);
  EXPECT_EQ(std::get<uint64_t>(f->find("u64")->data), 1ull << 63);
  EXPECT_EQ(f->get_int("i64"), -(1ll << 62));
  EXPECT_EQ(f->get_float("f32"), double{0.1f});
  EXPECT_EQ(f->get_float("f64"), 0.1);
  EXPECT_TRUE(f->get_bool("bool"));
  EXPECT_EQ(f->get_string("string"), "text");

  const auto elem_of = [&](std::string_view key) { return f->get_array(key).element_type; };
  EXPECT_EQ(elem_of("a.u8"), ValueType::UINT8);
  EXPECT_EQ(elem_of("a.i8"), ValueType::INT8);
  EXPECT_EQ(elem_of("a.u16"), ValueType::UINT16);
  EXPECT_EQ(elem_of("a.i16"), ValueType::INT16);
  EXPECT_EQ(elem_of("a.u32"), ValueType::UINT32);
  EXPECT_EQ(elem_of("a.i32"), ValueType::INT32);
  EXPECT_EQ(elem_of("a.u64"), ValueType::UINT64);
  EXPECT_EQ(elem_of("a.i64"), ValueType::INT64);
  EXPECT_EQ(elem_of("a.f32"), ValueType::FLOAT32);
  EXPECT_EQ(elem_of("a.f64"), ValueType::FLOAT64);
  EXPECT_EQ(elem_of("a.bool"), ValueType::BOOL);
  EXPECT_EQ(elem_of("a.str"), ValueType::STRING);
  EXPECT_EQ(f->get_int_array("a.u8"), (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(f->get_int_array("a.i8"), (std::vector<int64_t>{-1}));
  EXPECT_EQ(f->get_int_array("a.u16"), (std::vector<int64_t>{65535}));
  EXPECT_EQ(f->get_int_array("a.i16"), (std::vector<int64_t>{-2}));
  EXPECT_EQ(f->get_int_array("a.u32"), (std::vector<int64_t>{3}));
  EXPECT_EQ(f->get_int_array("a.i32"), (std::vector<int64_t>{-4, 5}));
  EXPECT_EQ(f->get_int_array("a.u64"), (std::vector<int64_t>{1ll << 50}));
  EXPECT_EQ(f->get_int_array("a.i64"), (std::vector<int64_t>{-(1ll << 50)}));
  EXPECT_EQ(f->get_float_array("a.f32"), (std::vector<float>{0.5f, -0.1f}));
  EXPECT_EQ(f->get_array("a.f64").items[0].as_float("a.f64"), -0.1);
  const auto& bools = f->get_array("a.bool").items;
  ASSERT_EQ(bools.size(), 3u);
  EXPECT_TRUE(bools[0].as_bool("a.bool"));
  EXPECT_FALSE(bools[1].as_bool("a.bool"));
  EXPECT_TRUE(bools[2].as_bool("a.bool"));
  EXPECT_EQ(f->get_string_array("a.str"), (std::vector<std::string_view>{"x", "", "yy"}));
  EXPECT_EQ(f->get_string_array("a.sv"), (std::vector<std::string_view>{"p", "q"}));
}

TEST(GgufWriter, StreamsTensorDataInChunks) {
  TempDir dir;
  const auto path = dir.file("chunks.gguf");
  std::vector<uint8_t> data(34 * 8);  // Q8_0 [256]: 8 blocks of 34 bytes
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<uint8_t>(i * 7);
  {
    Writer w(path);
    EXPECT_EQ(w.add_tensor("q", TensorType::Q8_0, {256}), data.size());
    w.write_header();
    std::span<const uint8_t> all(data);
    w.write_tensor_data("q", all.subspan(0, 1));
    w.write_tensor_data("q", all.subspan(1, 0));
    w.write_tensor_data("q", std::as_bytes(all.subspan(1, 100)));
    w.write_tensor_data("q", all.subspan(101));
    w.finish();
  }
  auto f = File::open(path);
  const auto got = bytes_of(f->tensor("q"));
  EXPECT_TRUE(std::equal(got.begin(), got.end(), data.begin(), data.end()));
}

TEST(GgufWriter, MetadataOnlyFileNeedsNoExplicitHeader) {
  TempDir dir;
  const auto path = dir.file("vocab.gguf");
  {
    Writer w(path);
    w.set_string("tokenizer.ggml.model", "llama");
    w.finish();
  }
  auto f = File::open(path);
  EXPECT_TRUE(f->tensors().empty());
  EXPECT_EQ(f->get_string("tokenizer.ggml.model"), "llama");
}

// Copy every key (through the generic Value path) and every tensor of a fixture.
void copy_gguf(const File& src, const std::filesystem::path& dst) {
  Writer w(dst, src.version());
  for (const auto& [key, value] : src.metadata()) w.set(key, value);
  for (const auto& t : src.tensors()) EXPECT_EQ(w.add_tensor(t.name, t.type, t.ne), t.n_bytes);
  w.write_header();
  for (const auto& t : src.tensors()) w.write_tensor_data(t.name, bytes_of(t));
  w.finish();
}

void expect_copy_identical(const std::filesystem::path& original) {
  TempDir dir;
  const auto path = dir.file("copy.gguf");
  auto src = File::open(original);
  copy_gguf(*src, path);
  auto copy = File::open(path);
  EXPECT_EQ(copy->version(), src->version());
  EXPECT_EQ(copy->alignment(), src->alignment());
  expect_metadata_equal(src->metadata(), copy->metadata());
  ASSERT_EQ(copy->tensors().size(), src->tensors().size());
  for (size_t i = 0; i < src->tensors().size(); ++i) {
    const TensorInfo& a = src->tensors()[i];
    const TensorInfo& b = copy->tensors()[i];
    EXPECT_EQ(b.name, a.name);
    EXPECT_EQ(b.type, a.type) << a.name;
    EXPECT_EQ(b.ne, a.ne) << a.name;
    EXPECT_EQ(b.offset, a.offset) << a.name;
    ASSERT_EQ(b.n_bytes, a.n_bytes) << a.name;
    EXPECT_EQ(std::memcmp(a.data, b.data, a.n_bytes), 0) << a.name;
  }
  // The fixtures were written by gguf-py with the canonical layout (header, zero padding, tensors
  // back to back each padded to the alignment), which the writer also produces.
  EXPECT_TRUE(test::read_bytes(path) == test::read_bytes(original)) << "copy differs from original";
}

TEST(GgufWriter, CopyOfTinyLlamaEqualsOriginal) {
  expect_copy_identical(augur::testing::fixtures_dir() / "tiny-llama.gguf");
}

TEST(GgufWriter, CopyOfQuantizedFixtureEqualsOriginal) {
  expect_copy_identical(augur::testing::fixtures_dir() / "tiny-llama-Q4_0.gguf");
}

// --- Misuse is rejected with InvalidArgument and leaves the writer usable. ---

TEST(GgufWriter, RejectsTensorDataOfTheWrongSize) {
  TempDir dir;
  const auto path = dir.file("sizes.gguf");
  Writer w(path);
  ASSERT_EQ(w.add_tensor("a", TensorType::F32, {4}), 16u);
  ASSERT_EQ(w.add_tensor("b", TensorType::Q4_0, {32, 2}), 36u);
  w.write_header();
  const std::vector<uint8_t> seventeen(17), sixteen(16), thirty_six(36);
  EXPECT_THROW(w.write_tensor_data("a", seventeen), InvalidArgument);
  w.write_tensor_data("a", std::span(sixteen).first(10));
  EXPECT_THROW(w.finish(), InvalidArgument);                            // 'a' incomplete
  EXPECT_THROW(w.write_tensor_data("b", thirty_six), InvalidArgument);  // 'a' not done yet
  EXPECT_THROW(w.write_tensor_data("a", sixteen), InvalidArgument);     // 6 bytes left
  w.write_tensor_data("a", std::span(sixteen).first(6));
  w.write_tensor_data("b", std::span(thirty_six).first(35));
  EXPECT_THROW(w.finish(), InvalidArgument);  // 'b' one byte short
  w.write_tensor_data("b", std::span(thirty_six).last(1));
  EXPECT_THROW(w.write_tensor_data("b", std::span(thirty_six).first(1)), InvalidArgument);
  w.finish();
  // The rejected chunks left no trace.
  auto f = File::open(path);
  EXPECT_EQ(f->tensor("b").offset, 32u);
  EXPECT_EQ(f->file_size() % 32, 0u);
}

TEST(GgufWriter, RejectsTensorDataOutOfOrderOrForUnknownTensors) {
  TempDir dir;
  Writer w(dir.file("order.gguf"));
  w.add_tensor("first", TensorType::F32, {1});
  w.add_tensor("second", TensorType::F32, {1});
  w.write_header();
  const std::vector<uint8_t> four(4);
  try {
    w.write_tensor_data("second", four);
    FAIL() << "expected InvalidArgument";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("expected data for 'first'"), std::string::npos)
        << e.what();
  }
  EXPECT_THROW(w.write_tensor_data("third", four), InvalidArgument);
  w.write_tensor_data("first", four);
  w.write_tensor_data("second", four);
  EXPECT_THROW(w.write_tensor_data("second", four), InvalidArgument);
  w.finish();
  auto f = File::open(dir.file("order.gguf"));
  EXPECT_EQ(f->tensors().size(), 2u);
}

TEST(GgufWriter, RejectsBadShapesAndNames) {
  TempDir dir;
  Writer w(dir.file("shapes.gguf"));
  EXPECT_THROW(w.add_tensor("none", TensorType::F32, std::span<const int64_t>()), InvalidArgument);
  EXPECT_THROW(w.add_tensor("five", TensorType::F32, {1, 1, 1, 1, 1}), InvalidArgument);
  EXPECT_THROW(w.add_tensor("zero", TensorType::F32, {4, 0}), InvalidArgument);
  EXPECT_THROW(w.add_tensor("negative", TensorType::F32, {-4}), InvalidArgument);
  EXPECT_THROW(w.add_tensor("huge", TensorType::F32, {1ll << 41}), InvalidArgument);
  EXPECT_THROW(w.add_tensor("overflow", TensorType::F32, {1ll << 40, 1ll << 40}), InvalidArgument);
  EXPECT_THROW(w.add_tensor("partial_block", TensorType::Q4_0, {48}), InvalidArgument);
  EXPECT_THROW(w.add_tensor("bad_type", static_cast<TensorType>(4), {32}), InvalidArgument);
  EXPECT_THROW(w.add_tensor("", TensorType::F32, {1}), InvalidArgument);
  EXPECT_THROW(w.add_tensor(std::string(64, 'n'), TensorType::F32, {1}), InvalidArgument);
  EXPECT_EQ(w.add_tensor(std::string(63, 'n'), TensorType::F32, {1}), 4u);
  EXPECT_THROW(w.add_tensor(std::string(63, 'n'), TensorType::F16, {2}), InvalidArgument);
}

TEST(GgufWriter, RejectsValuesThatDoNotMatchTheirType) {
  TempDir dir;
  Writer w(dir.file("values.gguf"));
  using VT = ValueType;
  EXPECT_THROW(w.set("k", test::uint_value(VT::UINT8, 256)), InvalidArgument);
  EXPECT_THROW(w.set("k", test::int_value(VT::UINT32, -1)), InvalidArgument);
  EXPECT_THROW(w.set("k", test::int_value(VT::INT8, 128)), InvalidArgument);
  EXPECT_THROW(w.set("k", test::uint_value(VT::INT64, 1ull << 63)), InvalidArgument);
  EXPECT_THROW(w.set("k", test::float_value(VT::FLOAT32, 1e39)), InvalidArgument);
  EXPECT_THROW(w.set("k", Value{VT::UINT8, std::string_view("x")}), InvalidArgument);
  EXPECT_THROW(w.set("k", Value{VT::STRING, uint64_t{1}}), InvalidArgument);
  EXPECT_THROW(w.set("k", Value{VT::BOOL, int64_t{1}}), InvalidArgument);
  EXPECT_THROW(w.set("k", Value{static_cast<VT>(13), uint64_t{1}}), InvalidArgument);
  EXPECT_THROW(w.set("k", test::array_value(VT::INT32, {test::uint_value(VT::UINT32, 1)})),
               InvalidArgument);
  EXPECT_THROW(w.set("k", test::array_value(static_cast<VT>(99), {})), InvalidArgument);
  Value too_deep = test::array_value(VT::UINT8, {});
  for (int level = 1; level < 9; ++level) too_deep = test::array_value(VT::ARRAY, {too_deep});
  EXPECT_THROW(w.set("k", too_deep), InvalidArgument);
  EXPECT_THROW(w.set("", test::uint_value(VT::UINT8, 1)), InvalidArgument);
  // None of the rejected values claimed the key.
  w.set("k", test::uint_value(VT::UINT8, 255));
  EXPECT_THROW(w.set_u8("k", 1), InvalidArgument);
  const std::vector<int32_t> items{1};
  EXPECT_THROW(w.set_array("k", items), InvalidArgument);
  w.finish();
  auto f = File::open(dir.file("values.gguf"));
  ASSERT_EQ(f->metadata().size(), 1u);
  EXPECT_EQ(f->get_int("k"), 255);
}

TEST(GgufWriter, RejectsBadAlignment) {
  TempDir dir;
  Writer w(dir.file("align.gguf"));
  EXPECT_THROW(w.set_alignment(0), InvalidArgument);
  EXPECT_THROW(w.set_alignment(3), InvalidArgument);
  EXPECT_THROW(w.set_alignment(1u << 21), InvalidArgument);
  EXPECT_THROW(w.set_u64(Writer::kAlignmentKey, 32), InvalidArgument);
  EXPECT_THROW(w.set_f32(Writer::kAlignmentKey, 32), InvalidArgument);
  EXPECT_EQ(w.alignment(), 32u);
  w.set_alignment(16);
  EXPECT_EQ(w.alignment(), 16u);
}

TEST(GgufWriter, RejectsDeclarationsAfterTheHeaderAndDataBeforeIt) {
  TempDir dir;
  Writer w(dir.file("phase.gguf"));
  w.add_tensor("a", TensorType::F32, {1});
  const std::vector<uint8_t> four(4);
  EXPECT_THROW(w.write_tensor_data("a", four), InvalidArgument);
  w.write_header();
  EXPECT_THROW(w.write_header(), InvalidArgument);
  EXPECT_THROW(w.set_u8("late", 1), InvalidArgument);
  EXPECT_THROW(w.add_tensor("late", TensorType::F32, {1}), InvalidArgument);
  w.write_tensor_data("a", four);
  w.finish();
  EXPECT_THROW(w.finish(), InvalidArgument);
  EXPECT_THROW(w.write_tensor_data("a", four), InvalidArgument);
}

TEST(GgufWriter, AbandonedWriterLeavesNoFileBehind) {
  TempDir dir;
  const auto path = dir.file("abandoned.gguf");
  {
    Writer w(path);
    w.add_tensor("a", TensorType::F32, {1024});
    w.write_header();
    const std::vector<uint8_t> some(100);
    w.write_tensor_data("a", some);
    EXPECT_TRUE(std::filesystem::exists(path.string() + ".partial"));
    EXPECT_FALSE(std::filesystem::exists(path));
  }
  EXPECT_TRUE(std::filesystem::is_empty(dir.path()));
}

TEST(GgufWriter, ReplacesAnExistingFileOnlyOnFinish) {
  TempDir dir;
  const auto path = dir.file("model.gguf");
  test::write_bytes(path, "old contents");
  {
    Writer w(path);
    w.set_u8("k", 1);
    w.write_header();
    EXPECT_EQ(test::read_bytes(path), "old contents");
  }
  EXPECT_EQ(test::read_bytes(path), "old contents");
  {
    Writer w(path);
    w.set_u8("k", 1);
    w.finish();
  }
  EXPECT_EQ(File::open(path)->get_int("k"), 1);
}

TEST(GgufWriter, ReportsUnwritableDestination) {
  TempDir dir;
  Writer w(dir.file("missing-dir") / "x.gguf");
  try {
    w.write_header();
    FAIL() << "expected Error";
  } catch (const InvalidArgument&) {
    FAIL() << "an I/O failure is not an InvalidArgument";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("missing-dir"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace augur::gguf
