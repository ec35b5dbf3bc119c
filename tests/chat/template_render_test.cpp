// The Jinja2 subset, construct by construct. Every expected string here was produced by Python
// Jinja2 3.1 with the environment of shared/chat-templates/README.md.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "chat/chat_template.h"
#include "chat_test_support.h"

namespace augur {
namespace {

using nlohmann::ordered_json;
using testing::render;

ordered_json two_messages() {
  return ordered_json::parse(
      R"({"messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "yo"}]})");
}

TEST(TemplateWhitespace, MinusStripsAllWhitespaceOnThatSide) {
  EXPECT_EQ(render("a  {%- if true -%}  b  {%- endif -%}  c"), "abc");
  EXPECT_EQ(render("x {{- ' y ' -}} z"), "x y z");
}

TEST(TemplateWhitespace, TrimAndLstripBlocksRemoveTagLines) {
  EXPECT_EQ(render("a\n  {% if true %}\n  b\n  {% endif %}\nc"), "a\n  b\nc");
  // A plus sign turns lstrip_blocks (left) and trim_blocks (right) off for that tag.
  EXPECT_EQ(render("a\n  {%+ if true %}\nb{% endif +%}\nc"), "a\n  b\nc");
}

TEST(TemplateWhitespace, CommentsVanishWithTheirLines) {
  EXPECT_EQ(render("a\n{# note #}\nb\n  {#- n -#}\n c"), "a\nbc");
}

TEST(TemplateWhitespace, ExpressionTagsAreNotTrimmed) {
  // trim_blocks and lstrip_blocks apply to {% %} and {# #} only.
  EXPECT_EQ(render("a\n  {{ 'b' }}\nc"), "a\n  b\nc");
}

TEST(TemplateWhitespace, OneTrailingNewlineOfTheSourceIsDropped) {
  EXPECT_EQ(render("x\n"), "x");
  EXPECT_EQ(render("x\n\n"), "x\n");
  EXPECT_EQ(render("a\r\nb"), "a\nb");
}

// Planted defect: a renderer that ignored whitespace control would produce these strings, so
// the checks above would catch it.
TEST(TemplateWhitespace, PlantedDefectIgnoringWhitespaceControlIsCaught) {
  EXPECT_NE(render("a  {%- if true -%}  b  {%- endif -%}  c"), "a    b    c");
  EXPECT_NE(render("a\n  {% if true %}\n  b\n  {% endif %}\nc"), "a\n  \n  b\n  \nc");
}

TEST(TemplateLoop, LoopVariables) {
  EXPECT_EQ(render("{% for m in messages %}{{ loop.index }}{{ loop.index0 }}{{ loop.first }}"
                   "{{ loop.last }}{{ loop.length }}{{ loop.revindex }};{% endfor %}",
                   two_messages()),
            "10TrueFalse22;21FalseTrue21;");
}

TEST(TemplateLoop, BreakContinueElseAndFilter) {
  EXPECT_EQ(render("{% for i in [1,2,3,4] %}{% if i == 3 %}{% break %}{% endif %}"
                   "{% if i == 1 %}{% continue %}{% endif %}{{ i }}{% else %}none{% endfor %}"),
            "2");
  EXPECT_EQ(render("{% for i in [] %}{{ i }}{% else %}empty{% endfor %}"), "empty");
  EXPECT_EQ(render("{% for m in messages if m.role != 'user' %}{{ loop.index }}{{ m.content }}"
                   "{% endfor %}",
                   two_messages()),
            "1yo");
  EXPECT_EQ(render("{% for a, b in [[1, 2], [3, 4]] %}{{ a + b }}{% endfor %}"), "37");
  EXPECT_EQ(render("{% for k, v in {'b': 1, 'a': 2}|items %}{{ k }}={{ v }},{% endfor %}"),
            "b=1,a=2,");
}

TEST(TemplateScope, SetInsideALoopDoesNotLeakButNamespaceDoes) {
  EXPECT_EQ(render("{% set x = 1 %}{% for i in [1] %}{% set x = 2 %}{% endfor %}{{ x }}"), "1");
  EXPECT_EQ(render("{% set ns = namespace(count=0, seen='') %}{% for m in messages %}"
                   "{% set ns.count = ns.count + 1 %}{% set ns.seen = ns.seen ~ m.role %}"
                   "{% endfor %}{{ ns.count }} {{ ns.seen }}",
                   two_messages()),
            "2 userassistant");
  // Each iteration starts from the outer scope again.
  EXPECT_EQ(render("{% for i in [1,2] %}{{ y }}{% set y = i %}{{ y }}{% endfor %}[{{ y }}]"),
            "12[]");
}

TEST(TemplateScope, MacrosAndBlockSet) {
  EXPECT_EQ(render("{% macro greet(name, punct='!') %}Hi {{ name }}{{ punct }}{% endmacro %}"
                   "{{ greet('Bo') }} {{ greet('Al', punct='?') }}"),
            "Hi Bo! Hi Al?");
  EXPECT_EQ(render("{% set block %}x{{ 1 + 1 }}y{% endset %}[{{ block }}]"), "[x2y]");
}

