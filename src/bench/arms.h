// A benchmark arm: one way of decoding, named as on the command line.
//   ar                      plain autoregressive decoding (the baseline)
//   spec:model:K            draft model (-md), K drafts per cycle
//   spec:ngram:K[:N]        prompt lookup with n-grams of N..1 tokens (N default 4)
//   spec:layerskip:L:K      the target's first L layers as drafter
//   spec:auto[:SOURCES][:K] the draft policy over SOURCES (model+ngram+layerskip; default: all
//                           at hand), blocks of at most K (default 8)
//   any spec arm + "@token" or "@block": that sampled acceptance rule (default: --accept)
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "spec/acceptance.h"

namespace augur::bench {

struct ArmSpec {
  std::string name;          // as given, e.g. "spec:model:8"
  bool spec = false;         // false: AR
  std::string drafter;       // "model", "ngram", "layerskip", "auto"; empty for AR
  int draft_max = 0;         // K
  int layers = 0;            // layer-skip depth L
  int ngram_max = 4;         // N
  std::string auto_sources;  // auto: '+'-separated sources as given; empty = all at hand
  // "@token" / "@block" after a spec arm: its sampled acceptance rule (unset: the run's --accept).
  std::optional<spec::SampledRule> rule;
  // The effective configuration: equal keys mean the same decoding path.
  std::string config_key() const;
};

// Throws InvalidArgument naming the arm and the accepted forms.
ArmSpec parse_arm(std::string_view text);
// Comma-separated list; duplicates are an InvalidArgument.
std::vector<ArmSpec> parse_arms(std::string_view list);

}  // namespace augur::bench
