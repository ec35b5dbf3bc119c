// This machine's peak single-precision FMA throughput: independent FMA chains on every thread of
// the pool, on the kernel path current_isa() picks (AVX2: 12 ymm chains of fused multiply-adds;
// scalar: 12 SSE chains of a multiply then an add, which baseline x86-64 cannot fuse). Enough
// chains are in flight to cover the FMA latency times the FMA ports, so the loop is bound by
// throughput, not by any one chain. The benchmark that compares prefill with it is
// src/bench/roofline.h; this file owns only the loop and its timing.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "kernels/thread_pool.h"

namespace augur::kernels {

// One fused multiply-add on one vector lane counts as a multiply and an add.
inline constexpr double kFlopsPerFma = 2;

// Runs at least `n_fmas` lane-FMAs on the current ISA path, in whole loop trips of every chain;
// each chain lane iterates acc = acc * 0.5 + 1 from 0 (so it stays finite and reaches exactly 2).
// Returns the lane-FMAs run and stores the sum of all accumulator lanes in *sink, so the work is
// observable and cannot be dropped.
int64_t fma_chains(int64_t n_fmas, float* sink);

// GFLOP/s (1e9 flops per second, kFlopsPerFma per lane-FMA) of fma_chains running on every
// thread of `pool` at once, `fmas_per_thread` each per sample. One untimed run comes first (wakes
// the workers, lets clocks settle). Returns one figure per sample; wall-clock time per sample, so a
// thread that is descheduled lowers the figure for all.
[[nodiscard]] std::vector<double> measure_peak_gflop_s(ThreadPool& pool, int repeats,
                                                       int64_t fmas_per_thread);

// The timing both peak probes share: `run(n)` runs at least n units of work on the calling thread
// and returns how many it ran; it runs on every thread of `pool` at once, `per_thread` each, once
// untimed and then `repeats` times, each sample giving ops_per_unit x units / wall seconds / 1e9.
[[nodiscard]] std::vector<double> measure_parallel_rate(ThreadPool& pool, int repeats,
                                                        int64_t per_thread, double ops_per_unit,
                                                        const std::function<int64_t(int64_t)>& run);

namespace detail {
// The AVX2 + FMA loop (peak_flops_avx2.cpp); same contract as fma_chains.
int64_t fma_chains_avx2(int64_t n_fmas, float* sink);
}  // namespace detail

}  // namespace augur::kernels
