#include "tokenizer/pretokenize.h"

#include <functional>

#include "tokenizer/unicode.h"

namespace augur::tokenizer {

namespace {

constexpr uint32_t kOutOfRange = 0xFFFFFFFF;

// The codepoints of the whole text with their classes, computed once.
struct Text {
  std::vector<uint32_t> cpts;
  std::vector<unicode::CodepointClass> classes;
};

// One fragment [begin, end) of the text being split further. Positions outside the fragment
// read as "no codepoint", so a pattern never looks across a fragment boundary.
class Fragment {
 public:
  Fragment(const Text& text, size_t begin, size_t end, std::vector<size_t>& lengths)
      : text_(text), begin_(begin), end_(end), prev_end_(begin), lengths_(lengths) {}

  size_t end() const { return end_; }
  bool inside(size_t pos) const { return pos >= begin_ && pos < end_; }
  uint32_t cpt(size_t pos) const { return inside(pos) ? text_.cpts[pos] : kOutOfRange; }
  unicode::CodepointClass cls(size_t pos) const {
    return inside(pos) ? text_.classes[pos] : unicode::CodepointClass{};
  }
  bool letter(size_t pos) const { return cls(pos).letter; }
  bool number(size_t pos) const { return cls(pos).number; }
  bool whitespace(size_t pos) const { return cls(pos).whitespace; }
  // [^\s\p{L}\p{N}] and inside the fragment.
  bool other(size_t pos) const {
    const auto c = cls(pos);
    return inside(pos) && !(c.whitespace || c.letter || c.number);
  }

  // Ends the current word at `end` (skipping empty words).
  void cut(size_t end) {
    if (end > prev_end_) lengths_.push_back(end - prev_end_);
    prev_end_ = end;
  }

