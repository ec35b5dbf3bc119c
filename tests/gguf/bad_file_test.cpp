// Hostile and damaged GGUF files: every one must make File::open throw FormatError naming the
// file, "at byte N" (the field at fault) and what was expected; never crash, hang or allocate
// memory in proportion to a count it has not checked.
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "common/error.h"
#include "gguf/file.h"
#include "gguf_test_support.h"
#include "test_paths.h"

namespace augur::gguf {
namespace {

using test::Bytes;
using test::expect_format_error;
using test::TempDir;
using VT = ValueType;

constexpr uint64_t kMaxU64 = std::numeric_limits<uint64_t>::max();
constexpr uint32_t kF32 = 0;
constexpr uint32_t kQ4_0 = 2;

// "at byte N:" -> N, or npos when the message has none.
size_t reported_byte(const std::string& msg) {
  const auto at = msg.find("at byte ");
  if (at == std::string::npos) return std::string::npos;
  return std::stoull(msg.substr(at + 8));
}

// Cuts `file` (holding `bytes`, a valid GGUF) to each length in `cuts` and checks File reports
// the byte the layout oracle predicts: the first field that no longer fits, or the count field of
// a region that no longer fits ("cannot fit"), or for tensor data the data start (when it is in
// the file) or else the tensor's offset field.
void expect_truncations_fail(const std::filesystem::path& file, const std::string& bytes,
                             std::vector<size_t> cuts) {
  const test::Layout layout = test::LayoutWalker(bytes).walk();
  ASSERT_FALSE(layout.tensor_data.empty());
  size_t data_end = 0;
  for (const auto& d : layout.tensor_data) data_end = std::max(data_end, d.end);
  ASSERT_LE(data_end, bytes.size());

  std::sort(cuts.begin(), cuts.end(), std::greater<>());
  cuts.erase(std::unique(cuts.begin(), cuts.end()), cuts.end());
  test::write_bytes(file, bytes);
  int failures = 0;
  for (const size_t cut : cuts) {
    ASSERT_LT(cut, data_end);
    std::filesystem::resize_file(file, cut);  // cuts only shrink, so the prefix stays intact
    const std::string msg = test::open_error(file);
    ASSERT_FALSE(msg.empty()) << "cut at " << cut;

    // The field File must blame, and any count field whose region no longer fits (File may
    // reject the count before reaching the field, saying it "cannot fit").
    size_t blamed = 0;
    std::set<size_t> count_fields;
    if (cut < layout.header_end) {
      const auto unit = std::find_if(layout.units.begin(), layout.units.end(),
                                     [&](const test::FieldSpan& u) { return u.end > cut; });
      blamed = unit->start;
      for (const auto& c : layout.counts) {
        if (c.start + 8 <= cut && cut < c.end) count_fields.insert(c.start);
      }
    } else {
      size_t tensor = 0;
      while (layout.tensor_data[tensor].end <= cut) ++tensor;
      const auto& data = layout.tensor_data[tensor];
      blamed = data.start <= cut ? data.start : layout.tensor_offset_field[tensor];
    }
    const size_t got = reported_byte(msg);
    const bool right_byte =
        got == blamed || (count_fields.count(got) && msg.find("cannot fit") != std::string::npos);
    const bool ok = right_byte && msg.find(file.string()) != std::string::npos &&
                    msg.find("expected") != std::string::npos;
    if (!ok) {
      ADD_FAILURE() << "cut at " << cut << ": expected at byte " << blamed << " (or a count at "
                    << fmt::format("{}", count_fields) << "), got: " << msg;
      if (++failures >= 10) return;
    }
  }
}

TEST(GgufBadFile, TruncationAtEveryByteOfSyntheticFileIsReportedWhereItBites) {
  TempDir dir;
  const auto good = dir.file("good.gguf");
  test::write_synthetic(good);
  const std::string bytes = test::read_bytes(good);
  const test::Layout layout = test::LayoutWalker(bytes).walk();
  size_t data_end = 0;
  for (const auto& d : layout.tensor_data) data_end = std::max(data_end, d.end);
  std::vector<size_t> cuts(data_end);
  for (size_t cut = 0; cut < data_end; ++cut) cuts[cut] = cut;
  expect_truncations_fail(dir.file("cut.gguf"), bytes, cuts);
}

TEST(GgufBadFile, TruncationOfQuantizedFixtureIsReportedWhereItBites) {
  TempDir dir;
  const std::string bytes =
      test::read_bytes(augur::testing::fixtures_dir() / "tiny-llama-Q4_0.gguf");
  const test::Layout layout = test::LayoutWalker(bytes).walk();
  // Every byte through the tensor infos and the padding, except in the middle of the long arrays
  // (the vocabulary's 512 tokens, scores and types), where every 5th byte is enough: each cut
  // there re-parses ~1500 values, which would take the test past 20 s under ASan, and the
  // synthetic test already cuts every byte of every value kind. Then a stride through the data
  // plus both edges of every tensor.
  const auto in_thinned_middle = [&](size_t cut) {
    for (const auto& items : layout.array_items) {
      const size_t n_items = items.size() - 1;
      if (n_items <= 64) continue;
      if (cut >= items[16] && cut < items[n_items - 16]) return (cut - items[16]) % 5 != 0;
    }
    return false;
  };
  std::vector<size_t> cuts;
  for (size_t cut = 0; cut < layout.data_offset + 64; ++cut) {
    if (!in_thinned_middle(cut)) cuts.push_back(cut);
  }
  size_t data_end = 0;
  for (const auto& d : layout.tensor_data) {
    data_end = std::max(data_end, d.end);
    for (size_t cut : {d.start - 1, d.start, d.start + 1, d.end - 1}) cuts.push_back(cut);
  }
  for (size_t cut = layout.data_offset; cut < data_end; cut += 4093) cuts.push_back(cut);
  ASSERT_EQ(layout.array_items.size(), 3u) << "fixture changed: revisit the thinning";
  expect_truncations_fail(dir.file("cut.gguf"), bytes, cuts);
  RecordProperty("cuts", static_cast<int>(cuts.size()));
}

// --- Hand-made files. ---

struct RawTensor {
  std::string name;
  std::vector<uint64_t> ne;
  uint32_t type = kF32;
  uint64_t offset = 0;
};
struct TensorFields {
  size_t name = 0, n_dims = 0, type = 0, offset = 0;
  std::vector<size_t> ne;
};
struct Crafted {
  Bytes b;
  std::vector<TensorFields> fields;
  size_t data_offset = 0;
};

// general.architecture = "x", then `tensors`, zero padding to 32 and `data_bytes` of data.
Crafted craft(const std::vector<RawTensor>& tensors, size_t data_bytes) {
  Crafted c;
  c.b.header(tensors.size(), 1);
  c.b.key("general.architecture", VT::STRING);
  c.b.str("x");
  for (const auto& t : tensors) {
    TensorFields f;
    f.name = c.b.tensor(t.name, t.ne, t.type, t.offset);
    f.n_dims = f.name + 8 + t.name.size();
    for (size_t d = 0; d < t.ne.size(); ++d) f.ne.push_back(f.n_dims + 4 + 8 * d);
    f.type = f.n_dims + 4 + 8 * t.ne.size();
    f.offset = f.type + 4;
    c.fields.push_back(f);
  }
  c.b.pad_to(32);
  c.data_offset = c.b.size();
  c.b.fill(data_bytes);
  return c;
}

class BadFile : public ::testing::Test {
 protected:
  // Writes `bytes` to a fresh file and expects FormatError at byte `at` mentioning `mentions`.
  void expect_error(const Bytes& bytes, size_t at, const std::vector<std::string>& mentions = {}) {
    const auto path = dir_.file(fmt::format("case{}.gguf", n_cases_++));
    test::write_bytes(path, bytes.data);
    expect_format_error(path, at, mentions);
  }
  TempDir dir_;
  int n_cases_ = 0;
};

TEST_F(BadFile, CraftedBaseFileIsValid) {
  // The fixtures below all break this file in one place; it must open cleanly as it is.
  const auto path = dir_.file("base.gguf");
  test::write_bytes(path, craft({{"a", {4, 2}}, {"b", {8}, kF32, 32}}, 64).b.data);
  auto f = File::open(path);
  EXPECT_EQ(f->tensors().size(), 2u);
}

TEST_F(BadFile, RejectsWrongMagic) {
  Crafted c = craft({{"a", {8}}}, 32);
  c.b.data[3] = 'X';
  expect_error(c.b, 0, {"'GGUF'"});
  Bytes tiny;
  tiny.data = "GG";
  expect_error(tiny, 0, {"magic"});
  expect_error(Bytes{}, 0, {"empty"});
}

TEST_F(BadFile, RejectsVersions1And4) {
  for (uint32_t version : {0u, 1u, 4u, 0x03000000u}) {
    Crafted c = craft({{"a", {8}}}, 32);
    c.b.patch<uint32_t>(4, version);
    expect_error(c.b, 4, {fmt::format("version {}", version), "2 or 3"});
  }
  Crafted c = craft({{"a", {8}}}, 32);
  c.b.patch<uint32_t>(4, 0x03000000u);
  expect_error(c.b, 4, {"big-endian"});
}

TEST_F(BadFile, RejectsAbsurdMetadataAndTensorCounts) {
  for (uint64_t count :
       {kMaxU64, kMaxU64 - 7, uint64_t{1} << 63, uint64_t{1} << 32, uint64_t{1000}}) {
    Crafted kv = craft({{"a", {8}}}, 32);
    kv.b.patch<uint64_t>(16, count);
    expect_error(kv.b, 16, {fmt::format("metadata count {}", count)});
    Crafted tensors = craft({{"a", {8}}}, 32);
    tensors.b.patch<uint64_t>(8, count);
    expect_error(tensors.b, 8, {fmt::format("tensor count {}", count)});
  }
}

TEST_F(BadFile, RejectsAbsurdArrayLengths) {
  for (uint64_t count : {kMaxU64, uint64_t{1} << 63, (uint64_t{1} << 61) + 1, uint64_t{100000}}) {
    for (VT elem : {VT::UINT8, VT::STRING, VT::ARRAY, VT::FLOAT64}) {
      Bytes b;
      b.header(0, 1);
      b.key("arr", VT::ARRAY);
      b.u32(static_cast<uint32_t>(elem));
      const size_t count_at = b.u64(count);
      b.fill(64, '\0');
      expect_error(b, count_at, {"arr", "cannot fit"});
    }
    // The same inside a nested array.
    Bytes b;
    b.header(0, 1);
    b.key("nested", VT::ARRAY);
    b.u32(static_cast<uint32_t>(VT::ARRAY));
    b.u64(1);
    b.u32(static_cast<uint32_t>(VT::INT32));
    const size_t count_at = b.u64(count);
    b.fill(64, '\0');
    expect_error(b, count_at, {"nested", "cannot fit"});
  }
}

TEST_F(BadFile, RejectsAbsurdStringLengths) {
  for (uint64_t len : {kMaxU64, uint64_t{1} << 63, kMaxU64 - 100, uint64_t{1000}}) {
    {  // key
      Crafted c = craft({{"a", {8}}}, 32);
      c.b.patch<uint64_t>(24, len);
      expect_error(c.b, 24, {"metadata key", fmt::format("string length {}", len)});
    }
    {  // string value
      Crafted c = craft({{"a", {8}}}, 32);
      const size_t value_at = 24 + 8 + 20 + 4;
      c.b.patch<uint64_t>(value_at, len);
      expect_error(c.b, value_at, {"general.architecture", fmt::format("string length {}", len)});
    }
    {  // string inside an array
      Bytes b;
      b.header(0, 1);
      b.key("tokens", VT::ARRAY);
      b.u32(static_cast<uint32_t>(VT::STRING));
      b.u64(2);
      b.str("ok");
      const size_t at = b.u64(len);
      b.fill(16);
      expect_error(b, at, {"tokens", fmt::format("string length {}", len)});
    }
    {  // tensor name
      Crafted c = craft({{"a", {8}}}, 32);
      c.b.patch<uint64_t>(c.fields[0].name, len);
      expect_error(c.b, c.fields[0].name, {"tensor name", fmt::format("string length {}", len)});
    }
  }
}

// A file only the size of a real model can pass the "count fits in the file" checks with an
// absurd count; the reader must still not reserve memory for it. The file is sparse (zeros).
TEST_F(BadFile, LargeFileWithAbsurdCountsDoesNotReserveMemoryForThem) {
  constexpr uint64_t kSize = uint64_t{64} << 30;
  {  // 2^31-1 tensor infos of 32 bytes "fit"; the first (empty name, 0 dims) is rejected.
    Bytes b;
    b.header((uint64_t{1} << 31) - 1, 0);
    const auto path = dir_.file("tensors.gguf");
    test::write_bytes(path, b.data);
    std::filesystem::resize_file(path, kSize);
    expect_format_error(path, 32, {"0 dimensions"});
  }
  {  // 2^32 key-value pairs "fit"; the second empty key is a duplicate.
    Bytes b;
    b.header(0, uint64_t{1} << 32);
    const auto path = dir_.file("kv.gguf");
    test::write_bytes(path, b.data);
    std::filesystem::resize_file(path, kSize);
    expect_format_error(path, 24 + 13, {"duplicate metadata key"});
  }
  {  // a 2^35-element uint8 array "fits" but passes the total element cap.
    Bytes b;
    b.header(0, 1);
    b.key("blob", VT::ARRAY);
    b.u32(static_cast<uint32_t>(VT::UINT8));
    const size_t count_at = b.u64(uint64_t{1} << 35);
    const auto path = dir_.file("array.gguf");
    test::write_bytes(path, b.data);
    std::filesystem::resize_file(path, kSize);
    expect_format_error(path, count_at, {"blob", "array elements"});
  }
}

TEST_F(BadFile, RejectsArraysPastTheTotalElementCap) {
  // One array of 2^24 + 1 bytes fits its (sparse) file but passes the cap on array elements,
  // which bounds memory at ~48 bytes per element. (The cap counts all arrays together; reaching
  // it through several arrays would need 2^24 parsed elements, too slow for a unit test.)
  Bytes b;
  b.header(0, 1);
  b.key("blob", VT::ARRAY);
  b.u32(static_cast<uint32_t>(VT::UINT8));
  const size_t count_at = b.u64((uint64_t{1} << 24) + 1);
  const auto path = dir_.file("cap.gguf");
  test::write_bytes(path, b.data);
  std::filesystem::resize_file(path, b.size() + (size_t{1} << 24) + 1);
  expect_format_error(path, count_at, {"blob", "array elements"});
}

TEST_F(BadFile, RejectsAbsurdDimensions) {
  for (uint64_t ne : {uint64_t{0}, (uint64_t{1} << 40) + 1, uint64_t{1} << 63, kMaxU64}) {
    Crafted c = craft({{"w", {8, ne}}}, 64);
    expect_error(c.b, c.fields[0].ne[1], {"tensor 'w'", fmt::format("dimension 1 = {}", ne)});
  }
  {  // the product overflows 64 bits
    Crafted c = craft({{"w", {uint64_t{1} << 32, uint64_t{1} << 32}}}, 64);
    expect_error(c.b, c.fields[0].ne[1], {"tensor 'w'", "element count"});
  }
  {  // the product passes 2^50 on the third dimension
    Crafted c = craft({{"w", {1 << 20, 1 << 20, 1 << 20}}}, 64);
    expect_error(c.b, c.fields[0].ne[2], {"tensor 'w'", "element count"});
  }
  {  // 2^50 elements are allowed by shape but cannot be in the file
    Crafted c = craft({{"w", {uint64_t{1} << 25, uint64_t{1} << 25}}}, 64);
    expect_error(c.b, c.data_offset, {"tensor 'w'", "past the end"});
  }
}

TEST_F(BadFile, RejectsDimensionCounts0And5) {
  Crafted none = craft({{"w", {}}}, 64);
  expect_error(none.b, none.fields[0].n_dims, {"tensor 'w'", "0 dimensions", "1..4"});
  Crafted five = craft({{"w", {1, 1, 1, 1, 1}}}, 64);
  expect_error(five.b, five.fields[0].n_dims, {"tensor 'w'", "5 dimensions", "1..4"});
}

TEST_F(BadFile, RejectsUnknownValueTypes) {
  for (uint32_t type : {13u, 100u, 0xFFFFFFFFu}) {
    {
      Crafted c = craft({{"a", {8}}}, 32);
      const size_t type_at = 24 + 8 + 20;
      c.b.patch<uint32_t>(type_at, type);
      expect_error(c.b, type_at, {fmt::format("unknown value type {}", type), "0..12"});
    }
    {  // array element type, top level and nested
      Bytes b;
      b.header(0, 1);
      b.key("flat", VT::ARRAY);
      const size_t flat_at = b.u32(type);
      b.u64(0);
      expect_error(b, flat_at, {"flat", fmt::format("element type {}", type)});
      Bytes n;
      n.header(0, 1);
      n.key("nested", VT::ARRAY);
      n.u32(static_cast<uint32_t>(VT::ARRAY));
      n.u64(2);
      n.u32(static_cast<uint32_t>(VT::UINT8));
      n.u64(0);
      const size_t nested_at = n.u32(type);
      n.u64(0);
      expect_error(n, nested_at, {"nested", fmt::format("element type {}", type)});
    }
  }
}

TEST_F(BadFile, RejectsUnknownTensorTypeIds) {
  for (uint32_t type : {4u, 5u, 31u, 36u, 40u, 1000u, 0xFFFFFFFFu}) {
    Crafted c = craft({{"w", {32}, type}}, 64);
    expect_error(c.b, c.fields[0].type,
                 {"tensor 'w'", fmt::format("unknown tensor type id {}", type)});
  }
}

TEST_F(BadFile, RejectsRowsThatAreNotWholeBlocks) {
  Crafted c = craft({{"w", {48, 2}, kQ4_0}}, 64);
  expect_error(c.b, c.fields[0].type, {"tensor 'w'", "row length 48", "Q4_0"});
}

TEST_F(BadFile, RejectsMisalignedTensorOffsets) {
  for (uint64_t offset : {uint64_t{4}, uint64_t{31}, uint64_t{33}, kMaxU64}) {
    Crafted c = craft({{"a", {8}}, {"b", {8}, kF32, offset}}, 128);
    expect_error(c.b, c.fields[1].offset,
                 {"tensor 'b'", fmt::format("data offset {}", offset), "alignment 32"});
  }
}

TEST_F(BadFile, RejectsTensorOffsetsBeyondTheFile) {
  for (uint64_t offset : {uint64_t{64}, uint64_t{4096}, uint64_t{1} << 63, kMaxU64 - 31}) {
    Crafted c = craft({{"a", {8}}, {"b", {8}, kF32, offset}}, 32);
    expect_error(c.b, c.fields[1].offset, {"tensor 'b'", "beyond the end"});
  }
}

TEST_F(BadFile, RejectsTensorDataOverlappingTheEndOfTheFile) {
  // 'b' starts inside the file (data byte 32) but needs 64 bytes where 40 remain.
  Crafted c = craft({{"a", {8}}, {"b", {16}, kF32, 32}}, 72);
  expect_error(c.b, c.data_offset + 32, {"tensor 'b'", "past the end"});
}

TEST_F(BadFile, RejectsTensorsWhoseDataOverlap) {
  Crafted same = craft({{"a", {8}}, {"b", {8}, kF32, 0}}, 64);
  expect_error(same.b, same.fields[1].offset, {"tensor 'b'", "overlaps tensor 'a'"});
  // 'a' (64 bytes at 0) reaches into 'b' at 32; reported on 'b' whichever comes first in the file.
  Crafted into = craft({{"b", {8}, kF32, 32}, {"a", {16}, kF32, 0}}, 96);
  expect_error(into.b, into.fields[0].offset, {"tensor 'b'", "overlaps tensor 'a'"});
}

TEST_F(BadFile, RejectsBadAlignmentValues) {
  const auto with_alignment = [](VT type, auto write_value, size_t* type_at, size_t* value_at) {
    Bytes b;
    b.header(1, 1);
    b.str("general.alignment");
    *type_at = b.u32(static_cast<uint32_t>(type));
    *value_at = b.size();
    write_value(b);
    b.tensor("a", {8}, kF32, 0);
    b.pad_to(64);
    b.fill(64);
    return b;
  };
  size_t type_at = 0, value_at = 0;
  for (uint32_t bad : {0u, 3u, 48u, 1u << 21}) {
    Bytes b = with_alignment(
        VT::UINT32, [&](Bytes& x) { x.u32(bad); }, &type_at, &value_at);
    expect_error(b, value_at, {fmt::format("general.alignment {}", bad), "power of two"});
  }
  Bytes huge = with_alignment(
      VT::UINT64, [](Bytes& x) { x.u64(kMaxU64); }, &type_at, &value_at);
  expect_error(huge, value_at, {"general.alignment", "power of two"});
  Bytes negative = with_alignment(
      VT::INT32, [](Bytes& x) { x.put<int32_t>(-32); }, &type_at, &value_at);
  expect_error(negative, value_at, {"general.alignment -32", "power of two"});
  Bytes real = with_alignment(
      VT::FLOAT32, [](Bytes& x) { x.f32(32.0f); }, &type_at, &value_at);
  expect_error(real, type_at, {"general.alignment has type float32", "integer"});
  Bytes text = with_alignment(
      VT::STRING, [](Bytes& x) { x.str("32"); }, &type_at, &value_at);
  expect_error(text, type_at, {"general.alignment has type string", "integer"});
}

TEST_F(BadFile, HonoursAValidAlignmentWhenCheckingOffsets) {
  Bytes b;
  b.header(2, 1);
  b.key("general.alignment", VT::UINT32);
  b.u32(64);
  b.tensor("a", {8}, kF32, 0);
  const size_t offset_at = b.size() + 8 + 1 + 4 + 8 + 4;
  b.tensor("b", {8}, kF32, 32);  // aligned to 32 but not to 64
  b.pad_to(64);
  b.fill(128);
  expect_error(b, offset_at, {"tensor 'b'", "alignment 64"});
}

TEST_F(BadFile, RejectsDuplicateKeysAndTensorNames) {
  Bytes keys;
  keys.header(0, 3);
  keys.key("k.one", VT::UINT8);
  keys.u8(1);
  keys.key("k.two", VT::UINT8);
  keys.u8(2);
  const size_t dup_at = keys.key("k.one", VT::UINT8);
  keys.u8(3);
  expect_error(keys, dup_at, {"duplicate metadata key 'k.one'"});

  Crafted names = craft({{"w", {8}}, {"v", {8}, kF32, 32}, {"w", {8}, kF32, 64}}, 96);
  expect_error(names.b, names.fields[2].name, {"duplicate tensor 'w'"});
}

TEST_F(BadFile, RejectsBoolBytesOtherThan0And1) {
  for (uint8_t bad : {uint8_t{2}, uint8_t{0xFF}}) {
    Bytes scalar;
    scalar.header(0, 1);
    scalar.key("flag", VT::BOOL);
    const size_t at = scalar.u8(bad);
    expect_error(scalar, at, {"flag", fmt::format("bool value {}", bad), "0 or 1"});

    Bytes array;
    array.header(0, 1);
    array.key("flags", VT::ARRAY);
    array.u32(static_cast<uint32_t>(VT::BOOL));
    array.u64(3);
    array.u8(1);
    const size_t item_at = array.u8(bad);
    array.u8(0);
    expect_error(array, item_at, {"flags", fmt::format("bool value {}", bad)});
  }
}

TEST_F(BadFile, RejectsArraysNestedTooDeep) {
  // Nine levels: the ninth array header is at fault. Then a "bomb" claiming 100000 levels,
  // which must stop at the same depth without recursing further.
  for (int levels : {9, 100000}) {
    Bytes b;
    b.header(0, 1);
    b.key("deep", VT::ARRAY);
    size_t ninth_at = 0;
    for (int level = 0; level < levels; ++level) {
      if (level == 8) ninth_at = b.size();
      b.u32(static_cast<uint32_t>(level + 1 < levels ? VT::ARRAY : VT::UINT8));
      b.u64(1);
    }
    b.u8(0);
    expect_error(b, ninth_at, {"deep", "nested deeper", "8"});
  }
}

TEST_F(BadFile, RejectsDirectories) {
  const auto sub = dir_.file("a-directory.gguf");
  std::filesystem::create_directory(sub);
  const std::string msg = test::open_error(sub);
  EXPECT_NE(msg.find(sub.string()), std::string::npos) << msg;
  EXPECT_NE(msg.find("not a regular file"), std::string::npos) << msg;
}

}  // namespace
}  // namespace augur::gguf
