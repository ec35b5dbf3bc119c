#include "bench/svg_charts.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <fstream>
#include <limits>
#include <regex>
#include <sstream>

#include "common/error.h"

namespace augur::bench {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;
using ::testing::Not;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

json header(std::string kind) {
  return {{"schema", "augur.bench/1"},
          {"kind", kind},
          {"machine", {{"cpu", "Test CPU 9000"}, {"cores", 2}}},
          {"models",
           {{{"role", "draft"}, {"path", "models/zoo-draft-q4_0.gguf"}},
            {{"role", "target"}, {"path", "models/zoo-target-q8_0.gguf"}}}}};
}

json stats(double median, double min, double max, double q1, double q3) {
  return {{"median", median}, {"min", min}, {"max", max}, {"q1", q1}, {"q3", q3}};
}

// Three arms: AR baseline, a model-drafted arm (k=8, 9 bins) and an n-gram arm with a name that
// needs escaping (k=4, 5 bins).
json run_report() {
  json report = header("run");
  report["arms"] = {{{"name", "ar"}, {"kind", "ar"}, {"role", "baseline"}},
                    {{"name", "spec:model:8"}, {"kind", "spec"}, {"role", "subject"}},
                    {{"name", "a<b&c"}, {"kind", "spec"}, {"role", "subject"}}};
  report["summary"]["arms"] = {{{"name", "ar"},
                                {"decode_tok_s", stats(310.2, 280.1, 330, 300, 318)},
                                {"tau_hist", json::array()}},
                               {{"name", "spec:model:8"},
                                {"decode_tok_s", stats(406.4, 390, 420, 400, 411)},
                                {"tau_mean", 3.1},
                                {"tau_hist", {5, 4, 3, 2, 2, 1, 1, 0, 2}}},
                               {{"name", "a<b&c"},
                                {"decode_tok_s", stats(350, 340, 360, 345, 355)},
                                {"tau_hist", {1, 1, 2, 0, 4}}}};
  report["summary"]["speedups"] = {{{"subject", "spec:model:8"},
                                    {"baseline", "ar"},
                                    {"metric", "decode_tok_s_median"},
                                    {"value", 1.31}}};
  return report;
}

json curve_point(int ctx, int m, double median, double min, double max) {
  return {{"ctx", ctx}, {"m", m}, {"median_s", median}, {"min_s", min}, {"max_s", max}};
}

json verify_curve_report() {
  json report = header("verify-curve");
  report["config"] = {{"max_m", 4}, {"contexts", {256, 1024}}, {"repeats", 9}, {"threads", 2}};
  report["curve"] = {
      curve_point(1024, 1, 0.004, 0.0038, 0.0043), curve_point(1024, 4, 0.0052, 0.005, 0.006),
      curve_point(256, 1, 0.002, 0.0019, 0.0022), curve_point(256, 2, 0.0021, 0.002, 0.0023),
      curve_point(256, 4, 0.0024, 0.0022, 0.0027)};
  return report;
}

// A per-test directory that does not exist yet; removed again when the test ends.
struct FreshDir {
  std::filesystem::path path;
  FreshDir() {
    const auto* test = ::testing::UnitTest::GetInstance()->current_test_info();
    path = std::filesystem::temp_directory_path() /
           ("augur_svg_" + std::to_string(::getpid()) + "_" + test->name());
    std::filesystem::remove_all(path);
  }
  ~FreshDir() { std::filesystem::remove_all(path); }
};

std::string read_text(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

size_t count(const std::string& text, const std::string& needle) {
  size_t n = 0;
  for (size_t pos = text.find(needle); pos != std::string::npos; pos = text.find(needle, pos + 1)) {
    ++n;
  }
  return n;
}

// A small well-formedness check: every tag closes in order, attribute values are quoted, and
// text holds no raw '<' and no '&' outside an entity. Returns "" or what is wrong.
std::string xml_problem(const std::string& svg) {
  std::vector<std::string> open;
  static const std::regex tag_re(R"(^<(/?)([A-Za-z][\w:-]*)((?:\s+[\w:-]+="[^"<]*")*)\s*(/?)>)");
  static const std::regex entity_re(R"(^&(amp|lt|gt|quot|apos|#\d+);)");
  for (size_t pos = 0; pos < svg.size();) {
    if (svg[pos] == '&') {
      if (!std::regex_search(svg.begin() + pos, svg.end(), entity_re,
                             std::regex_constants::match_continuous)) {
        return "bare '&' at " + std::to_string(pos);
      }
      ++pos;
      continue;
    }
    if (svg[pos] != '<') {
      ++pos;
      continue;
    }
    std::smatch m;
    if (!std::regex_search(svg.cbegin() + pos, svg.cend(), m, tag_re,
                           std::regex_constants::match_continuous)) {
      return "malformed tag at " + std::to_string(pos) + ": " + svg.substr(pos, 40);
    }
    if (m[1].length() > 0) {  // </name>
      if (open.empty() || open.back() != m[2].str()) return "unbalanced </" + m[2].str() + ">";
      open.pop_back();
    } else if (m[4].length() == 0) {
      open.push_back(m[2].str());
    }
    pos += m[0].length();
  }
  return open.empty() ? "" : "unclosed <" + open.back() + ">";
}

void expect_standalone_svg(const std::string& svg) {
  EXPECT_EQ(svg.rfind("<svg", 0), 0u) << svg.substr(0, 80);
  EXPECT_THAT(svg, HasSubstr(R"(xmlns="http://www.w3.org/2000/svg")"));
  EXPECT_THAT(svg, HasSubstr("viewBox=\"0 0 "));
  EXPECT_THAT(svg, HasSubstr("width=\""));
  EXPECT_EQ(xml_problem(svg), "");
  EXPECT_FALSE(std::regex_search(svg, std::regex(R"(\b(nan|inf)\b)", std::regex::icase)));
}

TEST(SvgCharts, WellFormednessCheckerRejectsUnbalancedAndUnescapedDocuments) {
  EXPECT_EQ(xml_problem(R"(<svg a="1"><g><rect x="1"/></g></svg>)"), "");
  EXPECT_NE(xml_problem("<svg><g></svg>"), "");
  EXPECT_NE(xml_problem("<svg><text>a<b</text></svg>"), "");
  EXPECT_NE(xml_problem("<svg><text>a&b</text></svg>"), "");
  EXPECT_NE(xml_problem("<svg>"), "");
}

TEST(SvgCharts, RunReportWritesDecodeAndTauChartsIntoCreatedDirectory) {
  const FreshDir fresh;
  const auto dir = fresh.path / "nested";
  const auto files = write_report_charts(run_report(), dir);
  ASSERT_EQ(files.size(), 2u);
  EXPECT_EQ(files[0], dir / "decode_tok_s.svg");
  EXPECT_EQ(files[1], dir / "tau_hist.svg");
  for (const auto& file : files) {
    ASSERT_TRUE(std::filesystem::exists(file)) << file;
    SCOPED_TRACE(file.string());
    expect_standalone_svg(read_text(file));
  }
}

TEST(SvgCharts, DecodeChartDrawsOneBoxPerArmWithEscapedNamesAndSpeedupLabel) {
  const std::string svg = decode_tok_s_chart(run_report());
  EXPECT_EQ(count(svg, R"(class="arm-box")"), 3u);
  EXPECT_EQ(count(svg, R"(class="whisker")"), 3u);
  EXPECT_THAT(svg, HasSubstr(">a&lt;b&amp;c<"));
  EXPECT_THAT(svg, Not(HasSubstr("a<b&c")));
  EXPECT_THAT(svg, HasSubstr(">spec:model:8<"));
  EXPECT_EQ(count(svg, R"(class="speedup")"), 1u);
  EXPECT_THAT(svg, HasSubstr("1.31× vs ar"));
  EXPECT_THAT(svg, HasSubstr("tokens/s"));
}

TEST(SvgCharts, DecodeChartDrawsTheArArmDifferently) {
  const std::string svg = decode_tok_s_chart(run_report());
  std::vector<std::string> boxes;
  const std::regex box_re(R"(<rect[^>]*arm-box[^>]*>)");
  for (auto it = std::sregex_iterator(svg.begin(), svg.end(), box_re); it != std::sregex_iterator();
       ++it) {
    boxes.push_back(it->str());
  }
  ASSERT_EQ(boxes.size(), 3u);
  EXPECT_THAT(boxes[0], HasSubstr("stroke-dasharray"));  // arms are drawn in report order
  EXPECT_THAT(boxes[1], Not(HasSubstr("stroke-dasharray")));
  EXPECT_THAT(boxes[2], Not(HasSubstr("stroke-dasharray")));
  const auto fill = [](const std::string& rect) { return rect.substr(rect.find("fill=\""), 15); };
  EXPECT_NE(fill(boxes[0]), fill(boxes[1]));
  EXPECT_NE(fill(boxes[0]), fill(boxes[2]));
}

TEST(SvgCharts, ArmKeepsItsColourAcrossRunCharts) {
  const std::string decode = decode_tok_s_chart(run_report());
  const std::string tau = tau_hist_chart(run_report());
  const std::regex fill_re(R"re(class="arm-box" fill="(#[0-9a-f]{6})")re");
  std::vector<std::string> fills;
  for (auto it = std::sregex_iterator(decode.begin(), decode.end(), fill_re);
       it != std::sregex_iterator(); ++it) {
    fills.push_back((*it)[1].str());
  }
  ASSERT_EQ(fills.size(), 3u);
  EXPECT_NE(fills[1], fills[2]);
  EXPECT_EQ(count(tau, R"(class="bar" fill=")" + fills[1]), 9u);  // spec:model:8
  EXPECT_EQ(count(tau, R"(class="bar" fill=")" + fills[2]), 9u);  // a<b&c
  EXPECT_EQ(count(tau, fills[0]), 0u);                            // the AR arm has no bars
}

TEST(SvgCharts, TitleNamesTargetModelFileAndCpu) {
  const std::string svg = decode_tok_s_chart(run_report());
  EXPECT_THAT(svg, HasSubstr("zoo-target-q8_0.gguf"));
  EXPECT_THAT(svg, Not(HasSubstr("models/zoo-target")));
  EXPECT_THAT(svg, HasSubstr("Test CPU 9000"));
}

TEST(SvgCharts, TauHistDrawsOneBarPerSpecArmAndBinUpToKPlusOne) {
  const std::string svg = tau_hist_chart(run_report());
  expect_standalone_svg(svg);
  EXPECT_EQ(count(svg, R"(class="bar")"), 2u * 9u);  // 2 spec arms, k = 8 -> 1..9 tokens
  EXPECT_THAT(svg, HasSubstr(">9</text>"));
  EXPECT_THAT(svg, Not(HasSubstr(">10</text>")));
  EXPECT_THAT(svg, HasSubstr("a&lt;b&amp;c"));
  EXPECT_THAT(svg, HasSubstr("fraction of cycles"));
  // The largest fraction is 4/8 = 0.5 (a<b&c's 5th bin): the axis ends on the 0.5 tick.
  EXPECT_THAT(svg, HasSubstr(">0.5</text>"));
  EXPECT_THAT(svg, Not(HasSubstr(">0.6</text>")));
}

TEST(SvgCharts, RunReportWithoutTauHistWritesOnlyDecodeChart) {
  json report = run_report();
  for (json& arm : report["summary"]["arms"]) arm.erase("tau_hist");
  const FreshDir fresh;
  const auto files = write_report_charts(report, fresh.path);
  ASSERT_EQ(files.size(), 1u);
  EXPECT_EQ(files[0].filename(), "decode_tok_s.svg");
}

TEST(SvgCharts, VerifyCurveDrawsOneLineAndBandPerContextAndReferenceAtOne) {
  const FreshDir fresh;
  const auto& dir = fresh.path;
  const auto files = write_report_charts(verify_curve_report(), dir);
  ASSERT_EQ(files.size(), 1u);
  EXPECT_EQ(files[0], dir / "verify_curve.svg");
  const std::string svg = read_text(files[0]);
  expect_standalone_svg(svg);
  EXPECT_EQ(count(svg, R"(class="series")"), 2u);
  EXPECT_EQ(count(svg, R"(class="band")"), 2u);
  EXPECT_EQ(count(svg, R"(class="ref")"), 1u);
  EXPECT_THAT(svg, HasSubstr("stroke-dasharray"));
  EXPECT_THAT(svg, HasSubstr(">ctx 256<"));
  EXPECT_THAT(svg, HasSubstr(">ctx 1024<"));
  EXPECT_THAT(svg, HasSubstr("T_V(M) / T_V(1)"));
  // ctx 256 has three points, ctx 1024 two; contexts are drawn in ascending order.
  std::smatch line;
  ASSERT_TRUE(
      std::regex_search(svg, line, std::regex(R"re(<polyline points="([^"]*)" class="series")re")));
  EXPECT_EQ(count(line[1].str(), ","), 3u);
}

TEST(SvgCharts, NonFiniteValuesAreSkippedNotPrinted) {
  json run = run_report();
  run["summary"]["arms"][1]["decode_tok_s"]["q1"] = kNaN;  // box falls back to a dot
  run["summary"]["arms"][2]["decode_tok_s"]["median"] = kNaN;
  run["summary"]["arms"][2]["decode_tok_s"]["max"] = std::numeric_limits<double>::infinity();
  run["summary"]["arms"][1]["tau_hist"][0] = kNaN;
  run["summary"]["speedups"][0]["value"] = kNaN;
  const std::string decode = decode_tok_s_chart(run);
  expect_standalone_svg(decode);
  EXPECT_EQ(count(decode, R"(class="arm-box")"), 2u);  // the arm without a median is not drawn
  EXPECT_THAT(decode, HasSubstr("no data"));
  expect_standalone_svg(tau_hist_chart(run));

  json curve = verify_curve_report();
  curve["curve"][1]["min_s"] = kNaN;
  curve["curve"][3]["median_s"] = kNaN;
  curve["curve"][4]["max_s"] = nullptr;
  expect_standalone_svg(verify_curve_chart(curve));
}

TEST(SvgCharts, OutputIsDeterministic) {
  EXPECT_EQ(decode_tok_s_chart(run_report()), decode_tok_s_chart(run_report()));
  EXPECT_EQ(tau_hist_chart(run_report()), tau_hist_chart(run_report()));
  EXPECT_EQ(verify_curve_chart(verify_curve_report()), verify_curve_chart(verify_curve_report()));
}

void expect_invalid(const json& report, const std::string& names) {
  const FreshDir fresh;
  const auto& dir = fresh.path;
  try {
    write_report_charts(report, dir);
    ADD_FAILURE() << "no InvalidArgument; expected one naming " << names;
  } catch (const InvalidArgument& e) {
    EXPECT_THAT(e.what(), HasSubstr(names));
  }
  EXPECT_FALSE(std::filesystem::exists(dir)) << "a bad report must leave no output";
}

TEST(SvgCharts, BadReportsThrowInvalidArgumentNamingWhatIsMissing) {
  expect_invalid(header("mystery"), "mystery");
  json no_kind = run_report();
  no_kind.erase("kind");
  expect_invalid(no_kind, "kind");
  json no_summary = run_report();
  no_summary.erase("summary");
  expect_invalid(no_summary, "summary");
  json no_arms = run_report();
  no_arms["summary"].erase("arms");
  expect_invalid(no_arms, "arms");
  json no_tok_s = run_report();
  no_tok_s["summary"]["arms"][1].erase("decode_tok_s");
  expect_invalid(no_tok_s, "summary.arms[1] has no 'decode_tok_s'");
  json no_curve = verify_curve_report();
  no_curve.erase("curve");
  expect_invalid(no_curve, "curve");
  json no_base = verify_curve_report();
  no_base["curve"].erase(2);  // ctx 256, m = 1
  expect_invalid(no_base, "ctx 256 has no m=1 point");
  json no_m = verify_curve_report();
  no_m["curve"][0].erase("m");
  expect_invalid(no_m, "curve[0] has no 'm'");
  json nan_ctx = verify_curve_report();
  nan_ctx["curve"][0]["ctx"] = kNaN;
  expect_invalid(nan_ctx, "curve[0].ctx must be a finite number");
}

TEST(SvgCharts, NiceAxisUsesOneTwoFiveStepsAndEndsOnTicks) {
  for (const auto& [lo, hi] : std::vector<std::pair<double, double>>{
           {0, 330}, {0, 0.93}, {0, 1}, {0, 17}, {250, 420}, {0, 0.00042}, {5, 5}}) {
    const NiceAxis axis = nice_axis(lo, hi);
    SCOPED_TRACE(testing::Message() << lo << ".." << hi);
    const double mantissa = axis.step / std::pow(10.0, std::floor(std::log10(axis.step) + 1e-9));
    EXPECT_TRUE(std::abs(mantissa - 1) < 1e-9 || std::abs(mantissa - 2) < 1e-9 ||
                std::abs(mantissa - 5) < 1e-9)
        << axis.step;
    EXPECT_LE(axis.lo, lo);
    EXPECT_GE(axis.hi, hi);
    EXPECT_GT(axis.hi, axis.lo);
    ASSERT_GE(axis.ticks.size(), 2u);
    EXPECT_LE(axis.ticks.size(), 12u);
    EXPECT_DOUBLE_EQ(axis.ticks.front(), axis.lo);
    EXPECT_DOUBLE_EQ(axis.ticks.back(), axis.hi);
  }
  EXPECT_DOUBLE_EQ(nice_axis(0, 0.93).step, 0.2);
  EXPECT_DOUBLE_EQ(nice_axis(0, 330).hi, 400);
}

TEST(SvgCharts, TickLabelsCarryOnlyTheDecimalsTheStepNeeds) {
  EXPECT_EQ(tick_label(3 * 0.2, 0.2), "0.6");
  EXPECT_EQ(tick_label(300, 50), "300");
  EXPECT_EQ(tick_label(0.0005, 0.0005), "0.0005");
  EXPECT_EQ(tick_label(-1e-17, 0.1), "0.0");
}

TEST(SvgCharts, XmlEscapeEscapesMarkupCharacters) {
  EXPECT_EQ(xml_escape(R"(a<b&c>"d")"), "a&lt;b&amp;c&gt;&quot;d&quot;");
  EXPECT_EQ(xml_escape("plain τ"), "plain τ");
}

}  // namespace
}  // namespace augur::bench