TEST(TemplateFilters, StringsAndLengths) {
  EXPECT_EQ(render("{{ '  a b  '|trim }}|{{ 'xxaxx'|trim('x') }}|{{ [1,2,3]|length }}|"
                   "{{ 'héllo'|length }}|{{ {'a':1}|length }}"),
            "a b|a|3|5|1");
  EXPECT_EQ(render("{{ 'abc'|reverse }} {{ [1,2]|reverse|list }} {{ 'a b'|replace(' ', '_') }} "
                   "{{ 3.0|string }} {{ 'hi'|capitalize }}"),
            "cba [2, 1] a_b 3.0 Hi");
  EXPECT_EQ(render("{{ -1|abs }} {{ 3|float }} {{ '42'|int + 1 }} {{ 'x'|int }} {{ 2.7|int }}"),
            "1 3.0 43 0 2");
  EXPECT_EQ(render("{{ 'line1\\nline2\\n\\nline4'|indent(2) }}|{{ 'a\\nb'|indent(2, true) }}"),
            "line1\n  line2\n\n  line4|  a\n  b");
}

TEST(TemplateFilters, SelectMapJoinDefault) {
  EXPECT_EQ(render("{{ messages|selectattr('role', 'equalto', 'user')|map(attribute='content')"
                   "|join(', ') }}",
                   two_messages()),
            "hi");
  EXPECT_EQ(render("{{ ['a','b','c']|reject('equalto','b')|list }}|{{ [1,0,2]|select|list }}|"
                   "{{ messages|map(attribute='role')|first }}|{{ [1,2]|last }}",
                   two_messages()),
            "['a', 'c']|[1, 2]|user|2");
  EXPECT_EQ(render("{{ 'x'|default('d') }}{{ undefined_var|default('d') }}"
                   "{{ ''|default('e', true) }}"),
            "xde");
}

TEST(TemplateToJson, MatchesPythonJsonDumps) {
  EXPECT_EQ(render("{{ {'b': 1, 'a': [1, 2.5, none, true, 'é\"\\n']}|tojson }}"),
            "{\"b\": 1, \"a\": [1, 2.5, null, true, \"é\\\"\\n\"]}");
  EXPECT_EQ(render("{{ {'b': 1, 'a': [1, {}], 'c': []}|tojson(indent=2) }}"),
            "{\n  \"b\": 1,\n  \"a\": [\n    1,\n    {}\n  ],\n  \"c\": []\n}");
  EXPECT_EQ(render("{{ {'b': 1, 'a': 2}|tojson(sort_keys=true) }}|"
                   "{{ [1, 2]|tojson(separators=(',', ':')) }}|{{ 'tab\\t\\u0001'|tojson }}"),
            "{\"a\": 2, \"b\": 1}|[1,2]|\"tab\\t\\u0001\"");
  EXPECT_EQ(render("{{ [1, {'a': 2}]|tojson(indent='\\t') }}"),
            "[\n\t1,\n\t{\n\t\t\"a\": 2\n\t}\n]");
}

TEST(TemplateToJson, KeepsTheOrderOfTheInputJson) {
  const auto context =
      ordered_json::parse(R"({"tool": {"name": "f", "arguments": {"z": 1, "a": 2}}})");
  EXPECT_EQ(render("{{ tool|tojson }}", context),
            "{\"name\": \"f\", \"arguments\": {\"z\": 1, \"a\": 2}}");
}

TEST(TemplatePython, NumbersPrintLikePython) {
  EXPECT_EQ(render("{{ 1.0 }} {{ 1e16 }} {{ 1e15 }} {{ 0.0001 }} {{ 0.00001 }} {{ 3/2 }} {{ 4/2 }} "
                   "{{ 7//2 }} {{ -7//2 }} {{ -7 % 3 }} {{ 2**10 }} {{ 0.1 + 0.2 }} {{ 10/3 }} "
                   "{{ true + 1 }}"),
            "1.0 1e+16 1000000000000000.0 0.0001 1e-05 1.5 2.0 3 -4 2 1024 0.30000000000000004 "
            "3.3333333333333335 2");
  // Literals beyond double's range are Python's float(): inf, or 0.0 (a fuzz finding: they threw
  // std::out_of_range out of the lexer).
  EXPECT_EQ(render("{{ 3e555 }} {{ -1e999 }} {{ 1e-999 }}"), "inf -inf 0.0");
  EXPECT_EQ(render("{{ none }} {{ true }} {{ false }} {{ [1, 'a', none, {'k': 1.5}] }} "
                   "{{ undefined_var }}|"),
            "None True False [1, 'a', None, {'k': 1.5}] |");
}

TEST(TemplatePython, Truthiness) {
  EXPECT_EQ(render("{% if '' %}a{% elif [] %}b{% elif {} %}c{% elif 0 %}d{% elif 0.0 %}e"
                   "{% elif none %}f{% elif undefined_var %}g{% elif ' ' %}h{% endif %}"),
            "h");
}

