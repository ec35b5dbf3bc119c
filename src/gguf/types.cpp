#include "gguf/types.h"

#include <array>

#include "common/error.h"

namespace augur::gguf {
namespace {

struct Entry {
  uint32_t id;
  TypeTraits traits;
};

constexpr std::array kTypes = {
    Entry{0, {"F32", 1, 4}},         Entry{1, {"F16", 1, 2}},
    Entry{2, {"Q4_0", 32, 18}},      Entry{3, {"Q4_1", 32, 20}},
    Entry{6, {"Q5_0", 32, 22}},      Entry{7, {"Q5_1", 32, 24}},
    Entry{8, {"Q8_0", 32, 34}},      Entry{9, {"Q8_1", 32, 36}},
    Entry{10, {"Q2_K", 256, 84}},    Entry{11, {"Q3_K", 256, 110}},
    Entry{12, {"Q4_K", 256, 144}},   Entry{13, {"Q5_K", 256, 176}},
    Entry{14, {"Q6_K", 256, 210}},   Entry{15, {"Q8_K", 256, 292}},
    Entry{16, {"IQ2_XXS", 256, 66}}, Entry{17, {"IQ2_XS", 256, 74}},
    Entry{18, {"IQ3_XXS", 256, 98}}, Entry{19, {"IQ1_S", 256, 50}},
    Entry{20, {"IQ4_NL", 32, 18}},   Entry{21, {"IQ3_S", 256, 110}},
    Entry{22, {"IQ2_S", 256, 82}},   Entry{23, {"IQ4_XS", 256, 136}},
    Entry{24, {"I8", 1, 1}},         Entry{25, {"I16", 1, 2}},
    Entry{26, {"I32", 1, 4}},        Entry{27, {"I64", 1, 8}},
    Entry{28, {"F64", 1, 8}},        Entry{29, {"IQ1_M", 256, 56}},
    Entry{30, {"BF16", 1, 2}},       Entry{34, {"TQ1_0", 256, 54}},
    Entry{35, {"TQ2_0", 256, 66}},   Entry{39, {"MXFP4", 32, 17}},
};

}  // namespace

std::optional<TypeTraits> type_traits(uint32_t type_id) {
  for (const auto& entry : kTypes) {
    if (entry.id == type_id) return entry.traits;
  }
  return std::nullopt;
}

const TypeTraits& traits(TensorType type) {
  for (const auto& entry : kTypes) {
    if (entry.id == static_cast<uint32_t>(type)) return entry.traits;
  }
  AUGUR_CHECK(false, "TensorType values are only created from known ids");
}

std::string_view type_name(TensorType type) {
  return traits(type).name;
}

size_t row_bytes(TensorType type, int64_t n_elems) {
  const auto& t = traits(type);
  AUGUR_CHECK(n_elems % t.block_elems == 0, "row length must be a whole number of blocks");
  return static_cast<size_t>(n_elems / t.block_elems) * t.block_bytes;
}

}  // namespace augur::gguf