 private:
  const Text& text_;
  size_t begin_, end_, prev_end_;
  std::vector<size_t>& lengths_;
};

uint32_t ascii_lower(uint32_t cpt) {
  return (cpt >= 'A' && cpt <= 'Z') ? cpt + ('a' - 'A') : cpt;
}

// 's|'t|'re|'ve|'m|'ll|'d at `pos` (case-folded when `fold`): the length matched, or 0.
size_t contraction_at(const Fragment& f, size_t pos, bool fold) {
  if (f.cpt(pos) != '\'' || !f.inside(pos + 1)) return 0;
  const auto lower = [&](size_t at) { return fold ? ascii_lower(f.cpt(at)) : f.cpt(at); };
  const uint32_t next = lower(pos + 1);
  if (next == 's' || next == 't' || next == 'm' || next == 'd') return 2;
  if (!f.inside(pos + 2)) return 0;
  const uint32_t after = lower(pos + 2);
  if ((next == 'r' && after == 'e') || (next == 'v' && after == 'e') ||
      (next == 'l' && after == 'l')) {
    return 3;
  }
  return 0;
}

// 's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
void split_gpt2(Fragment& f, size_t begin) {
  for (size_t pos = begin; pos < f.end();) {
    if (const size_t n = contraction_at(f, pos, /*fold=*/false)) {
      pos += n;
      f.cut(pos);
      continue;
    }
    const size_t body = pos + (f.cpt(pos) == ' ' ? 1 : 0);  // after the optional space
    if (f.letter(body) || f.number(body) || f.other(body)) {
      const auto same_kind = f.letter(body)   ? &Fragment::letter
                             : f.number(body) ? &Fragment::number
                                              : &Fragment::other;
      pos = body;
      while ((f.*same_kind)(pos)) ++pos;
      f.cut(pos);
      continue;
    }
    size_t n_space = 0;
    while (f.whitespace(pos + n_space)) ++n_space;
    if (n_space > 1 && f.inside(pos + n_space)) {
      pos += n_space - 1;  // \s+(?!\S): leave the last space to prefix the next word
      f.cut(pos);
      continue;
    }
    pos += n_space > 0 ? n_space : 1;
    f.cut(pos);
  }
}

// (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,max_digits}|
//  ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
void split_llama3(Fragment& f, size_t begin, size_t max_digits) {
  const auto is_newline = [&](size_t at) { return f.cpt(at) == '\r' || f.cpt(at) == '\n'; };
  for (size_t pos = begin; pos < f.end();) {
    if (const size_t n = contraction_at(f, pos, /*fold=*/true)) {
      pos += n;
      f.cut(pos);
      continue;
    }
    if (!is_newline(pos) && !f.number(pos) && (f.letter(pos) || f.letter(pos + 1))) {
      ++pos;  // the leading non-letter, or the first letter
      while (f.letter(pos)) ++pos;
      f.cut(pos);
      continue;
    }
    if (f.number(pos)) {
      size_t run_start = pos;
      while (f.number(pos)) {
        if (++pos - run_start >= max_digits) {
          f.cut(pos);
          run_start = pos;
        }
      }
      f.cut(pos);
      continue;
    }
    const size_t body = pos + (f.cpt(pos) == ' ' ? 1 : 0);
    if (f.other(body)) {
      pos = body;
      while (f.other(pos)) ++pos;
      while (is_newline(pos)) ++pos;
      f.cut(pos);
      continue;
    }
    size_t n_space = 0;
    size_t after_last_newline = 0;
    while (f.whitespace(pos + n_space)) {
      if (is_newline(pos + n_space)) after_last_newline = pos + n_space + 1;
      ++n_space;
    }
    if (after_last_newline > 0) {  // \s*[\r\n]+
      pos = after_last_newline;
      f.cut(pos);
      continue;
    }
    if (n_space > 1 && f.inside(pos + n_space)) {  // \s+(?!\S)
      pos += n_space - 1;
      f.cut(pos);
      continue;
    }
    pos += n_space > 0 ? n_space : 1;
    f.cut(pos);
  }
}

// A run of codepoints matching `in_class`, and every gap between runs, each become a word.
void split_runs(Fragment& f, size_t begin, const std::function<bool(size_t)>& in_class) {
  for (size_t pos = begin; pos < f.end();) {
    const bool matching = in_class(pos);
    while (pos < f.end() && in_class(pos) == matching) ++pos;
    f.cut(pos);
  }
}

// [0-9][0-9][0-9], searched left to right without overlap; the rest stays as gap words.
void split_digit_triples(Fragment& f, size_t begin) {
  const auto digit = [&](size_t at) { return f.cpt(at) >= '0' && f.cpt(at) <= '9'; };
  for (size_t pos = begin; pos + 3 <= f.end();) {
    if (digit(pos) && digit(pos + 1) && digit(pos + 2)) {
      f.cut(pos);
      pos += 3;
      f.cut(pos);
    } else {
      ++pos;
    }
  }
  f.cut(f.end());
}

using Stage = std::function<void(Fragment&, size_t begin)>;

// Runs `stage` over every current fragment; returns the new fragment lengths.
std::vector<size_t> apply(const Text& text, const std::vector<size_t>& lengths,
                          const Stage& stage) {
  std::vector<size_t> out;
  out.reserve(lengths.size());
  size_t begin = 0;
  for (const size_t length : lengths) {
    Fragment fragment(text, begin, begin + length, out);
    stage(fragment, begin);
    begin += length;
  }
  return out;
}

std::vector<Stage> stages_for(PreTokenizer pre) {
  switch (pre) {
    case PreTokenizer::Gpt2: return {split_gpt2};
    case PreTokenizer::Llama3: return {[](Fragment& f, size_t b) { split_llama3(f, b, 3); }};
    case PreTokenizer::Qwen2: return {[](Fragment& f, size_t b) { split_llama3(f, b, 1); }};
    case PreTokenizer::Default:
      return {
          [](Fragment& f, size_t b) {
            split_runs(f, b, [&f](size_t at) {
              const uint32_t c = f.cpt(at);
              return f.cls(at).punctuation || c == '$' || c == '+' || c == '<' || c == '=' ||
                     c == '>' || c == '^' || c == '~' || c == '|';
            });
          },
          split_gpt2,
          [](Fragment& f, size_t b) { split_runs(f, b, [&f](size_t at) { return f.number(at); }); },
          split_digit_triples,
      };
  }
  return {};
}

}  // namespace

std::vector<std::string> pretokenize(std::string_view text, PreTokenizer pre) {
  Text decoded;
  decoded.cpts = unicode::decode_utf8(text);
  decoded.classes.reserve(decoded.cpts.size());
  for (const uint32_t cpt : decoded.cpts) decoded.classes.push_back(unicode::classify(cpt));

  std::vector<size_t> lengths;
  if (!decoded.cpts.empty()) lengths.push_back(decoded.cpts.size());
  for (const Stage& stage : stages_for(pre)) lengths = apply(decoded, lengths, stage);

  std::vector<std::string> words;
  words.reserve(lengths.size());
  size_t begin = 0;
  for (const size_t length : lengths) {
    std::string& word = words.emplace_back();
    for (size_t at = begin; at < begin + length; ++at) unicode::append_utf8(decoded.cpts[at], word);
    begin += length;
  }
  return words;
}

}  // namespace augur::tokenizer
