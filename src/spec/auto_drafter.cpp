#include "spec/auto_drafter.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <numeric>
#include <set>

#include "common/error.h"

namespace augur::spec {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

std::vector<std::string> names_of(const std::vector<std::unique_ptr<DraftSource>>& sources) {
  std::vector<std::string> names;
  for (const auto& s : sources) {
    AUGUR_CHECK(s != nullptr, "every source exists");
    names.push_back(s->name());
  }
  return names;
}

// Rows timed at calibration: enough for interpolation to be close (T_V is smooth in m), few
// enough to stay well under a second on a model that streams its weights from memory.
std::vector<int> calibration_rows(int max_rows) {
  std::set<int> rows = {1, 2, 3, 4, 6, max_rows};
  std::vector<int> out;
  for (const int m : rows) {
    if (m >= 1 && m <= max_rows) out.push_back(m);
  }
  return out;
}

}  // namespace

int64_t PolicyStats::cycles() const {
  return std::accumulate(cycles_by_source.begin(), cycles_by_source.end(), ar_steps);
}

nlohmann::json to_json(const PolicyStats& st) {
  const auto cycles = static_cast<double>(st.cycles());
  const auto per_cycle = [&](double total) { return cycles > 0 ? total / cycles : 0.0; };
  nlohmann::json by_source = nlohmann::json::object();
  for (size_t s = 0; s < st.sources.size(); ++s) by_source[st.sources[s]] = st.cycles_by_source[s];
  return {{"cycles_by_source", by_source},
          {"ar_steps", st.ar_steps},
          {"explorations", st.explorations},
          {"mean_k", st.mean_k()},
          {"predicted_tokens_per_cycle", per_cycle(st.predicted_tokens)},
          {"observed_tokens_per_cycle", per_cycle(st.observed_tokens)},
          {"predicted_s_per_cycle", per_cycle(st.predicted_s)},
          {"observed_s_per_cycle", per_cycle(st.observed_s)},
          {"calibration_s", st.calibration_s}};
}

AutoDrafter::AutoDrafter(std::vector<std::unique_ptr<DraftSource>> sources, int k_max,
                         std::vector<std::string> labels)
    : AutoDrafter(std::move(sources), nullptr) {
  if (labels.empty()) labels = names_of(sources_);
  if (labels.size() != sources_.size() ||
      std::set<std::string>(labels.begin(), labels.end()).size() != labels.size()) {
    throw InvalidArgument("the auto policy's sources need one distinct label each");
  }
  policy_ = std::make_unique<DraftPolicy>(labels, k_max);
  stats_.sources = labels;
}

AutoDrafter::AutoDrafter(std::vector<std::unique_ptr<DraftSource>> sources,
                         std::unique_ptr<DraftPolicy> policy)
    : sources_(std::move(sources)),
      policy_(std::move(policy)),
      free_drafts_(sources_.size()),
      available_(sources_.size(), 0),
      exploited_(sources_.size(), 0) {
  if (sources_.empty()) throw InvalidArgument("--draft auto needs at least one draft source");
  AUGUR_CHECK(!policy_ || policy_->sources().size() == sources_.size(),
              "the policy plans over exactly these sources");
  if (policy_) stats_.sources = policy_->sources();
  stats_.cycles_by_source.assign(sources_.size(), 0);
  for (const auto& source : sources_) {
    for (const int32_t layer : source->feature_layers()) {
      if (std::find(taps_.begin(), taps_.end(), layer) == taps_.end()) taps_.push_back(layer);
    }
  }
}

void AutoDrafter::take_features(int64_t first, int64_t n, int64_t n_embd, const float* features) {
  const size_t n_taps = taps_.size();
  for (auto& source : sources_) {
    const std::span<const int32_t> mine = source->feature_layers();
    if (mine.empty()) continue;
    if (std::ranges::equal(mine, taps_)) {
      source->take_features(first, n, n_embd, features);
      continue;
    }
    slice_.resize(static_cast<size_t>(n * n_embd) * mine.size());
    for (int64_t row = 0; row < n; ++row) {
      for (size_t t = 0; t < mine.size(); ++t) {
        const auto at =
            static_cast<size_t>(std::find(taps_.begin(), taps_.end(), mine[t]) - taps_.begin());
        const float* src = features + (static_cast<size_t>(row) * n_taps + at) * n_embd;
        std::copy(src, src + n_embd,
                  slice_.begin() + static_cast<std::ptrdiff_t>(
                                       (static_cast<size_t>(row) * mine.size() + t) * n_embd));
      }
    }
    source->take_features(first, n, n_embd, slice_.data());
  }
}

int64_t AutoDrafter::reusable_prefix(std::span<const int32_t> prompt) const {
  auto keep = static_cast<int64_t>(prompt.size());
  for (const auto& source : sources_) keep = std::min(keep, source->reusable_prefix(prompt));
  return keep;
}

void AutoDrafter::begin(std::span<const int32_t> prompt) {
  // A model source that sat idle through the last generation is not prefilled now (that would
  // add its forward to every prompt); if the policy picks it, it catches up then.
  for (size_t s = 0; s < sources_.size(); ++s) {
    if (first_run_ || exploited_[s] > 0) sources_[s]->begin(prompt);
  }
  first_run_ = false;
  std::fill(exploited_.begin(), exploited_.end(), 0);
  const double calibration_s = stats_.calibration_s;
  stats_ = PolicyStats{};
  stats_.sources = policy_->sources();
  stats_.cycles_by_source.assign(sources_.size(), 0);
  stats_.calibration_s = calibration_s;
}

