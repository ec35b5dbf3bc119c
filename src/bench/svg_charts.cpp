#include "bench/svg_charts.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <optional>
#include <set>

#include "common/error.h"

namespace augur::bench {

using nlohmann::json;

namespace {

// Page layout in px. Charts with a legend reserve kLegendWidth on the right.
constexpr double kHeight = 420, kLeft = 72, kRight = 24, kTop = 70, kBottom = 70;
constexpr double kLegendWidth = 190;
// Paul Tol's "bright" scheme: distinguishable for common colour-vision deficiencies.
constexpr const char* kPalette[] = {"#4477aa", "#ee6677", "#228833", "#ccbb44",
                                    "#66ccee", "#aa3377", "#bbbbbb"};
constexpr const char* kArColor = "#9a9a9a";

const char* palette(size_t index) {
  return kPalette[index % std::size(kPalette)];
}

std::string num(double v) {
  AUGUR_CHECK(std::isfinite(v), "SVG coordinates come from finite values only");
  return fmt::format("{:.2f}", v + 0.0);  // + 0.0 turns -0.0 into 0.0
}

// A finite number at obj[key]; nullopt when absent, null, not a number, NaN or infinite.
std::optional<double> finite_number(const json& obj, std::string_view key) {
  if (!obj.is_object()) return std::nullopt;
  auto it = obj.find(key);
  if (it == obj.end() || !it->is_number()) return std::nullopt;
  const double v = it->get<double>();
  return std::isfinite(v) ? std::optional<double>(v) : std::nullopt;
}

// obj[key] when it is a string, else "" (so a malformed field never throws a json error here).
std::string string_field(const json& obj, std::string_view key) {
  auto it = obj.is_object() ? obj.find(key) : obj.end();
  return it != obj.end() && it->is_string() ? it->get<std::string>() : std::string();
}

const json& require(const json& obj, std::string_view key, std::string_view where) {
  auto it = obj.is_object() ? obj.find(key) : obj.end();
  if (it == obj.end() || it->is_null()) {
    throw InvalidArgument(fmt::format("benchmark report: {} has no '{}'", where, key));
  }
  return *it;
}

const json& require_array(const json& obj, std::string_view key, std::string_view where) {
  const json& value = require(obj, key, where);
  if (!value.is_array() || value.empty()) {
    throw InvalidArgument(
        fmt::format("benchmark report: {}.{} must be a non-empty array", where, key));
  }
  return value;
}

// "model: zoo-target-q8_0.gguf · cpu: AMD EPYC ..." from the header, parts left out if absent.
std::string header_subtitle(const json& report) {
  std::vector<std::string> parts;
  const json* model = nullptr;
  if (auto it = report.find("models"); it != report.end() && it->is_array()) {
    for (const json& m : *it) {
      if (!model || (string_field(m, "role") == "target")) model = &m;
    }
  }
  if (model && model->is_object() && model->contains("path") && (*model)["path"].is_string()) {
    parts.push_back("model: " +
                    std::filesystem::path((*model)["path"].get<std::string>()).filename().string());
  }
  if (auto it = report.find("machine"); it != report.end() && it->is_object()) {
    if (it->contains("cpu") && (*it)["cpu"].is_string()) {
      parts.push_back("cpu: " + (*it)["cpu"].get<std::string>());
    }
  }
  return fmt::format("{}", fmt::join(parts, " · "));
}

// Maps a data interval onto a pixel interval (either may be reversed).
struct Scale {
  double v0, v1, p0, p1;
  double operator()(double v) const { return p0 + (v - v0) * (p1 - p0) / (v1 - v0); }
};

struct Plot {
  double left, top, width, height;
  NiceAxis y_axis;
  Scale y() const { return {y_axis.lo, y_axis.hi, top + height, top}; }
  double bottom() const { return top + height; }
};

SvgDocument make_document(double width, std::string_view title, const json& report) {
  const std::string subtitle = header_subtitle(report);
  SvgDocument doc(width, kHeight,
                  subtitle.empty() ? title : fmt::format("{} — {}", title, subtitle));
  doc.text(width / 2, 24, title, R"(text-anchor="middle" font-size="16" font-weight="bold")");
  if (!subtitle.empty()) doc.text(width / 2, 44, subtitle, R"(text-anchor="middle" fill="#444")");
  return doc;
}

// Grid lines and labels for the y axis, the two axis lines and both axis titles.
void draw_frame(SvgDocument& doc, const Plot& plot, std::string_view y_title,
                std::string_view x_title) {
  const Scale y = plot.y();
  for (double tick : plot.y_axis.ticks) {
    doc.line(plot.left, y(tick), plot.left + plot.width, y(tick), R"(stroke="#e4e4e4")");
    doc.text(plot.left - 6, y(tick) + 4, tick_label(tick, plot.y_axis.step),
             R"(text-anchor="end")");
  }
  doc.line(plot.left, plot.top, plot.left, plot.bottom(), R"(stroke="#000")");
  doc.line(plot.left, plot.bottom(), plot.left + plot.width, plot.bottom(), R"(stroke="#000")");
  const double mid_y = plot.top + plot.height / 2;
  doc.text(18, mid_y, y_title,
           fmt::format(R"svg(text-anchor="middle" transform="rotate(-90 18 {})")svg", num(mid_y)));
  doc.text(plot.left + plot.width / 2, kHeight - 14, x_title, R"(text-anchor="middle")");
}

void draw_legend(SvgDocument& doc, double x, double y,
                 const std::vector<std::pair<std::string, std::string>>& entries) {
  for (const auto& [color, label] : entries) {
    doc.rect(x, y - 10, 12, 12, fmt::format(R"(fill="{}")", color));
    doc.text(x + 18, y, label, R"(class="legend")");
    y += 20;
  }
}

bool is_ar_arm(const json& report, const std::string& name) {
  if (auto it = report.find("arms"); it != report.end() && it->is_array()) {
    for (const json& arm : *it) {
      if (string_field(arm, "name") == name) return string_field(arm, "kind") == "ar";
    }
  }
  return name == "ar";
}

// One colour per arm shared by all run charts: AR arms grey, the others the palette in the order
// of summary.arms.
std::map<std::string, std::string> arm_colors(const json& report, const json& summary_arms) {
  std::map<std::string, std::string> colors;
  size_t spec_index = 0;
  for (const json& arm : summary_arms) {
    const std::string name = string_field(arm, "name");
    colors.emplace(name, is_ar_arm(report, name) ? kArColor : palette(spec_index++));
  }
  return colors;
}

struct ArmThroughput {
  std::string name;
  bool is_ar = false;
  std::optional<double> median, min, max, q1, q3;
  std::optional<double> speedup;  // over `baseline`, from summary.speedups
  std::string baseline;
};

std::vector<ArmThroughput> read_throughputs(const json& report) {
  const json& summary = require(report, "summary", "run report");
  const json& arms = require_array(summary, "arms", "summary");
  std::vector<ArmThroughput> out;
  for (size_t index = 0; index < arms.size(); ++index) {
    const std::string where = fmt::format("summary.arms[{}]", index);
    const json& name = require(arms[index], "name", where);
    if (!name.is_string()) throw InvalidArgument(where + ".name must be a string");
    const json& tok_s = require(arms[index], "decode_tok_s", where);
    ArmThroughput arm{name.get<std::string>(), is_ar_arm(report, name.get<std::string>())};
    arm.median = finite_number(tok_s, "median");
    arm.min = finite_number(tok_s, "min");
    arm.max = finite_number(tok_s, "max");
    arm.q1 = finite_number(tok_s, "q1");
    arm.q3 = finite_number(tok_s, "q3");
    if (auto it = summary.find("speedups"); it != summary.end() && it->is_array()) {
      for (const json& s : *it) {
        if (string_field(s, "subject") == arm.name) {
          arm.speedup = finite_number(s, "value");
          arm.baseline = string_field(s, "baseline");
        }
      }
    }
    out.push_back(std::move(arm));
  }
  return out;
}

struct TauArm {
  std::string name, color;
  std::vector<double> fractions;  // [k + 1]: share of cycles committing index + 1 tokens
  std::optional<double> tau_mean;
};

}  // namespace

std::string xml_escape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&apos;"; break;
      default: out += c;
    }
  }
  return out;
}

NiceAxis nice_axis(double lo, double hi, int max_ticks) {
  AUGUR_CHECK(std::isfinite(lo) && std::isfinite(hi) && lo <= hi, "axis range is finite");
  if (hi - lo < 1e-12 * std::max(1.0, std::abs(hi))) hi = lo + std::max(1.0, std::abs(lo));
  const double raw = (hi - lo) / std::max(1, max_ticks);
  const double magnitude = std::pow(10.0, std::floor(std::log10(raw)));
  const double norm = raw / magnitude;
  NiceAxis axis;
  axis.step = (norm <= 1 ? 1 : norm <= 2 ? 2 : norm <= 5 ? 5 : 10) * magnitude;
  // Integer multiples of the step keep ticks exact-looking (no 0.30000000000000004 drift).
  const double first = std::floor(lo / axis.step + 1e-9);
  const double last = std::ceil(hi / axis.step - 1e-9);
  axis.lo = first * axis.step;
  axis.hi = last * axis.step;
  for (double k = first; k <= last + 0.5; k += 1) axis.ticks.push_back(k * axis.step);
  return axis;
}

std::string tick_label(double value, double step) {
  const int decimals = std::max(0, static_cast<int>(-std::floor(std::log10(step) + 1e-9)));
  if (std::abs(value) < step * 1e-6) value = 0;
  return fmt::format("{:.{}f}", value, decimals);
}

SvgDocument::SvgDocument(double width_px, double height_px, std::string_view title)
    : width_px_(width_px), height_px_(height_px), title_(title) {}

void SvgDocument::rect(double x, double y, double w, double h, std::string_view attrs) {
  body_ += fmt::format("<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" {}/>\n", num(x), num(y),
                       num(std::max(0.0, w)), num(std::max(0.0, h)), attrs);
}

void SvgDocument::line(double x1, double y1, double x2, double y2, std::string_view attrs) {
  body_ += fmt::format("<line x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" {}/>\n", num(x1), num(y1),
                       num(x2), num(y2), attrs);
}

void SvgDocument::circle(double cx, double cy, double r, std::string_view attrs) {
  body_ +=
      fmt::format("<circle cx=\"{}\" cy=\"{}\" r=\"{}\" {}/>\n", num(cx), num(cy), num(r), attrs);
}

namespace {
std::string point_list(const std::vector<std::pair<double, double>>& points) {
  std::string out;
  for (const auto& [x, y] : points) out += (out.empty() ? "" : " ") + num(x) + "," + num(y);
  return out;
}
}  // namespace

void SvgDocument::polyline(const std::vector<std::pair<double, double>>& points,
                           std::string_view attrs) {
  body_ += fmt::format("<polyline points=\"{}\" {}/>\n", point_list(points), attrs);
}

void SvgDocument::polygon(const std::vector<std::pair<double, double>>& points,
                          std::string_view attrs) {
  body_ += fmt::format("<polygon points=\"{}\" {}/>\n", point_list(points), attrs);
}

void SvgDocument::text(double x, double y, std::string_view content, std::string_view attrs) {
  body_ += fmt::format("<text x=\"{}\" y=\"{}\" {}>{}</text>\n", num(x), num(y), attrs,
                       xml_escape(content));
}

std::string SvgDocument::str() const {
  const std::string w = fmt::format("{:.0f}", std::ceil(width_px_));
  const std::string h = fmt::format("{:.0f}", std::ceil(height_px_));
  return fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" width=\"{0}\" height=\"{1}\" "
      "viewBox=\"0 0 {0} {1}\" font-family=\"sans-serif\" font-size=\"12\">\n"
      "<title>{2}</title>\n<rect x=\"0\" y=\"0\" width=\"{0}\" height=\"{1}\" fill=\"#fff\"/>\n"
      "{3}</svg>\n",
      w, h, xml_escape(title_), body_);
}

// Per arm: IQR box (or a dot when quartiles are absent), min–max whisker, median line. AR arms
// are grey with a dashed outline; subject arms carry their speedup label above the whisker.
std::string decode_tok_s_chart(const json& report) {
  const std::vector<ArmThroughput> arms = read_throughputs(report);
  double top_value = 0;
  bool any_speedup = false;
  for (const ArmThroughput& arm : arms) {
    for (const auto& v : {arm.median, arm.max, arm.q3})
      top_value = std::max(top_value, v.value_or(0));
    any_speedup = any_speedup || arm.speedup.has_value();
  }
  const double slot = 120;
  const double width = std::max(480.0, kLeft + kRight + slot * arms.size());
  SvgDocument doc = make_document(width, "Decode throughput per arm", report);
  const Plot plot{kLeft, kTop, width - kLeft - kRight, kHeight - kTop - kBottom,
                  nice_axis(0, top_value * (any_speedup ? 1.12 : 1.0))};
  draw_frame(doc, plot, "decode throughput (tokens/s)",
             "arm (box: IQR, whisker: min–max, line: median)");
  const Scale y = plot.y();
  const auto colors = arm_colors(report, report.at("summary").at("arms"));
  for (size_t index = 0; index < arms.size(); ++index) {
    const ArmThroughput& arm = arms[index];
    const double cx = plot.left + (index + 0.5) * plot.width / arms.size();
    const double half = 28;
    const std::string& color = colors.at(arm.name);
    const std::string dash = arm.is_ar ? R"( stroke-dasharray="4 2")" : "";
    doc.text(cx, plot.bottom() + 18, arm.name, R"(text-anchor="middle")");
    doc.text(cx, plot.bottom() + 34,
             arm.median ? fmt::format("median {:.1f}", *arm.median) : std::string("no data"),
             R"(text-anchor="middle" fill="#444")");
    if (!arm.median) continue;
    if (arm.min && arm.max) {
      doc.line(cx, y(*arm.min), cx, y(*arm.max), R"(class="whisker" stroke="#333")");
      doc.line(cx - 8, y(*arm.min), cx + 8, y(*arm.min), R"(stroke="#333")");
      doc.line(cx - 8, y(*arm.max), cx + 8, y(*arm.max), R"(stroke="#333")");
    }
    if (arm.q1 && arm.q3 && *arm.q1 <= *arm.q3) {
      doc.rect(cx - half, y(*arm.q3), 2 * half, y(*arm.q1) - y(*arm.q3),
               fmt::format(R"(class="arm-box" fill="{}" fill-opacity="0.75" stroke="#333"{})",
                           color, dash));
      doc.line(cx - half, y(*arm.median), cx + half, y(*arm.median),
               R"(class="median" stroke="#000" stroke-width="2")");
    } else {
      doc.circle(cx, y(*arm.median), 5, fmt::format(R"(class="arm-box" fill="{}")", color));
    }
    if (arm.speedup) {
      const double label_y = y(arm.max.value_or(*arm.median)) - 10;
      doc.text(cx, label_y, fmt::format("{:.2f}× vs {}", *arm.speedup, arm.baseline),
               R"(class="speedup" text-anchor="middle" font-weight="bold")");
    }
  }
  return doc.str();
}

// Grouped bars: x = tokens committed per cycle (1..k+1), one bar per spec arm, heights as
// fractions of that arm's cycles. Arms without cycles are listed in the legend, not drawn.
std::string tau_hist_chart(const json& report) {
  const json& summary = require(report, "summary", "run report");
  const json& arms = require_array(summary, "arms", "summary");
  const auto colors = arm_colors(report, arms);
  std::vector<TauArm> tau_arms;
  std::vector<std::string> no_cycles;
  for (const json& arm : arms) {
    auto hist = arm.is_object() ? arm.find("tau_hist") : arm.end();
    if (hist == arm.end() || !hist->is_array() || hist->empty()) continue;
    const std::string name = string_field(arm, "name");
    if (is_ar_arm(report, name)) continue;
    TauArm tau{name, colors.at(name), {}, finite_number(arm, "tau_mean")};
    double total = 0;
    for (const json& count : *hist) {
      const double c = count.is_number() ? count.get<double>() : 0.0;
      tau.fractions.push_back(std::isfinite(c) && c > 0 ? c : 0.0);
      total += tau.fractions.back();
    }
    if (total <= 0) {
      no_cycles.push_back(tau.name);
      continue;
    }
    for (double& f : tau.fractions) f /= total;
    tau_arms.push_back(std::move(tau));
  }
  if (tau_arms.empty() && no_cycles.empty()) return "";
  size_t n_bins = 1;
  double top_fraction = 0;
  for (const TauArm& arm : tau_arms) {
    n_bins = std::max(n_bins, arm.fractions.size());
    for (double f : arm.fractions) top_fraction = std::max(top_fraction, f);
  }
  const double group = std::max(48.0, 14.0 * tau_arms.size() + 16);
  const double width = std::max(520.0, kLeft + kLegendWidth + group * n_bins);
  SvgDocument doc = make_document(width, "Tokens committed per speculative cycle", report);
  const Plot plot{kLeft, kTop, width - kLeft - kLegendWidth, kHeight - kTop - kBottom,
                  nice_axis(0, top_fraction)};
  draw_frame(doc, plot, "fraction of cycles", "tokens committed per cycle (accepted drafts + 1)");
  const Scale y = plot.y();
  const double group_px = plot.width / n_bins;
  const double bar_px = group_px * 0.8 / std::max<size_t>(1, tau_arms.size());
  for (size_t bin = 0; bin < n_bins; ++bin) {
    const double group_left = plot.left + bin * group_px;
    doc.text(group_left + group_px / 2, plot.bottom() + 18, std::to_string(bin + 1),
             R"(text-anchor="middle")");
    for (size_t a = 0; a < tau_arms.size(); ++a) {
      const double f = bin < tau_arms[a].fractions.size() ? tau_arms[a].fractions[bin] : 0.0;
      doc.rect(group_left + group_px * 0.1 + a * bar_px, y(f), bar_px, y(0) - y(f),
               fmt::format(R"(class="bar" fill="{}")", tau_arms[a].color));
    }
  }
  std::vector<std::pair<std::string, std::string>> legend;
  for (size_t a = 0; a < tau_arms.size(); ++a) {
    const auto& arm = tau_arms[a];
    legend.emplace_back(
        arm.color, arm.tau_mean ? fmt::format("{} (τ {:.2f})", arm.name, *arm.tau_mean) : arm.name);
  }
  for (const std::string& name : no_cycles) legend.emplace_back("#fff", name + ": no cycles");
  draw_legend(doc, plot.left + plot.width + 16, plot.top + 10, legend);
  return doc.str();
}

// T_V(M) / T_V(1) against M, one line per context length, a min–max band around it (min_s and
// max_s over the same m=1 median), and a dashed line at 1 (verifying M costs as much as 1).
std::string verify_curve_chart(const json& report) {
  const json& curve = require_array(report, "curve", "verify-curve report");
  struct Point {
    double m, median, lo, hi;
    bool has_band;
  };
  std::map<long long, std::vector<Point>> by_ctx;  // ctx -> points, sorted by m below
  for (size_t index = 0; index < curve.size(); ++index) {
    const std::string where = fmt::format("curve[{}]", index);
    const json& point = curve[index];
    for (const char* key : {"ctx", "m"}) {  // identify the point: must be finite numbers
      require(point, key, where);
      if (!finite_number(point, key)) {
        throw InvalidArgument(
            fmt::format("benchmark report: {}.{} must be a finite number", where, key));
      }
    }
    if (!point.contains("median_s")) {  // null, NaN or infinite values are skipped below
      throw InvalidArgument(fmt::format("benchmark report: {} has no 'median_s'", where));
    }
    const double m = *finite_number(point, "m");
    const auto median = finite_number(point, "median_s");
    const auto lo = finite_number(point, "min_s"), hi = finite_number(point, "max_s");
    auto& series = by_ctx[std::llround(*finite_number(point, "ctx"))];
    if (median) series.push_back({m, *median, lo.value_or(0), hi.value_or(0), lo && hi});
  }
  double max_m = 1, top_ratio = 1;
  std::map<long long, double> base_s;  // ctx -> median_s at m = 1
  for (auto& [ctx, points] : by_ctx) {
    std::sort(points.begin(), points.end(),
              [](const Point& a, const Point& b) { return a.m < b.m; });
    auto base = std::find_if(points.begin(), points.end(), [](const Point& p) { return p.m == 1; });
    if (base == points.end() || base->median <= 0) {
      throw InvalidArgument(fmt::format(
          "benchmark report: verify-curve ctx {} has no m=1 point with a positive median_s", ctx));
    }
    base_s[ctx] = base->median;
    for (const Point& p : points) {
      max_m = std::max(max_m, p.m);
      top_ratio =
          std::max(top_ratio, (p.has_band ? std::max(p.hi, p.median) : p.median) / base->median);
    }
  }
  const double width = 640 + kLegendWidth - kRight;
  SvgDocument doc = make_document(width, "Verify cost vs tokens per pass", report);
  const Plot plot{kLeft, kTop, width - kLeft - kLegendWidth, kHeight - kTop - kBottom,
                  nice_axis(0, top_ratio)};
  draw_frame(doc, plot, "T_V(M) / T_V(1) (verify time relative to M = 1)",
             "M (tokens verified in one forward pass)");
  // M is a whole number of tokens, from 1: no fractional ticks.
  NiceAxis x_axis = nice_axis(1, max_m);
  if (x_axis.step < 1) x_axis = nice_axis(1, max_m, static_cast<int>(std::ceil(max_m)));
  const Scale x{x_axis.lo, x_axis.hi, plot.left, plot.left + plot.width};
  const Scale y = plot.y();
  for (double tick : x_axis.ticks) {
    doc.line(x(tick), plot.bottom(), x(tick), plot.bottom() + 5, R"(stroke="#000")");
    doc.text(x(tick), plot.bottom() + 18, tick_label(tick, x_axis.step), R"(text-anchor="middle")");
  }
  doc.line(plot.left, y(1), plot.left + plot.width, y(1),
           R"(class="ref" stroke="#555" stroke-dasharray="6 4")");
  std::vector<std::pair<std::string, std::string>> legend;
  size_t series_index = 0;
  for (const auto& [ctx, points] : by_ctx) {
    const char* color = palette(series_index++);
    const double base = base_s[ctx];
    std::vector<std::pair<double, double>> band_top, band_bottom, line;
    for (const Point& p : points) {
      line.emplace_back(x(p.m), y(p.median / base));
      if (p.has_band) {
        band_top.emplace_back(x(p.m), y(p.hi / base));
        band_bottom.emplace_back(x(p.m), y(p.lo / base));
      }
    }
    if (band_top.size() >= 2) {
      band_top.insert(band_top.end(), band_bottom.rbegin(), band_bottom.rend());
      doc.polygon(band_top, fmt::format(R"(class="band" fill="{}" fill-opacity="0.2")", color));
    }
    doc.polyline(line,
                 fmt::format(R"(class="series" fill="none" stroke="{}" stroke-width="2")", color));
    for (const auto& [px, py] : line) doc.circle(px, py, 3, fmt::format(R"(fill="{}")", color));
    legend.emplace_back(color, fmt::format("ctx {}", ctx));
  }
  draw_legend(doc, plot.left + plot.width + 16, plot.top + 10, legend);
  return doc.str();
}

// Aggregate tok/s (median over repeats, min-max band) against the client count, one series per
// arm; client counts are evenly spaced categories (1, 4, 16 would crowd a linear axis).
std::string serve_chart(const json& report) {
  const json& summary = require(report, "summary", "serve report");
  const json& cells = require_array(summary, "cells", "serve summary");
  struct Point {
    double median, lo, hi;
  };
  std::map<std::string, std::map<long long, Point>> by_arm;  // arm -> clients -> point
  std::set<long long> client_counts;
  double top = 0;
  for (size_t index = 0; index < cells.size(); ++index) {
    const json& cell = cells[index];
    const std::string where = fmt::format("summary.cells[{}]", index);
    require(cell, "clients", where);
    const auto clients = finite_number(cell, "clients");
    const json& rate = require(cell, "aggregate_tok_s", where);
    const auto median = finite_number(rate, "median");
    if (!clients || !median || !cell.contains("arm") || !cell["arm"].is_string()) continue;
    const auto lo = finite_number(rate, "min"), hi = finite_number(rate, "max");
    const long long c = std::llround(*clients);
    by_arm[cell["arm"].get<std::string>()][c] = {*median, lo.value_or(*median),
                                                 hi.value_or(*median)};
    client_counts.insert(c);
    top = std::max({top, *median, hi.value_or(0)});
  }
  if (client_counts.empty()) {
    throw InvalidArgument("benchmark report: the serve summary has no cell with a median");
  }
  const double width = 640 + kLegendWidth - kRight;
  SvgDocument doc = make_document(width, "Server throughput vs concurrent clients", report);
  const Plot plot{kLeft, kTop, width - kLeft - kLegendWidth, kHeight - kTop - kBottom,
                  nice_axis(0, top > 0 ? top : 1)};
  draw_frame(doc, plot, "aggregate tok/s (all clients, end to end; median, min-max)",
             "concurrent clients");
  const std::vector<long long> counts(client_counts.begin(), client_counts.end());
  const auto x = [&](long long clients) {
    const auto at = std::find(counts.begin(), counts.end(), clients) - counts.begin();
    return plot.left +
           plot.width * (static_cast<double>(at) + 0.5) / static_cast<double>(counts.size());
  };
  const Scale y = plot.y();
  for (long long c : counts) {
    doc.line(x(c), plot.bottom(), x(c), plot.bottom() + 5, R"(stroke="#000")");
    doc.text(x(c), plot.bottom() + 18, std::to_string(c), R"(text-anchor="middle")");
  }
  std::vector<std::pair<std::string, std::string>> legend;
  size_t series_index = 0;
  for (const auto& [arm, points] : by_arm) {
    const char* color = palette(series_index++);
    std::vector<std::pair<double, double>> line;
    for (const auto& [clients, p] : points) {
      line.emplace_back(x(clients), y(p.median));
      doc.line(
          x(clients), y(p.lo), x(clients), y(p.hi),
          fmt::format(R"(class="band" stroke="{}" stroke-width="6" stroke-opacity="0.3")", color));
    }
    doc.polyline(line,
                 fmt::format(R"(class="series" fill="none" stroke="{}" stroke-width="2")", color));
    for (const auto& [px, py] : line) doc.circle(px, py, 3, fmt::format(R"(fill="{}")", color));
    legend.emplace_back(color, arm);
  }
  draw_legend(doc, plot.left + plot.width + 16, plot.top + 10, legend);
  return doc.str();
}

std::vector<std::filesystem::path> write_report_charts(const json& report,
                                                       const std::filesystem::path& dir) {
  const json& kind = require(report, "kind", "report");
  // Build every chart before writing any, so a bad report leaves no partial output.
  std::vector<std::pair<std::string, std::string>> charts;  // file name, SVG text
  if (kind == "run") {
    charts.emplace_back("decode_tok_s.svg", decode_tok_s_chart(report));
    if (std::string tau = tau_hist_chart(report); !tau.empty()) {
      charts.emplace_back("tau_hist.svg", std::move(tau));
    }
  } else if (kind == "verify-curve") {
    charts.emplace_back("verify_curve.svg", verify_curve_chart(report));
  } else if (kind == "serve") {
    charts.emplace_back("serve_tok_s.svg", serve_chart(report));
  } else {
    throw InvalidArgument(fmt::format(
        "benchmark report: kind {} has no charts (allowed: \"run\", \"verify-curve\", \"serve\")",
        kind.dump()));
  }
  std::filesystem::create_directories(dir);
  std::vector<std::filesystem::path> written;
  for (const auto& [name, svg] : charts) {
    const std::filesystem::path path = dir / name;
    std::ofstream out(path, std::ios::binary);
    out << svg;
    if (!out.flush()) throw Error(fmt::format("cannot write chart '{}'", path.string()));
    written.push_back(path);
  }
  return written;
}

}  // namespace augur::bench
