// The server's counters, rendered as Prometheus text for GET /metrics. Updated once per request
// (and once per refused one), so a mutex is cheap enough.
#pragma once

#include <cstdint>
#include <mutex>
#include <string>

#include "engine/generator.h"
#include "model/forward_batcher.h"

namespace augur::server {

class SlotPool;

class Metrics {
 public:
  // A request answered, by outcome: "ok", "bad_request" (4xx), "busy" (503), "cancelled"
  // (client gone or shutdown), "error" (5xx).
  void count_request(const std::string& outcome);
  // A finished generation: its token counts, the prompt tokens the slot's cache already had,
  // and its timing and speculative stats.
  void count_generation(const engine::GenerateStats& stats, int64_t reused_tokens);

  std::string prometheus(const SlotPool& slots, const model::ForwardBatcher* batcher) const;

 private:
  mutable std::mutex mutex_;
  int64_t ok_ = 0, bad_request_ = 0, busy_ = 0, cancelled_ = 0, error_ = 0;
  int64_t prompt_tokens_ = 0, prompt_evaluated_ = 0, prefix_hit_tokens_ = 0;
  int64_t completion_tokens_ = 0;
  double prefill_s_ = 0, decode_s_ = 0;
  int64_t decode_tokens_ = 0;  // tokens after each request's first (decode-only speed)
  int64_t spec_cycles_ = 0, spec_drafted_ = 0, spec_accepted_ = 0;
};

}  // namespace augur::server
