// The split patterns made of character ranges and simple classes: DeepSeek's script ranges,
// CJK and kana runs, digit grouping, punctuation runs, BLOOM's word pattern and Chameleon's
// special-purpose ones. Range patterns are matched on Fragment::wide(), the codepoints llama.cpp's
// std::wregex sees; \p{...} classes as its collapsed std::regex sees them (split_pattern.h).
#include <algorithm>
#include <span>
#include <string_view>

#include "tokenizer/split_pattern.h"

namespace augur::tokenizer::split {

namespace {

struct Range {
  uint32_t first, last;
};

bool in_ranges(uint32_t cpt, std::span<const Range> ranges) {
  for (const Range& r : ranges) {
    if (cpt >= r.first && cpt <= r.last) return true;
  }
  return false;
}

// DeepSeek LLM's letter class: the cased letters (Lu, Ll, Lt) of the scripts it lists.
constexpr Range kDeepseekLatin[] = {
    {0x0041, 0x005A},   {0x0061, 0x007A},   {0x00B5, 0x00B5},   {0x00C0, 0x00D6},
    {0x00D8, 0x00F6},   {0x00F8, 0x01BA},   {0x01BC, 0x01BF},   {0x01C4, 0x0293},
    {0x0295, 0x02AF},   {0x0370, 0x0373},   {0x0376, 0x0377},   {0x037B, 0x037D},
    {0x037F, 0x037F},   {0x0386, 0x0386},   {0x0388, 0x038A},   {0x038C, 0x038C},
    {0x038E, 0x03A1},   {0x03A3, 0x03F5},   {0x03F7, 0x0481},   {0x048A, 0x052F},
    {0x0531, 0x0556},   {0x10A0, 0x10C5},   {0x13A0, 0x13F5},   {0x13F8, 0x13FD},
    {0x1C90, 0x1CBA},   {0x1CBD, 0x1CBF},   {0x1D00, 0x1D2B},   {0x1D6B, 0x1D77},
    {0x1D79, 0x1D9A},   {0x1E00, 0x1F15},   {0x1F18, 0x1F1D},   {0x1F20, 0x1F45},
    {0x1F48, 0x1F4D},   {0x1F50, 0x1F57},   {0x1F59, 0x1F59},   {0x1F5B, 0x1F5B},
    {0x1F5D, 0x1F5D},   {0x1F5F, 0x1F7D},   {0x1F80, 0x1FB4},   {0x1FB6, 0x1FBC},
    {0x1FBE, 0x1FBE},   {0x1FC2, 0x1FC4},   {0x1FC6, 0x1FCC},   {0x1FD0, 0x1FD3},
    {0x1FD6, 0x1FDB},   {0x1FE0, 0x1FEC},   {0x1FF2, 0x1FF4},   {0x1FF6, 0x1FFC},
    {0x2102, 0x2102},   {0x2107, 0x2107},   {0x210A, 0x2113},   {0x2115, 0x2115},
    {0x2119, 0x211D},   {0x2124, 0x2124},   {0x2126, 0x2126},   {0x2128, 0x2128},
    {0x212A, 0x212D},   {0x212F, 0x2134},   {0x2139, 0x2139},   {0x213C, 0x213F},
    {0x2145, 0x2149},   {0x214E, 0x214E},   {0x2183, 0x2184},   {0x2C00, 0x2C7B},
    {0x2C7E, 0x2CE4},   {0x2CEB, 0x2CEE},   {0x2CF2, 0x2CF3},   {0xA640, 0xA66D},
    {0xA680, 0xA69B},   {0xA722, 0xA76F},   {0xA771, 0xA787},   {0xA78B, 0xA78E},
    {0xAB70, 0xABBF},   {0xFB00, 0xFB06},   {0xFB13, 0xFB17},   {0xFF21, 0xFF3A},
    {0xFF41, 0xFF5A},   {0x10400, 0x1044F}, {0x104B0, 0x104D3}, {0x104D8, 0x104FB},
    {0x10C80, 0x10CB2}, {0x10CC0, 0x10CF2}, {0x118A0, 0x118DF}, {0x1E900, 0x1E943},
};
// [!-/:-~！-／：-～‘-‟　-。]: ASCII punctuation and symbols (and, from ':' to '~', the ASCII
// letters), their fullwidth forms, curly quotes, U+3000-U+3002.
constexpr Range kDeepseekPunctuation[] = {{0x21, 0x2F},     {0x3A, 0x7E},     {0xFF01, 0xFF0F},
                                          {0xFF1A, 0xFF5E}, {0x2018, 0x201F}, {0x3000, 0x3002}};
// [一-龥ࠀ-一가-퟿]: U+0800 up to the end of the common CJK ideographs, and Hangul.
constexpr Range kDeepseekCjk[] = {{0x4E00, 0x9FA5}, {0x0800, 0x4E00}, {0xAC00, 0xD7FF}};
// [一-龥぀-ゟ゠-ヿ]: CJK ideographs, hiragana, katakana.
constexpr Range kCjkKana[] = {{0x4E00, 0x9FA5}, {0x3040, 0x309F}, {0x30A0, 0x30FF}};
// youtu's four classes, tried in this order: Hangul syllables and jamo; CJK punctuation;
// Bopomofo; CJK and kana.
constexpr Range kYoutuHangul[] = {{0xAC00, 0xD7A3}, {0x3131, 0x318E}};
constexpr Range kYoutuPunctuation[] = {{0xFF01, 0xFF01}, {0x2026, 0x2026}, {0x201C, 0x201D},
                                       {0x2018, 0x2019}, {0x2014, 0x2014}, {0xFF1A, 0xFF1B},
                                       {0xFF0C, 0xFF0C}, {0x3001, 0x303F}, {0xFE30, 0xFE4F}};
constexpr Range kYoutuBopomofo[] = {{0x3105, 0x312F}};
// AFMoE: CJK (with extension A and compatibility ideographs), kana, halfwidth katakana, Kangxi
// radicals, Thai, Lao, Khmer, Myanmar (with extensions), Hangul syllables and jamo.
constexpr Range kAfmoeScripts[] = {
    {0x4E00, 0x9FFF}, {0x3400, 0x4DBF}, {0xF900, 0xFAFF}, {0x3040, 0x309F}, {0x30A0, 0x30FF},
    {0xFF65, 0xFF9F}, {0x2F00, 0x2FDF}, {0x0E40, 0x0E7F}, {0x0E80, 0x0EFF}, {0x1780, 0x17FF},
    {0x1000, 0x109F}, {0xAA60, 0xAA7F}, {0xA9E0, 0xA9FF}, {0xAC00, 0xD7AF}, {0x1100, 0x11FF}};

// A run of codepoints whose wide() value is in `ranges`.
void range_runs(Fragment& f, std::span<const Range> ranges) {
  split_matches(f, [&](size_t pos) -> Match {
    return f.run(pos, [&](size_t p) { return in_ranges(f.wide(p), ranges); });
  });
}

// \s?<class>+: one whitespace may lead the run.
template <class InClass>
void spaced_runs(Fragment& f, InClass in_class) {
  split_matches(f, [&](size_t pos) -> Match {
    if (f.whitespace(pos)) {
      const size_t n = f.run(pos + 1, in_class);
      return n > 0 ? Match(1 + n) : std::nullopt;
    }
    return f.run(pos, in_class);
  });
}

// <class> one codepoint at a time.
template <class InClass>
void each_of(Fragment& f, InClass in_class) {
  split_matches(f, [&](size_t pos) -> Match { return in_class(pos) ? Match(1) : std::nullopt; });
}

bool is_word_char(uint32_t c) {  // std::wregex's \w (C locale): ASCII only
  return (c >= '0' && c <= '9') || (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_';
}

bool has_literal(const Fragment& f, size_t pos, std::string_view literal) {
  for (size_t k = 0; k < literal.size(); ++k) {
    if (f.cpt(pos + k) != static_cast<uint8_t>(literal[k])) return false;
  }
  return true;
}

}  // namespace

void each_newline(Fragment& f) {
  each_of(f, [&](size_t p) { return f.newline(p); });
}
void deepseek_latin_words(Fragment& f) {
  spaced_runs(f, [&](size_t p) { return in_ranges(f.wide(p), kDeepseekLatin); });
}
void deepseek_punctuation(Fragment& f) {
  spaced_runs(f, [&](size_t p) { return in_ranges(f.wide(p), kDeepseekPunctuation); });
}
// \s+$: only a whitespace run that reaches the fragment's end matches (no match starts inside
// an earlier run, so each run is looked at once).
void trailing_whitespace(Fragment& f) {
  for (size_t pos = f.begin(); pos < f.end();) {
    const size_t n = f.run(pos, [&](size_t p) { return f.whitespace(p); });
    if (n > 0 && pos + n == f.end()) f.cut(pos);
    pos += n > 0 ? n : 1;
  }
  f.cut(f.end());
}
void deepseek_cjk(Fragment& f) {
  range_runs(f, kDeepseekCjk);
}
void cjk_kana(Fragment& f) {
  range_runs(f, kCjkKana);
}
void youtu_scripts(Fragment& f) {
  const std::span<const Range> classes[] = {kYoutuHangul, kYoutuPunctuation, kYoutuBopomofo,
                                            kCjkKana};
  split_matches(f, [&](size_t pos) -> Match {
    for (const auto ranges : classes) {
      if (in_ranges(f.wide(pos), ranges)) {
        return f.run(pos, [&](size_t p) { return in_ranges(f.wide(p), ranges); });
      }
    }
    return std::nullopt;
  });
}
void afmoe_scripts(Fragment& f) {
  range_runs(f, kAfmoeScripts);
}
void letter_words(Fragment& f) {
  spaced_runs(f, [&](size_t p) { return f.letter(p); });
}
void punctuation_words(Fragment& f) {
  spaced_runs(f, [&](size_t p) { return f.punctuation(p); });
}
void number_runs(Fragment& f) {
  split_matches(
      f, [&](size_t pos) -> Match { return f.run(pos, [&](size_t p) { return f.number(p); }); });
}
void each_number(Fragment& f) {
  each_of(f, [&](size_t p) { return f.number(p); });
}
void number_triples(Fragment& f) {
  split_matches(f, [&](size_t pos) -> Match {
    return f.run(
        pos, [&](size_t p) { return f.number(p); }, 3);
  });
}
void ascii_digit_triples(Fragment& f) {
  split_matches(f, [&](size_t pos) -> Match {
    return f.run(
               pos, [&](size_t p) { return f.ascii_digit(p); }, 3) == 3
               ? Match(3)
               : std::nullopt;
  });
}

// \d{1,3}(?=(?:\d{3})*\b) as libstdc++'s std::regex runs it: the lookahead is a sub-match that
// begins where it starts, and a \b right there sees the character before it only if the search
// did not start exactly there (match_prev_avail). So at a fragment's first codepoint a digit
// directly ahead counts as a boundary ("123 " gives "12", "3"); elsewhere \b is the ordinary
// one and a run is cut into threes counted from its end, if it ends at a non-word character.
void digits_grouped_from_right(Fragment& f) {
  const auto word = [&](size_t p) { return f.inside(p) && is_word_char(f.cpt(p)); };
  size_t run_end = 0;  // end of the digit run `pos` is in, found once per run
  split_matches(f, [&](size_t pos) -> Match {
    if (!f.ascii_digit(pos)) return std::nullopt;
    if (pos >= run_end) run_end = pos + f.run(pos, [&](size_t p) { return f.ascii_digit(p); });
    const size_t n = run_end - pos;
    for (size_t k = std::min<size_t>(3, n); k >= 1; --k) {
      // (?:\d{3})* tries the most triples first; with one or more, \b can only hold at the
      // run's end, after a digit.
      if (n - k >= 3 && (n - k) % 3 == 0 && !word(run_end)) return k;
      // With none, \b is right where the lookahead starts: a digit before it (if seen) and
      // the next digit, or whatever follows the run.
      const bool left_is_word = pos > f.begin();
      const bool right_is_word = k < n || word(run_end);
      if (left_is_word != right_is_word) return k;
    }
    return std::nullopt;
  });
}

// (?=(\d{3})+(?!\d)) only ever matches empty, before each digit that has a multiple of three
// digits from it to the end of its run; llama.cpp cuts the text there.
void superbpe_digits(Fragment& f) {
  for (size_t pos = f.begin(); pos < f.end();) {
    const size_t n = f.run(pos, [&](size_t p) { return f.ascii_digit(p); });
    for (size_t k = 0; k < n; ++k) {
      if ((n - k) % 3 == 0) f.cut(pos + k);
    }
    pos += n > 0 ? n : 1;
  }
  f.cut(f.end());
}

// llama.cpp's custom AFMoE split: each \p{N} run is cut into its leading n % 3 digits, then
// threes. It cuts only at digit boundaries, so the text before a run stays glued to the run's
// first group (later stages split it off again).
void afmoe_digits(Fragment& f) {
  for (size_t pos = f.begin(); pos < f.end();) {
    const size_t n = f.run(pos, [&](size_t p) { return f.number(p); });
    if (n == 0) {
      ++pos;
      continue;
    }
    size_t end = pos + n % 3;
    f.cut(end);
    while (end < pos + n) f.cut(end += 3);
    pos += n;
  }
  f.cut(f.end());
}

void default_punctuation(Fragment& f) {
  split_matches(f, [&](size_t pos) -> Match {
    return f.run(pos, [&](size_t p) {
      const uint32_t c = f.cpt(p);
      return f.punctuation(p) || c == '$' || c == '+' || c == '<' || c == '=' || c == '>' ||
             c == '^' || c == '~' || c == '|';
    });
  });
}
void falcon_punctuation(Fragment& f) {
  split_matches(f, [&](size_t pos) -> Match {
    return f.run(pos, [&](size_t p) {
      const uint32_t c = f.cpt(p);
      return f.punctuation(p) || c == '$' || c == '+' || c == '<' || c == '=' || c == '>' ||
             c == '^' || c == '~' || c == '|' || c == '`';
    });
  });
}

//  ?[^(\s|.,!?…。，、।۔،)]+ : the brackets hold a class, so '(', '|' and ')' are excluded too.
void bloom_words(Fragment& f) {
  const auto word_char = [&](size_t p) {
    static constexpr Range kStops[] = {
        {'(', ')'},       {'|', '|'},       {'.', '.'},       {',', ','},       {'!', '!'},
        {'?', '?'},       {0x2026, 0x2026}, {0x3002, 0x3002}, {0xFF0C, 0xFF0C}, {0x3001, 0x3001},
        {0x0964, 0x0964}, {0x06D4, 0x06D4}, {0x060C, 0x060C}};
    return f.inside(p) && !f.whitespace(p) && !in_ranges(f.cpt(p), kStops);
  };
  split_matches(f, [&](size_t pos) -> Match {
    if (f.cpt(pos) == ' ') {
      const size_t n = f.run(pos + 1, word_char);
      return n > 0 ? Match(1 + n) : std::nullopt;
    }
    return f.run(pos, word_char);
  });
}

void newline_runs(Fragment& f) {
  split_matches(f, [&](size_t pos) -> Match {
    const bool newline = f.cpt(pos) == '\n';
    return f.run(pos, [&](size_t p) { return (f.cpt(p) == '\n') == newline; });
  });
}

void chameleon_sentinels(Fragment& f) {
  split_matches(f, [&](size_t pos) -> Match {
    if (!has_literal(f, pos, "<sentinel:")) return std::nullopt;
    const size_t start = pos + 10;
    const size_t n = f.run(start, [&](size_t p) { return f.ascii_digit(p); });
    return n > 0 && f.cpt(start + n) == '>' ? Match(10 + n + 1) : std::nullopt;
  });
}

void chameleon_images(Fragment& f) {
  split_matches(f, [&](size_t pos) -> Match {
    if (!has_literal(f, pos, "IMGIMG")) return std::nullopt;
    const size_t start = pos + 6;
    const size_t n = f.run(start, [&](size_t p) { return f.cpt(p) >= 'A' && f.cpt(p) <= 'I'; });
    // {1,4} backtracks, but a shorter prefix is followed by another A-I, never by 'Z'.
    return n >= 1 && n <= 4 && f.cpt(start + n) == 'Z' ? Match(6 + n + 1) : std::nullopt;
  });
}

void chameleon_spacing(Fragment& f) {
  split_matches(f, [&](size_t pos) -> Match {
    if (f.cpt(pos) == '\t' || f.cpt(pos) == '\n') return 1;
    if (has_literal(f, pos, "    ")) return 4;
    if (has_literal(f, pos, "  ")) return 2;
    return std::nullopt;
  });
}

void chameleon_punctuation(Fragment& f) {
  each_of(f, [&](size_t p) {
    const uint32_t c = f.cpt(p);
    return f.punctuation(p) || (c >= 0x21 && c <= 0x2F) || (c >= 0x3A && c <= 0x40) ||
           (c >= 0x5B && c <= 0x60) || (c >= 0x7B && c <= 0x7E);
  });
}

}  // namespace augur::tokenizer::split
