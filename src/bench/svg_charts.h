// Dependency-free SVG charts for benchmark reports (docs/bench-report.md): a small SVG builder,
// 1-2-5 axis ticks, and the charts a report supports. Reads only the report's `summary` (run) or
// `curve` (verify-curve) and header; it judges no evidence (that is the gate's job) and draws
// only finite values, so a chart never shows a number the report does not hold.
#pragma once

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace augur::bench {

// Writes the charts a report supports into dir (created if missing); returns the files written.
//   kind "run":          decode_tok_s.svg, and tau_hist.svg when some arm has a tau_hist.
//   kind "verify-curve": verify_curve.svg.
//   kind "serve":        serve_tok_s.svg.
// InvalidArgument for an unknown kind or a report missing the fields a chart needs.
std::vector<std::filesystem::path> write_report_charts(const nlohmann::json& report,
                                                       const std::filesystem::path& dir);

// The chart texts themselves, one SVG document each (what write_report_charts writes).
std::string decode_tok_s_chart(const nlohmann::json& report);
std::string tau_hist_chart(const nlohmann::json& report);  // "" when no arm has a tau_hist
std::string verify_curve_chart(const nlohmann::json& report);
std::string serve_chart(const nlohmann::json& report);  // from summary.cells

// &, <, >, " and ' as XML entities, for text content and attribute values.
std::string xml_escape(std::string_view text);

// An axis ending on ticks, steps of 1, 2 or 5 times a power of ten; at most about max_ticks.
struct NiceAxis {
  double lo = 0, hi = 1, step = 1;
  std::vector<double> ticks;  // lo, lo + step, ..., hi
};
NiceAxis nice_axis(double lo, double hi, int max_ticks = 6);
// A tick value with just the decimals its step needs ("0.25", "300").
std::string tick_label(double value, double step);

// Appends SVG elements; coordinates in px, (0, 0) top-left. Attributes are passed preformatted
// (`fill="#888" class="bar"`); text content is escaped here. Coordinates must be finite.
class SvgDocument {
 public:
  SvgDocument(double width_px, double height_px, std::string_view title);

  void rect(double x, double y, double w, double h, std::string_view attrs);
  void line(double x1, double y1, double x2, double y2, std::string_view attrs);
  void circle(double cx, double cy, double r, std::string_view attrs);
  void polyline(const std::vector<std::pair<double, double>>& points, std::string_view attrs);
  void polygon(const std::vector<std::pair<double, double>>& points, std::string_view attrs);
  void text(double x, double y, std::string_view content, std::string_view attrs);

  std::string str() const;  // the whole document, starting with "<svg"

 private:
  double width_px_, height_px_;
  std::string title_;
  std::string body_;
};

}  // namespace augur::bench
