#include "kernels/packed_weights.h"

#include <sys/mman.h>

#include <cstdlib>
#include <cstring>
#include <new>

#include "common/error.h"
#include "kernels/isa.h"
#include "tensor/blocks.h"

namespace augur::kernels {

size_t packed_q8_0_bytes(int64_t rows, int64_t cols) {
  const int64_t groups = (rows + kPackedRows - 1) / kPackedRows;
  return static_cast<size_t>(groups * (cols / 32)) * (32 * kPackedRows + 2 * kPackedRows);
}

void pack_q8_0(const tensor::Matrix& w, uint8_t* out) {
  AUGUR_CHECK(w.type == gguf::TensorType::Q8_0, "pack_q8_0 takes Q8_0 weights");
  const int64_t blocks = w.cols / 32, groups = (w.rows + kPackedRows - 1) / kPackedRows;
  uint8_t* codes = out;
  uint8_t* scales = out + groups * blocks * 32 * kPackedRows;
  for (int64_t g = 0; g < groups; ++g) {
    for (int64_t s = 0; s < blocks; ++s) {
      uint8_t* c = codes + (g * blocks + s) * 32 * kPackedRows;
      uint8_t* d = scales + (g * blocks + s) * 2 * kPackedRows;
      for (int i = 0; i < kPackedRows; ++i) {
        const int64_t r = g * kPackedRows + i;
        // Padding rows: scale 0 and codes 0 (stored as 128).
        tensor::BlockQ8_0 block{};
        if (r < w.rows) std::memcpy(&block, w.row(r) + sizeof block * s, sizeof block);
        std::memcpy(d + 2 * i, &block.d, 2);
        for (int j = 0; j < 8; ++j) {
          uint32_t word;
          std::memcpy(&word, block.qs + 4 * j, 4);
          word ^= 0x80808080u;
          std::memcpy(c + 64 * j + 4 * i, &word, 4);
        }
      }
    }
  }
}

tensor::Matrix with_packed_weights(tensor::Matrix w) {
  if (w.type != gguf::TensorType::Q8_0 || current_isa() != Isa::kAvx512 || w.rows == 0 ||
      w.cols == 0) {
    return w;
  }
  // In 2 MB pages where the kernel allows: a large model's copy would otherwise cost a page fault
  // per 4 KB while packing (half the load time of zoo-wide) and a TLB miss every 4 KB of the
  // stream.
  constexpr size_t kHugePage = size_t{2} << 20;
  const size_t bytes = packed_q8_0_bytes(w.rows, w.cols);
  const size_t align = bytes >= kHugePage ? kHugePage : 64;
  const size_t capacity = (bytes + align - 1) / align * align;
  auto* buffer = static_cast<uint8_t*>(std::aligned_alloc(align, capacity));
  if (buffer == nullptr) throw std::bad_alloc();
  if (align == kHugePage) ::madvise(buffer, capacity, MADV_HUGEPAGE);
  w.packed = std::shared_ptr<const uint8_t>(
      buffer, [](const uint8_t* p) { std::free(const_cast<uint8_t*>(p)); });
  pack_q8_0(w, buffer);
  return w;
}

}  // namespace augur::kernels
