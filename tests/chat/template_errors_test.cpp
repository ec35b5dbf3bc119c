// What the renderer refuses, and how: a construct outside the subset is Unsupported naming it
// and its line (at parse time when the source shows it), a syntax error is a FormatError with
// the line, a runtime error (wrong type, undefined function) is an InvalidArgument with the
// line. Nothing outside the subset renders.
#include <gtest/gtest.h>

#include <string>

#include "chat/chat_template.h"
#include "chat_test_support.h"

namespace augur {
namespace {

// The message of the exception `source` throws when parsed and rendered, checked to be `E`.
template <typename E>
std::string error_of(const std::string& source) {
  try {
    testing::render(source);
  } catch (const E& e) {
    return e.what();
  } catch (const std::exception& e) {
    ADD_FAILURE() << "wrong exception type for " << source << ": " << e.what();
    return "";
  }
  ADD_FAILURE() << "no exception for " << source;
  return "";
}

template <typename E>
std::string parse_error_of(const std::string& source) {
  try {
    (void)chat::ChatTemplate::parse(source);
  } catch (const E& e) {
    return e.what();
  } catch (const std::exception& e) {
    ADD_FAILURE() << "wrong exception type for " << source << ": " << e.what();
    return "";
  }
  ADD_FAILURE() << "parsed: " << source;
  return "";
}

TEST(TemplateUnsupported, UnknownFilterNamedWithItsLineAtParseTime) {
  EXPECT_EQ(parse_error_of<Unsupported>("a\nb\n{{ x | wordwrap }}"),
            "line 3: unsupported filter 'wordwrap'");
  // Even in a branch that would never run.
  EXPECT_EQ(parse_error_of<Unsupported>("{% if false %}\n{{ x|sort }}{% endif %}"),
            "line 2: unsupported filter 'sort'");
}

TEST(TemplateUnsupported, UnknownTestNamedWithItsLine) {
  EXPECT_EQ(parse_error_of<Unsupported>("\n{% if x is escaped %}{% endif %}"),
            "line 2: unsupported test 'escaped'");
}

TEST(TemplateUnsupported, UnimplementedTagsNamedWithTheirLine) {
  EXPECT_EQ(parse_error_of<Unsupported>("x\n{% call foo() %}y{% endcall %}"),
            "line 2: unsupported tag 'call'");
  EXPECT_EQ(parse_error_of<Unsupported>("{% include 'other.jinja' %}"),
            "line 1: unsupported tag 'include'");
  EXPECT_EQ(parse_error_of<Unsupported>("\n\n{% filter upper %}x{% endfilter %}"),
            "line 3: unsupported tag 'filter'");
  EXPECT_EQ(parse_error_of<Unsupported>("\n{% raw %}{{ x }}{% endraw %}"),
            "line 2: unsupported tag 'raw'");
}

TEST(TemplateUnsupported, OtherConstructsNamedWithTheirLine) {
  EXPECT_EQ(parse_error_of<Unsupported>("{% for x in y recursive %}{% endfor %}"),
            "line 1: unsupported recursive for loop");
  EXPECT_EQ(parse_error_of<Unsupported>("\n{{ 1 < 2 < 3 }}"),
            "line 2: unsupported chained comparison");
  EXPECT_EQ(parse_error_of<Unsupported>("{% set c = cycler('a', 'b') %}"),
            "line 1: unsupported function 'cycler'");
  EXPECT_EQ(parse_error_of<Unsupported>("{% macro m() %}\n{{ varargs }}{% endmacro %}"),
            "line 2: unsupported macro variable 'varargs'");
  EXPECT_EQ(parse_error_of<Unsupported>("{{ f(*args) }}"),
            "line 1: unsupported *args/**kwargs in a call");
}

TEST(TemplateUnsupported, UnknownMethodFailsAtRunTimeWithItsLine) {
  EXPECT_EQ(error_of<Unsupported>("a\n{{ 'x {}'.format(1) }}"),
            "line 2: unsupported str method 'format'");
  EXPECT_EQ(error_of<Unsupported>("{{ 'x' % 1 }}"),
            "line 1: unsupported printf-style string formatting ('%')");
  EXPECT_EQ(error_of<Unsupported>("{{ 'É'|lower }}"),
            "line 1: unsupported lower of a non-ASCII string");
  EXPECT_EQ(error_of<Unsupported>("{{ ['a']|map('wordwrap')|list }}"),
            "line 1: unsupported filter 'wordwrap'");
}

TEST(TemplateSyntax, ErrorsCarryTheirLine) {
  EXPECT_EQ(parse_error_of<FormatError>("a\n{{ 1 + }}"),
            "line 2: unexpected end of expression '}}'");
  EXPECT_EQ(parse_error_of<FormatError>("{% if x %}\nunclosed"),
            "line 2: unexpected end of template, expected '{% endif %}'");
  EXPECT_EQ(parse_error_of<FormatError>("\n\n{% endfor %}"), "line 3: unknown tag 'endfor'");
  EXPECT_EQ(parse_error_of<FormatError>("\n{{ 'abc }}"), "line 2: unterminated string literal");
  EXPECT_EQ(parse_error_of<FormatError>("{{ x\n\n"), "line 1: missing '}}' to end the expression");
  EXPECT_EQ(parse_error_of<FormatError>("{% frobnicate %}"), "line 1: unknown tag 'frobnicate'");
  EXPECT_EQ(parse_error_of<FormatError>("\n{% break %}"), "line 2: 'break' outside a for loop");
  EXPECT_EQ(parse_error_of<FormatError>("{# never closed"), "line 1: missing end of comment tag");
}

TEST(TemplateRuntime, ErrorsCarryTheirLine) {
  EXPECT_EQ(error_of<InvalidArgument>("\n{{ 'a' + 1 }}"),
            "line 2: unsupported operand type(s) for +: 'str' and 'int'");
  EXPECT_EQ(error_of<InvalidArgument>("\n\n{{ foo() }}"), "line 3: 'foo' is undefined");
  EXPECT_EQ(error_of<InvalidArgument>("{{ 'x'\n+\nundefined_var }}"),
            "line 2: 'undefined_var' is undefined");
  EXPECT_EQ(error_of<InvalidArgument>("{{ missing.attr }}"), "line 1: 'missing' is undefined");
  EXPECT_EQ(error_of<InvalidArgument>("{% set x = 1 %}{% set x.a = 2 %}"),
            "line 1: cannot assign attribute on non-namespace object 'x'");
  EXPECT_EQ(error_of<InvalidArgument>("{{ [1]|tojson }}{{ undefined_var|tojson }}"),
            "line 1: Object of type undefined is not JSON serializable");
}

TEST(TemplateRuntime, RaisedMessageIsExactlyTheTemplatesText) {
  try {
    testing::render("{{ raise_exception('Conversation roles must alternate') }}");
    FAIL() << "no exception";
  } catch (const chat::TemplateRaised& e) {
    EXPECT_STREQ(e.what(), "Conversation roles must alternate");
  }
}

}  // namespace
}  // namespace augur

