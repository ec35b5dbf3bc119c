#include "spec/cost_model.h"

#include <algorithm>

#include "common/error.h"

namespace augur::spec {
namespace {

constexpr double kAlpha = 0.15;       // weight of a new observation of the same quantity
constexpr double kDriftShare = 0.25;  // share of one m's surprise passed on to every other m

}  // namespace

void CostModel::Ewma::add(double x, double alpha) {
  // The first observation is taken whole; later ones move the average by alpha.
  value = weight == 0 ? x : value + alpha * (x - value);
  weight = weight * (1 - alpha) + 1;
}

CostModel::CostModel(int max_rows, int n_sources)
    : verify_(static_cast<size_t>(std::max(max_rows, 1))),
      draft_steady_(static_cast<size_t>(n_sources)),
      draft_any_(static_cast<size_t>(n_sources)) {}

void CostModel::calibrate_verify(std::span<const double> seconds) {
  for (size_t m = 0; m < seconds.size() && m < verify_.size(); ++m) {
    if (seconds[m] > 0) verify_[m] = {seconds[m], 1};
  }
}

bool CostModel::verify_known() const {
  return std::any_of(verify_.begin(), verify_.end(), [](const Ewma& e) { return e.weight > 0; });
}

void CostModel::observe_verify(int rows, double seconds) {
  AUGUR_CHECK(rows >= 1, "a verify has at least one row");
  if (rows > static_cast<int>(verify_.size()) || seconds <= 0) return;
  const double predicted = verify_seconds(rows);
  verify_[static_cast<size_t>(rows - 1)].add(seconds, kAlpha);
  if (predicted <= 0) return;
  const double drift = 1 + kAlpha * kDriftShare * (seconds / predicted - 1);
  for (size_t m = 0; m < verify_.size(); ++m) {
    if (static_cast<int>(m) != rows - 1 && verify_[m].weight > 0) verify_[m].value *= drift;
  }
}

double CostModel::verify_seconds(int rows) const {
  const int n = static_cast<int>(verify_.size());
  rows = std::clamp(rows, 1, n);
  const auto known = [&](int m) { return verify_[static_cast<size_t>(m - 1)].weight > 0; };
  const auto value = [&](int m) { return verify_[static_cast<size_t>(m - 1)].value; };
  if (known(rows)) return value(rows);
  int below = rows - 1, above = rows + 1;
  while (below >= 1 && !known(below)) --below;
  while (above <= n && !known(above)) ++above;
  if (below >= 1 && above <= n) {
    const double t = static_cast<double>(rows - below) / (above - below);
    return value(below) + t * (value(above) - value(below));
  }
  // Beyond the known range: the slope of the two nearest known points, never decreasing.
  const int edge = below >= 1 ? below : above;
  if (edge < 1 || edge > n) return 0;
  const int step = below >= 1 ? -1 : 1;
  int next = edge + step;
  while (next >= 1 && next <= n && !known(next)) next += step;
  double slope = 0;
  if (next >= 1 && next <= n) slope = std::max(0.0, (value(edge) - value(next)) / (edge - next));
  return std::max(value(edge) + slope * (rows - edge), value(edge) * 0.5);
}

void CostModel::observe_draft(int source, int k, double seconds, bool steady) {
  if (k <= 0 || seconds < 0) return;
  const auto s = static_cast<size_t>(source);
  AUGUR_CHECK(s < draft_any_.size(), "a known source");
  draft_any_[s].add(seconds / k, kAlpha);
  if (steady) draft_steady_[s].add(seconds / k, kAlpha);
}

double CostModel::draft_seconds(int source, int k) const {
  if (k <= 0) return 0;
  const auto s = static_cast<size_t>(source);
  AUGUR_CHECK(s < draft_any_.size(), "a known source");
  const Ewma& e = draft_steady_[s].weight > 0 ? draft_steady_[s] : draft_any_[s];
  return e.value * k;
}

void CostModel::observe_other(int rows, double seconds) {
  if (rows >= 1 && seconds >= 0) other_per_row_.add(seconds / rows, kAlpha);
}

double CostModel::other_seconds(int rows) const {
  return other_per_row_.value * rows;
}

}  // namespace augur::spec
