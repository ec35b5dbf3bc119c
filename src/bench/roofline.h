// `augur bench roofline`: how close decoding comes to the memory-bandwidth limit of this machine.
// A decode step reads every weight once (token_embd one row, unless it is tied as the output
// matrix) plus the K and V rows of its context; so tok/s can be at most bandwidth / bytes-per-step
// (the roofline). This file owns that arithmetic, the read-bandwidth measurement (a multi-threaded
// float sum over a buffer) and the report of kind "roofline" (docs/bench-report.md); the CLI only
// parses options and prints.
//
// Regimes: "dram" streams a buffer far larger than the L3 (default 512 MiB); "in_cache" streams a
// buffer of exactly bytes_per_step, measured only when that fits the L3. The roofline uses
// "in_cache" when it was measured (the step's bytes can stay cached between tokens) and "dram"
// otherwise; both rooflines are reported per point.
//
// Prefill (compute-bound, unlike decode): per thread count, a forward of `prefill_tokens` filler
// tokens on an empty cache, as tok/s and as GFLOP/s against this machine's peak FMA throughput
// (kernels/peak_flops.h) measured on the same threads.
#pragma once

#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <span>
#include <string>
#include <vector>

#include "gguf/file.h"
#include "kernels/thread_pool.h"
#include "model/hparams.h"

namespace augur::bench {

// Bytes one decode step reads at a context of N tokens.
struct StepBytes {
  int64_t weight_bytes = 0;  // every tensor once; token_embd one row unless tied as output
  int64_t kv_bytes = 0;      // 2 x n_layer x n_head_kv x head_dim x 4 (F32 cache) x N
  int64_t total() const { return weight_bytes + kv_bytes; }
};

// Every tensor of the file once (n_bytes), except token_embd.weight: one row when the file has an
// output.weight, all of it when it has none (then it is the output matrix as well).
[[nodiscard]] int64_t decode_weight_bytes(const gguf::File& file);
// K and V rows of `ctx` positions in every layer, as the F32 KV cache stores them.
[[nodiscard]] int64_t kv_read_bytes(const model::HParams& hp, int64_t ctx);
[[nodiscard]] StepBytes decode_step_bytes(const gguf::File& file, const model::HParams& hp,
                                          int64_t ctx);

// bandwidth (GB/s, 1e9 bytes per second) / bytes per step.
[[nodiscard]] double roofline_tok_s(double gb_s, int64_t bytes_per_step);
// achieved / roofline; 0 when the roofline is 0.
[[nodiscard]] double roofline_fraction(double decode_tok_s, double roofline_tok_s);

// Flops of prefilling `n_tokens` on an empty cache with logits for the last `n_logit_rows` rows:
// 2 x (rows x cols) per token for every 2-D weight matrix of a forward (token_embd only when it is
// also the output matrix; the output matrix only for logit rows), plus attention's QK^T and PV,
// 2 x 2 x n_layer x n_head x head_dim per (query, key) pair, with n(n+1)/2 causal pairs.
[[nodiscard]] int64_t prefill_flops(const gguf::File& file, const model::HParams& hp,
                                    int64_t n_tokens, int64_t n_logit_rows = 1);

// The sum of `values` with independent vector accumulators (the stream-read kernel).
[[nodiscard]] float stream_sum(std::span<const float> values);

// GB/s of reading `buffer` once per pass, split into pool.size() contiguous chunks, one per
// thread. Each of `repeats` samples times enough whole passes to read at least
// `min_bytes_per_sample`; one untimed pass comes first. Returns one GB/s figure per sample.
[[nodiscard]] std::vector<double> measure_read_bandwidth(kernels::ThreadPool& pool,
                                                         std::span<const float> buffer, int repeats,
                                                         int64_t min_bytes_per_sample);

// This machine's L3 size in bytes from sysfs (cpu0, index3); 0 when unknown.
[[nodiscard]] int64_t l3_cache_bytes();

struct RooflineConfig {
  std::string model_path;
  std::vector<int> threads;     // empty: 1 .. hardware threads
  int64_t ctx = 256;            // mean context the timed decode steps attend to
  int n_gen = 64;               // generated tokens per decode sample
  int repeats = 5;              // measured decode runs per thread count
  int warmup = 1;               // unmeasured decode runs per thread count
  int64_t bandwidth_mib = 512;  // "dram" buffer; should be several times the L3
  int bandwidth_repeats = 7;    // samples per (threads, regime)
  int64_t l3_bytes = -1;        // < 0: detect (l3_cache_bytes); 0: no in_cache regime
  int64_t prefill_tokens =
      512;               // timed prefill per thread count (repeats/warmup as decode); 0: off
  int peak_repeats = 7;  // peak FMA samples per thread count (only with prefill)
  int64_t peak_fmas_per_thread = int64_t{1} << 31;  // lane-FMAs per thread per peak sample
  uint64_t seed = 1;
};

using RooflineProgress = std::function<void(size_t done, size_t total, const std::string& what)>;

// Measures bandwidth, peak FMA throughput, prefill and greedy decode speed at each thread count
// and returns the report.
// InvalidArgument for a bad configuration (names the option, the value and what is allowed).
nlohmann::json run_roofline(const RooflineConfig& config, const RooflineProgress& progress = {});

}  // namespace augur::bench