void AutoDrafter::reset() {
  for (auto& s : sources_) s->reset();
  first_run_ = true;
}

void AutoDrafter::share_forwards(model::ForwardBatcherSet& batchers) {
  for (auto& source : sources_) source->share_forwards(batchers);
}

void AutoDrafter::calibrate(const VerifyTimer& time_verify) {
  stats_.calibration_s = 0;
  if (calibrated_) return;
  const auto start = Clock::now();
  const int max_rows = policy_->k_max() + 1;
  time_verify(1);  // the first forward pays for cold caches and page faults: not a sample
  std::vector<double> seconds(static_cast<size_t>(max_rows), 0);  // 0: not measured
  // The faster of two timings of each m: noise only ever adds time.
  for (int pass = 0; pass < 2; ++pass) {
    for (const int m : calibration_rows(max_rows)) {
      double& t = seconds[static_cast<size_t>(m - 1)];
      const double measured = time_verify(m);
      t = pass == 0 ? measured : std::min(t, measured);
    }
  }
  policy_->calibrate_verify(seconds);
  calibrated_ = true;
  stats_.calibration_s = seconds_since(start);
}

void AutoDrafter::propose(const DraftRequest& request, Draft& out) {
  out.clear();
  confidence_.clear();
  chosen_s_ = 0;
  n_drafted_ = n_accepted_ = 0;
  for (size_t s = 0; s < sources_.size(); ++s) {
    if (sources_[s]->proposals_are_free()) {
      DraftRequest look = request;
      look.keep_drafting = nullptr;
      sources_[s]->propose(look, free_drafts_[s]);
      available_[s] = static_cast<int>(free_drafts_[s].tokens.size());
    } else {
      available_[s] = request.k_max;
    }
  }
  plan_ = request.k_max > 0 ? policy_->choose(available_) : policy_->ar_step();
  if (plan_.source == kArStep) return;
  const auto s = static_cast<size_t>(plan_.source);
  if (sources_[s]->proposals_are_free()) {
    const Draft& d = free_drafts_[s];
    const auto k = static_cast<size_t>(plan_.k);
    out.tokens.assign(d.tokens.begin(), d.tokens.begin() + static_cast<std::ptrdiff_t>(k));
    if (!d.q.empty())
      out.q.assign(d.q.begin(),
                   d.q.begin() + static_cast<std::ptrdiff_t>(k * (d.q.size() / d.tokens.size())));
    if (!d.confidence.empty())
      out.confidence.assign(d.confidence.begin(),
                            d.confidence.begin() + static_cast<std::ptrdiff_t>(k));
  } else {
    DraftRequest mine = request;
    mine.k_max = plan_.k;
    mine.keep_drafting = [this](int, float confidence) {
      confidence_.push_back(confidence);
      return policy_->keep_drafting(plan_, confidence_);
    };
    const auto start = Clock::now();
    sources_[s]->propose(mine, out);
    chosen_s_ += seconds_since(start);
  }
  n_drafted_ = static_cast<int>(out.tokens.size());
  confidence_.assign(out.confidence.begin(), out.confidence.end());
}

void AutoDrafter::observe(int n_accepted) {
  n_accepted_ = n_accepted;
  if (plan_.source == kArStep) return;
  const auto start = Clock::now();
  sources_[static_cast<size_t>(plan_.source)]->observe(n_accepted);
  chosen_s_ += seconds_since(start);
}

void AutoDrafter::observe_cost(const CycleCost& cost) {
  CycleOutcome outcome;
  outcome.drafted = n_drafted_;
  outcome.accepted = n_accepted_;
  outcome.confidence = confidence_;
  outcome.draft_s = chosen_s_;
  outcome.verify_s = cost.verify_s;
  outcome.other_s = cost.other_s;
  policy_->record(plan_, outcome);

  if (plan_.source == kArStep || n_drafted_ == 0) {
    ++stats_.ar_steps;
  } else {
    ++stats_.cycles_by_source[static_cast<size_t>(plan_.source)];
  }
  stats_.explorations += plan_.explore ? 1 : 0;
  stats_.drafted += n_drafted_;
  stats_.predicted_tokens += plan_.predicted_tokens;
  stats_.observed_tokens += n_accepted_ + 1;
  const double observed_s = chosen_s_ + cost.verify_s + cost.other_s;
  stats_.predicted_s += plan_.predicted_s;
  stats_.observed_s += observed_s;
  if (log_) {
    const std::string source =
        plan_.source == kArStep ? "ar" : policy_->sources()[static_cast<size_t>(plan_.source)];
    *log_ << fmt::format(
        "{{\"cycle\":{},\"source\":\"{}\",\"k\":{},\"drafted\":{},\"explore\":{},"
        "\"predicted_accepted\":{:.4f},\"accepted\":{},\"predicted_s\":{:.6g},\"actual_s\":{:.6g},"
        "\"draft_s\":{:.6g},\"verify_s\":{:.6g},\"other_s\":{:.6g}}}\n",
        policy_->cycles() - 1, source, plan_.k, n_drafted_, plan_.explore,
        plan_.predicted_tokens - 1, n_accepted_, plan_.predicted_s, observed_s, chosen_s_,
        cost.verify_s, cost.other_s);
  }
  if (plan_.source != kArStep && !plan_.explore) ++exploited_[static_cast<size_t>(plan_.source)];
}

int64_t AutoDrafter::memory_bytes() const {
  int64_t bytes = 0;
  for (const auto& s : sources_) bytes += s->memory_bytes();
  return bytes;
}

}  // namespace augur::spec