TEST(TemplatePython, SlicingByCodePoint) {
  EXPECT_EQ(render("{{ 'héllo'[::-1] }} {{ 'abcdef'[1:] }} {{ 'abcdef'[:-2] }} {{ 'abcdef'[::2] }} "
                   "{{ [1,2,3,4][1:3] }} {{ [1,2,3][-1] }} {{ 'abc'[5:] }}|{{ [1,2,3][::-1] }} "
                   "{{ 'héllo'[1] }}"),
            "olléh bcdef abcd ace [2, 3] 3 |[3, 2, 1] é");
}

TEST(TemplatePython, StringMethods) {
  EXPECT_EQ(render("{{ '  hi  '.strip() }}|{{ '\\n\\nhi'.lstrip('\\n') }}|{{ 'hi!!'.rstrip('!') }}|"
                   "{{ 'a</think>b'.split('</think>')[-1] }}|{{ 'a b  c'.split() }}|"
                   "{{ 'ab'.startswith('a') }}{{ 'ab'.endswith('a') }}|"
                   "{{ 'a-b-c'.replace('-', '+') }}|{{ 'a-b-c'.replace('-', '', 1) }}"),
            "hi|hi|hi|b|['a', 'b', 'c']|TrueFalse|a+b+c|ab-c");
  EXPECT_EQ(render("{{ 'Hello World'.lower() }} {{ 'hi'.upper() }} {{ 'hello world'.title() }} "
                   "{{ 'x'|upper }} {{ 'a,b'.split(',', 1) }}"),
            "hello world HI Hello World X ['a', 'b']");
  EXPECT_EQ(render("{{ '  a  b c  '.split(none, 1) }}|{{ 'a,b,c'.split(',', 1) }}|"
                   "{{ ' x '.split() }}"),
            "['a', 'b c  ']|['a', 'b,c']|['x']");
  EXPECT_EQ(render("{{ {'a': 1}.get('a') }}{{ {'a': 1}.get('b') }}{{ {'a': 1}.get('b', 2) }} "
                   "{{ {'a': 1, 'b': 2}.keys()|list }} {{ {'a': 1}.values()|list }}"),
            "1None2 ['a', 'b'] [1]");
}

TEST(TemplatePython, TestsAndMembership) {
  EXPECT_EQ(render("{{ x is defined }}{{ y is defined }}{{ y is not defined }}{{ none is none }}"
                   "{{ 'a' is string }}{{ {} is mapping }}{{ [] is mapping }}{{ 1 is number }}"
                   "{{ false is false }}{{ 0 is false }}{{ [] is iterable }}{{ 3 is odd }}"
                   "{{ 4 is even }}{{ 6 is divisibleby 3 }}",
                   ordered_json::parse(R"({"x": 1})")),
            "TrueFalseTrueTrueTrueTrueFalseTrueTrueFalseTrueTrueTrueTrue");
  EXPECT_EQ(render("{{ 'a' in 'cat' }}{{ 'z' not in 'cat' }}{{ 1 in [1,2] }}{{ 'k' in {'k': 1} }}"
                   "{{ 'v' in {'k': 'v'} }}{{ 'x' in undefined_var }}"),
            "TrueTrueTrueTrueFalseFalse");
}

TEST(TemplatePython, ConcatenationConditionalsAndLookups) {
  EXPECT_EQ(render("{{ 'a' ~ 1 ~ none ~ undefined_var }}|{{ 'a' + 'b' }}|{{ [1] + [2] }}|"
                   "{{ 'ab' * 2 }}"),
            "a1None|ab|[1, 2]|abab");
  EXPECT_EQ(render("{{ 'a' if true else 'b' }}{{ 'a' if false else 'b' }}[{{ 'a' if false }}]"),
            "ab[]");
  EXPECT_EQ(render("{{ messages[0].role }}|{{ messages[5] }}|{{ messages[0]['content'] }}|"
                   "{{ messages[0].nothing }}|{{ messages|length - 1 }}",
                   two_messages()),
            "user||hi||1");
}

TEST(TemplateGlobals, StrftimeRangeDictAndRaise) {
  EXPECT_EQ(render("{{ strftime_now('%Y-%m-%d %H:%M %B %d, %Y') }}"),
            "2026-12-03 09:00 December 03, 2026");
  EXPECT_EQ(render("{{ range(3)|list }} {{ range(1, 7, 2)|list }} {{ dict(a=1)|tojson }}"),
            "[0, 1, 2] [1, 3, 5] {\"a\": 1}");
  try {
    render("{{ raise_exception('nope: ' ~ 3) }}");
    FAIL() << "raise_exception did not raise";
  } catch (const chat::TemplateRaised& e) {
    EXPECT_STREQ(e.what(), "nope: 3");
  }
}

TEST(ChatMl, FallbackRendersChatMl) {
  const auto context = ordered_json::parse(
      R"({"messages": [{"role": "user", "content": "hi"}], "add_generation_prompt": true})");
  EXPECT_EQ(render(chat::chatml_template(), context),
            "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n");
}

}  // namespace
}  // namespace augur
