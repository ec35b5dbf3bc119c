// This machine's peak int8 multiply-accumulate throughput where the CPU has AVX-512 VNNI:
// independent chains of 512-bit vpdpbusd (64 unsigned x signed byte products added into 16 int32
// lanes each) on every thread of the pool. It is the ceiling for the integer kernels' products
// (Q8_0/Q4_0 weights), which bench roofline compares prefill with; AMX tiles are not counted, so a
// kernel on the amx path can exceed it. This file owns only the loop and its timing.
#pragma once

#include <cstdint>
#include <vector>

#include "kernels/isa.h"
#include "kernels/thread_pool.h"

namespace augur::kernels {

// One int8 multiply-accumulate counts as two operations, as one FMA counts as two flops.
inline constexpr double kOpsPerMac = 2;

// Whether `isa` has the VNNI loop (avx512, amx).
bool has_int8_peak(Isa isa);

// Runs at least `n_macs` int8 MACs as 12 chains of vpdpbusd on 512-bit registers, in whole loop
// trips; stores a sum of the accumulators in *sink so the work cannot be dropped. Returns the MACs
// run. Throws Unsupported unless has_int8_peak(current_isa()).
int64_t int8_mac_chains(int64_t n_macs, int32_t* sink);

// GOP/s (1e9 operations per second, kOpsPerMac per MAC) of int8_mac_chains on every thread of
// `pool` at once, `macs_per_thread` each per sample, after one untimed run; one figure per sample.
[[nodiscard]] std::vector<double> measure_peak_int8_gop_s(ThreadPool& pool, int repeats,
                                                          int64_t macs_per_thread);

namespace detail {
// The AVX-512 VNNI loop (peak_int8_avx512.cpp); same contract as int8_mac_chains.
int64_t int8_mac_chains_avx512(int64_t n_macs, int32_t* sink);
}  // namespace detail

}  // namespace augur::kernels
