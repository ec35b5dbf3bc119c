#include "kernels/packed_weights.h"

#include <sys/mman.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <new>
#include <thread>
#include <vector>

#include "common/error.h"
#include "kernels/isa.h"
#include "tensor/blocks.h"

namespace augur::kernels {

size_t packed_code_bytes(gguf::TensorType type) {
  switch (type) {
    case gguf::TensorType::Q8_0: return 32 * kPackedRows;
    case gguf::TensorType::Q4_0: return 16 * kPackedRows;
    default: return 0;
  }
}

size_t packed_bytes(gguf::TensorType type, int64_t rows, int64_t cols) {
  const int64_t groups = (rows + kPackedRows - 1) / kPackedRows;
  return static_cast<size_t>(groups * (cols / 32)) * (packed_code_bytes(type) + 2 * kPackedRows);
}

namespace {

// Groups [group_begin, group_end) of pack_rows.
void pack_groups(const tensor::Matrix& w, uint8_t* out, int64_t group_begin, int64_t group_end) {
  const size_t code_bytes = packed_code_bytes(w.type);
  const bool q8_0 = w.type == gguf::TensorType::Q8_0;
  const size_t block_bytes = gguf::traits(w.type).block_bytes;
  const int64_t blocks = w.cols / 32, groups = (w.rows + kPackedRows - 1) / kPackedRows;
  uint8_t* codes = out;
  uint8_t* scales = out + groups * blocks * code_bytes;
  for (int64_t g = group_begin; g < group_end; ++g) {
    for (int64_t s = 0; s < blocks; ++s) {
      uint8_t* c = codes + (g * blocks + s) * code_bytes;
      uint8_t* d = scales + (g * blocks + s) * 2 * kPackedRows;
      for (int i = 0; i < kPackedRows; ++i) {
        const int64_t r = g * kPackedRows + i;
        // Padding rows: scale 0 and codes 0 (Q8_0: stored as 128; Q4_0: nibbles 8).
        uint8_t block[sizeof(tensor::BlockQ8_0)] = {};
        if (r < w.rows) {
          std::memcpy(block, w.row(r) + block_bytes * s, block_bytes);
        } else if (!q8_0) {
          std::memset(block + 2, 0x88, 16);
        }
        std::memcpy(d + 2 * i, block, 2);
        for (size_t j = 0; j < code_bytes / 64; ++j) {
          uint32_t word;
          std::memcpy(&word, block + 2 + 4 * j, 4);
          if (q8_0) word ^= 0x80808080u;
          std::memcpy(c + 64 * j + 4 * i, &word, 4);
        }
      }
    }
  }
}

}  // namespace

void pack_rows(const tensor::Matrix& w, uint8_t* out, int threads) {
  AUGUR_CHECK(packed_code_bytes(w.type) > 0, "pack_rows takes Q8_0 or Q4_0 weights");
  const int64_t groups = (w.rows + kPackedRows - 1) / kPackedRows;
  if (threads <= 0) {
    // Large matrices by every core: most of the time goes to the kernel zeroing each fresh page
    // on first touch, which runs on the touching thread.
    constexpr size_t kAlone = size_t{8} << 20;
    threads = packed_bytes(w.type, w.rows, w.cols) < kAlone
                  ? 1
                  : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  }
  const auto n = static_cast<int64_t>(std::min<int64_t>(threads, groups));
  std::vector<std::thread> team;
  for (int64_t t = 1; t < n; ++t) {
    team.emplace_back(pack_groups, std::cref(w), out, groups * t / n, groups * (t + 1) / n);
  }
  pack_groups(w, out, 0, n > 1 ? groups / n : groups);
  for (auto& thread : team) thread.join();
}

bool has_scale_groups(gguf::TensorType type) {
  return type == gguf::TensorType::Q8_0 || type == gguf::TensorType::Q4_0 ||
         type == gguf::TensorType::Q5_0;
}

void pack_scale_groups(const tensor::Matrix& w, uint8_t* out) {
  AUGUR_CHECK(has_scale_groups(w.type), "pack_scale_groups takes Q8_0, Q4_0 or Q5_0 weights");
  const size_t block_bytes = gguf::traits(w.type).block_bytes, payload = block_bytes - 2;
  const int64_t groups = w.cols / 32 / 8;
  for (int64_t r = 0; r < w.rows; ++r) {
    const uint8_t* src = w.row(r);
    uint8_t* dst = out + r * w.row_bytes;
    for (int64_t g = 0; g < groups; ++g, src += 8 * block_bytes, dst += 8 * block_bytes) {
      for (int k = 0; k < 8; ++k) {
        std::memcpy(dst + 2 * k, src + block_bytes * k, 2);
        std::memcpy(dst + 16 + payload * k, src + block_bytes * k + 2, payload);
      }
    }
    std::memcpy(dst, src, w.row(r) + w.row_bytes - src);
  }
}

namespace {

// A buffer of `bytes` for a packed copy, in 2 MB pages where the kernel allows: a large model's
// copy would otherwise cost a page fault per 4 KB while packing (half the load time of zoo-wide)
// and a TLB miss every 4 KB of the stream.
std::shared_ptr<uint8_t> packed_buffer(size_t bytes) {
  constexpr size_t kHugePage = size_t{2} << 20;
  const size_t align = bytes >= kHugePage ? kHugePage : 64;
  const size_t capacity = (bytes + align - 1) / align * align;
  auto* buffer = static_cast<uint8_t*>(std::aligned_alloc(align, capacity));
  if (buffer == nullptr) throw std::bad_alloc();
  if (align == kHugePage) ::madvise(buffer, capacity, MADV_HUGEPAGE);
  return std::shared_ptr<uint8_t>(buffer, [](uint8_t* p) { std::free(p); });
}

}  // namespace

tensor::Matrix with_packed_weights(tensor::Matrix w) {
  if (w.rows == 0 || w.cols == 0) return w;
  const Isa isa = current_isa();
  if (isa == Isa::kAvx512 && packed_code_bytes(w.type) > 0) {
    auto buffer = packed_buffer(packed_bytes(w.type, w.rows, w.cols));
    pack_rows(w, buffer.get());
    w.packed = std::move(buffer);
    w.packed_layout = tensor::Matrix::Layout::kLanes16;
  } else if (isa == Isa::kAvx2 && has_scale_groups(w.type)) {
    auto buffer = packed_buffer(static_cast<size_t>(w.rows) * w.row_bytes);
    pack_scale_groups(w, buffer.get());
    w.packed = std::move(buffer);
    w.packed_layout = tensor::Matrix::Layout::kScaleGroups;
  }
  return w;
}

}  // namespace augur::kernels