namespace augur {
namespace {

std::string repeated(std::string_view piece, int n) {
  std::string out;
  for (int i = 0; i < n; ++i) out += piece;
  return out;
}

// A GGUF's chat template is a stranger's code: what would exhaust the stack, hang or fill memory
// is refused with a named error, and the same shapes at a real template's size still render.
TEST(TemplateLimits, DeepNestingIsRefusedAtParseTimeAndModestNestingParses) {
  const std::string parens = "{{ " + repeated("(", 20000) + "1" + repeated(")", 20000) + " }}";
  EXPECT_NE(parse_error_of<Unsupported>(parens).find("nesting deeper than 100 levels"),
            std::string::npos);
  EXPECT_NE(parse_error_of<Unsupported>("{{ " + repeated("-", 30000) + "1 }}").find("nesting"),
            std::string::npos);
  EXPECT_NE(parse_error_of<Unsupported>("{{ 1" + repeated(" + 1", 30000) + " }}").find("nesting"),
            std::string::npos);
  EXPECT_NE(parse_error_of<Unsupported>("{{ x" + repeated(".a", 30000) + " }}").find("nesting"),
            std::string::npos);
  const std::string ifs = repeated("{% if 1 %}", 5000) + "x" + repeated("{% endif %}", 5000);
  EXPECT_NE(parse_error_of<Unsupported>(ifs).find("nesting"), std::string::npos);
  EXPECT_EQ(testing::render("{{ " + repeated("(", 20) + "1" + repeated(")", 20) + " }}"), "1");
  EXPECT_EQ(testing::render("{{ 0" + repeated(" + 1", 40) + " }}"), "40");
  EXPECT_EQ(testing::render(repeated("{% if 1 %}", 20) + "x" + repeated("{% endif %}", 20)), "x");
}

TEST(TemplateLimits, RunawayRecursionWorkAndOutputAreRefusedByName) {
  const std::string recursion = "{% macro f(n) %}{{ f(n) }}{% endmacro %}\n{{ f(1) }}";
  EXPECT_NE(error_of<InvalidArgument>(recursion).find("macro calls nested deeper than 32"),
            std::string::npos);
  const std::string loops =
      "{% for a in range(60000) %}{% for b in range(60000) %}x{% endfor %}{% endfor %}";
  EXPECT_NE(error_of<InvalidArgument>(loops).find("statements and loop iterations"),
            std::string::npos);
  const std::string doubling =
      "{% set ns = namespace(s='ab') %}{% for i in range(40) %}{% set ns.s = ns.s ~ ns.s %}"
      "{% endfor %}{{ ns.s | length }}";
  EXPECT_NE(error_of<InvalidArgument>(doubling).find("exceeds the template limit"),
            std::string::npos);
  EXPECT_NE(error_of<InvalidArgument>("{{ ('x' * 60000) * 60000 }}").find("template limit"),
            std::string::npos);
  EXPECT_NE(error_of<InvalidArgument>("{% for i in range(1000) %}{{ 'x' * 60000 }}{% endfor %}")
                .find("template limit"),
            std::string::npos);
  // Bounded versions of each render.
  EXPECT_EQ(testing::render("{% macro f(n) %}{% if n > 0 %}{{ f(n - 1) }}{% endif %}{{ n }}"
                            "{% endmacro %}{{ f(5) }}"),
            "012345");
  EXPECT_EQ(testing::render("{{ ('x' * 1000) | length }}"), "1000");
}

}  // namespace
}  // namespace augur
