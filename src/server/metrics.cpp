#include "server/metrics.h"

#include <fmt/format.h>

#include "server/slot_pool.h"

namespace augur::server {

void Metrics::count_request(const std::string& outcome) {
  std::lock_guard lock(mutex_);
  if (outcome == "ok") {
    ++ok_;
  } else if (outcome == "bad_request") {
    ++bad_request_;
  } else if (outcome == "busy") {
    ++busy_;
  } else if (outcome == "cancelled") {
    ++cancelled_;
  } else {
    ++error_;
  }
}

void Metrics::count_generation(const engine::GenerateStats& stats, int64_t reused_tokens) {
  std::lock_guard lock(mutex_);
  prompt_tokens_ += stats.n_prompt;
  prompt_evaluated_ += stats.n_prompt_evaluated;
  prefix_hit_tokens_ += reused_tokens;
  completion_tokens_ += stats.n_gen;
  prefill_s_ += stats.prefill_s;
  decode_s_ += stats.decode_s;
  decode_tokens_ += std::max<int64_t>(stats.n_gen - 1, 0);
  spec_cycles_ += stats.spec.cycles;
  spec_drafted_ += stats.spec.drafted;
  spec_accepted_ += stats.spec.accepted;
}

std::string Metrics::prometheus(const SlotPool& slots, const model::ForwardBatcher* batcher) const {
  std::lock_guard lock(mutex_);
  std::string out;
  const auto metric = [&](const char* name, const char* type, const char* help, auto value,
                          const char* labels = "") {
    out += fmt::format("# HELP augur_{} {}\n# TYPE augur_{} {}\naugur_{}{} {}\n", name, help, name,
                       type, name, labels, value);
  };
  out +=
      "# HELP augur_requests_total Requests answered, by outcome.\n"
      "# TYPE augur_requests_total counter\n";
  for (const auto& [label, value] : {std::pair{"ok", ok_},
                                     {"bad_request", bad_request_},
                                     {"busy", busy_},
                                     {"cancelled", cancelled_},
                                     {"error", error_}}) {
    out += fmt::format("augur_requests_total{{outcome=\"{}\"}} {}\n", label, value);
  }
  metric("prompt_tokens_total", "counter", "Prompt tokens of finished generations.",
         prompt_tokens_);
  metric("prompt_tokens_evaluated_total", "counter",
         "Prompt tokens run through the model (the rest came from a slot's cache).",
         prompt_evaluated_);
  metric("prefix_cache_hit_tokens_total", "counter",
         "Prompt tokens whose K/V rows a slot's cache already held.", prefix_hit_tokens_);
  metric("completion_tokens_total", "counter", "Generated tokens.", completion_tokens_);
  metric("prefill_seconds_total", "counter", "Seconds spent evaluating prompts.", prefill_s_);
  metric("decode_seconds_total", "counter", "Seconds spent generating after the first token.",
         decode_s_);
  metric("decode_tokens_per_second", "gauge",
         "Generated tokens after each request's first, per decode second, over all requests.",
         decode_s_ > 0 ? static_cast<double>(decode_tokens_) / decode_s_ : 0.0);
  metric("spec_cycles_total", "counter", "Speculative verify forwards.", spec_cycles_);
  metric("spec_drafted_total", "counter", "Draft tokens proposed.", spec_drafted_);
  metric("spec_accepted_total", "counter", "Draft tokens kept.", spec_accepted_);
  metric(
      "spec_tau", "gauge", "Committed tokens per verify forward, over all requests.",
      spec_cycles_ > 0 ? static_cast<double>(spec_accepted_ + spec_cycles_) / spec_cycles_ : 0.0);
  metric("slots", "gauge", "Sessions (--parallel).", slots.size());
  metric("slots_busy", "gauge", "Sessions running a request.", slots.busy());
  metric("queue_depth", "gauge", "Requests waiting for a session.", slots.queued());
  metric("kv_bytes_in_use", "gauge", "Bytes of K/V rows the sessions' caches hold.",
         slots.kv_bytes_in_use());
  metric("kv_bytes_capacity", "gauge", "Bytes the sessions' caches have room for.",
         slots.kv_bytes_capacity());
  const auto prefix = slots.prefix_cache_stats();
  metric("prefix_cache_bytes", "gauge", "Bytes of K/V rows kept for reuse beyond the sessions.",
         prefix.bytes);
  metric("prefix_cache_entries", "gauge", "Prefixes kept for reuse beyond the sessions.",
         prefix.entries);
  metric("prefix_cache_restores_total", "counter",
         "Requests whose prefix was restored from the prefix cache into a session.", prefix.hits);
  if (batcher) {
    const auto b = batcher->stats();
    metric("batched_forwards_total", "counter",
           "Target forwards run for the sessions (each may carry several sessions' rows).",
           b.forwards);
    metric("batched_session_ubatches_total", "counter",
           "Session ubatches those forwards carried (divided by forwards: sessions per forward).",
           b.jobs);
    metric("batched_rows_total", "counter", "Rows those forwards evaluated.", b.rows);
  }
  return out;
}

}  // namespace augur::server
