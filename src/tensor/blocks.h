// Byte layouts of the quantized blocks augur decodes, exactly as ggml stores them in GGUF.
// Plain structs only (no inline functions), so ISA-specific kernel files can include this safely.
// How the bits map to values is documented here once; decoding is in tensor/block_decode.h.
#pragma once

#include <cstddef>
#include <cstdint>

namespace augur::tensor {

// 32 weights: value[i] = d * qs[i].
struct BlockQ8_0 {
  uint16_t d;  // fp16 scale
  int8_t qs[32];
};

// 32 weights: element i < 16 is the low nibble of qs[i], element i + 16 its high nibble;
// value = d * (nibble - 8).
struct BlockQ4_0 {
  uint16_t d;  // fp16 scale
  uint8_t qs[16];
};

// 32 weights: 5-bit codes q in 0..31, value = d * (q - 16). Element i < 16 takes its low 4 bits
// from the low nibble of qs[i], element i + 16 from the high nibble of qs[i]; element e's fifth
// bit is bit e of qh read as a little-endian uint32.
struct BlockQ5_0 {
  uint16_t d;  // fp16 scale
  uint8_t qh[4];
  uint8_t qs[16];
};

// 256 weights in 8 sub-blocks of 32. Sub-block j has a 6-bit scale sc[j] and a 6-bit min m[j]
// packed into `scales` (see scale_min_q4_k); value = (d * sc[j]) * nibble - (dmin * m[j]).
// Sub-block j's 32 nibbles are the low (j even) or high (j odd) nibbles of qs[32 * (j / 2) + l].
struct BlockQ4_K {
  uint16_t d;     // fp16 super-block scale of the scales
  uint16_t dmin;  // fp16 super-block scale of the mins
  uint8_t scales[12];
  uint8_t qs[128];
};

// 256 weights in 8 sub-blocks of 32, scales and mins packed as Q4_K's (scale_min_q4_k); value =
// (d * sc[j]) * q - (dmin * m[j]) with q a 5-bit code. In each pair of sub-blocks p (elements
// 64p..64p+63), element 64p + l (l < 32) takes its low 4 bits from the low nibble of qs[32p + l]
// and its fifth bit from bit 2p of qh[l]; element 64p + 32 + l the high nibble and bit 2p + 1.
struct BlockQ5_K {
  uint16_t d;     // fp16 super-block scale of the scales
  uint16_t dmin;  // fp16 super-block scale of the mins
  uint8_t scales[12];
  uint8_t qh[32];
  uint8_t qs[128];
};

// 256 weights in 16 sub-blocks of 16, each with an int8 scale; value = (d * scales[e / 16]) * (q -
// 32) with q a 6-bit code. In each half h (elements 128h..128h+127), element 128h + 32k + l (k < 4,
// l < 32) takes its low 4 bits from ql[64h + l + 32 * (k & 1)] (low nibble for k < 2, high nibble
// for k >= 2) and its high 2 bits from bits 2k..2k+1 of qh[32h + l].
struct BlockQ6_K {
  uint8_t ql[128];
  uint8_t qh[64];
  int8_t scales[16];
  uint16_t d;  // fp16 super-block scale
};

static_assert(sizeof(BlockQ8_0) == 34 && offsetof(BlockQ8_0, qs) == 2);
static_assert(sizeof(BlockQ4_0) == 18 && offsetof(BlockQ4_0, qs) == 2);
static_assert(sizeof(BlockQ4_K) == 144 && offsetof(BlockQ4_K, qs) == 16);
// Activations for K-quant weights (ggml's block_q8_K, never stored in files): 256 codes with a
// float scale, value = d * qs[i]; bsums[k] is the sum of codes 16k..16k+15.
struct BlockQ8_K {
  float d;
  int8_t qs[256];
  int16_t bsums[16];
};

static_assert(sizeof(BlockQ5_0) == 22 && offsetof(BlockQ5_0, qs) == 6);
static_assert(sizeof(BlockQ5_K) == 176 && offsetof(BlockQ5_K, qh) == 16 &&
              offsetof(BlockQ5_K, qs) == 48);
static_assert(sizeof(BlockQ8_K) == 292);
static_assert(sizeof(BlockQ6_K) == 210 && offsetof(BlockQ6_K, d) == 208);

}  // namespace augur::tensor
