// The word-level split patterns: GPT-2's, the Llama 3 family (one scanner, configured per
// variant by WordRules) and DeepSeek V3's. Each reproduces the regex llama.cpp runs for it:
// its hand-written scanners where it has them (gpt2, llama3, kimi-k2), otherwise the std::regex
// semantics (ordered alternatives, greedy quantifiers with backtracking) on the character
// classes its collapsed regex sees.
#include <algorithm>

#include "tokenizer/split_pattern.h"

namespace augur::tokenizer::split {

namespace {

constexpr size_t kAny = static_cast<size_t>(-1);

uint32_t ascii_lower(uint32_t cpt) {
  return (cpt >= 'A' && cpt <= 'Z') ? cpt + ('a' - 'A') : cpt;
}

// 's|'t|'re|'ve|'m|'ll|'d at `pos` (ASCII case-folded when `fold`, as the (?i:...) and the
// '[sS] forms do): the length matched, or 0.
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

// Han as llama.cpp's unicode_cpt_is_han (CJK ideographs, extensions A-F, compatibility).
bool is_han(uint32_t cpt) {
  return (cpt >= 0x4E00 && cpt <= 0x9FFF) || (cpt >= 0x3400 && cpt <= 0x4DBF) ||
         (cpt >= 0x20000 && cpt <= 0x2A6DF) || (cpt >= 0x2A700 && cpt <= 0x2EBEF) ||
         (cpt >= 0xF900 && cpt <= 0xFAFF) || (cpt >= 0x2F800 && cpt <= 0x2FA1F);
}

enum class Shape {
  Letters,        // [^\r\n\p{L}\p{N}]?\p{L}+
  LettersMarks,   // [^\r\n\p{L}\p{N}]?[\p{L}\p{M}]+
  SpacedLetters,  // [^\r\n\p{L}\p{N}]?(?:\p{L}\p{M}*(?: \p{L}\p{M}*)*)+
  NonHanLetters,  // kimi-k2: [\p{Han}]+ as its own word first, then \p{L}+ without Han
  Cased,          // tekken: P?U*W+|P?U+W*, U = letter but not a-z, W = letter but not A-Z
  CasedMarks,     // Cased with \p{M} counted as a letter
};

enum class Spaces {
  Standard,      // \s*[\r\n]+|\s+(?!\S)|\s+
  PowersOfTwo,   // \s*[\r\n]+|\s{512}(?!\S)|...|\s{4}(?!\S)|\s{1,2}(?!\S)|\s{1}
  NewlineAlone,  // [\r\n]|\s+(?!\S)|\s+
};

struct WordRules {
  Shape shape = Shape::Letters;
  bool contraction_first = true;    // (?i:'s|'t|'re|'ve|'m|'ll|'d) as a word of its own
  bool contraction_suffix = false;  // word(?i:'s|...)? keeps it at the end of a word
  size_t max_digits = 3;            // \p{N}{1,max}; kAny: \p{N}+
  bool punct_takes_marks = true;    // [^\s\p{L}\p{N}]; qwen35 leaves \p{M} out
  size_t punct_newlines = kAny;     // [\r\n]* after punctuation, [\r\n]? (1) or none (0)
  bool slash_after_punct = false;   // that class is [\r\n/]: a '/' after the newlines joins too
  Spaces spaces = Spaces::Standard;
};

// [^\r\n\p{L}\p{N}]: the one character a word may take in front of its letters.
bool word_lead(const Fragment& f, size_t pos) {
  return f.inside(pos) && !f.newline(pos) && !f.letter(pos) && !f.number(pos);
}

// Letters matched from exactly `pos` by the uncased shapes; 0 if none.
size_t letters_at(const Fragment& f, size_t pos, Shape shape) {
  switch (shape) {
    case Shape::Letters: return f.run(pos, [&](size_t p) { return f.letter(p); });
    case Shape::LettersMarks: return f.run(pos, [&](size_t p) { return f.letter(p) || f.mark(p); });
    case Shape::NonHanLetters:
      return f.run(pos, [&](size_t p) { return f.letter(p) && !is_han(f.cpt(p)); });
    case Shape::SpacedLetters: {
      if (!f.letter(pos)) return 0;
      size_t end = pos + 1;
      while (true) {
        if (f.letter(end) || f.mark(end)) {
          ++end;
        } else if (f.cpt(end) == ' ' && f.letter(end + 1)) {
          end += 2;  // one space between two letters stays inside the word
        } else {
          return end - pos;
        }
      }
    }
    default: return 0;
  }
}

// Tekken's cased word from exactly `s`: alternative 1 (U*W+) or 2 (U+W*). Its collapsed regex
// sees every non-ASCII letter as both U and W, so only ASCII case splits words.
size_t cased_at(const Fragment& f, size_t s, bool with_marks, bool upper_first) {
  const auto letter = [&](size_t p) { return f.letter(p) || (with_marks && f.mark(p)); };
  const auto upper = [&](size_t p) { return letter(p) && !(f.cpt(p) >= 'a' && f.cpt(p) <= 'z'); };
  const auto lower = [&](size_t p) { return letter(p) && !(f.cpt(p) >= 'A' && f.cpt(p) <= 'Z'); };
  const size_t n_upper = f.run(s, upper);
  if (upper_first) return n_upper > 0 ? n_upper + f.run(s + n_upper, lower) : 0;
  // U* gives back characters until W+ can start (backtracking, longest U* first).
  for (size_t k = n_upper + 1; k-- > 0;) {
    if (lower(s + k)) return k + f.run(s + k, lower);
  }
  return 0;
}

// The word alternative(s) at `pos`: the optional lead character is tried first (greedy `?`).
size_t word_at(const Fragment& f, size_t pos, const WordRules& rules) {
  size_t n = 0;
  if (rules.shape == Shape::Cased || rules.shape == Shape::CasedMarks) {
    const bool marks = rules.shape == Shape::CasedMarks;
    for (const bool upper_first : {false, true}) {
      if (word_lead(f, pos) && (n = cased_at(f, pos + 1, marks, upper_first))) {
        n += 1;
        break;
      }
      if ((n = cased_at(f, pos, marks, upper_first))) break;
    }
  } else if (word_lead(f, pos) && (n = letters_at(f, pos + 1, rules.shape))) {
    n += 1;
  } else {
    n = letters_at(f, pos, rules.shape);
  }
  if (n > 0 && rules.contraction_suffix) n += contraction_at(f, pos + n, /*fold=*/true);
  return n;
}

// The whitespace run a position is in, remembered so that cutting a long run into many words
// (jais-2's powers of two) scans it once.
struct SpaceRun {
  size_t end = 0;                 // one past the run
  size_t after_last_newline = 0;  // one past its last \r or \n, 0 if none
};

size_t spaces_at(const Fragment& f, size_t pos, Spaces spaces, SpaceRun& run) {
  if (spaces == Spaces::NewlineAlone && f.newline(pos)) return 1;
  if (!f.whitespace(pos)) return 0;
  if (pos >= run.end) {
    run.end = pos + f.run(pos, [&](size_t p) { return f.whitespace(p); });
    run.after_last_newline = 0;
    for (size_t p = pos; p < run.end; ++p) {
      if (f.newline(p)) run.after_last_newline = p + 1;
    }
  }
  const size_t n = run.end - pos;
  // \s*[\r\n]+ backtracks to the run's last newline.
  if (spaces != Spaces::NewlineAlone && run.after_last_newline > pos) {
    return run.after_last_newline - pos;
  }
  const bool at_end = !f.inside(run.end);  // (?!\S) holds after the whole run only here
  if (spaces == Spaces::PowersOfTwo) {
    for (size_t k = 512; k >= 4; k /= 2) {
      if (k < n || (k == n && at_end)) return k;
    }
    return 2 < n || (2 == n && at_end) ? 2 : 1;  // \s{1,2}(?!\S), else \s{1}
  }
  return n > 1 && !at_end ? n - 1 : n;  // \s+(?!\S) leaves the last space to the next word
}

void split_words(Fragment& f, const WordRules& rules) {
  const auto punct = [&](size_t p) {
    return f.other(p) && (rules.punct_takes_marks || !f.mark(p));
  };
  SpaceRun space_run;
  split_matches(f, [&](size_t pos) -> Match {
    if (rules.shape == Shape::NonHanLetters && is_han(f.cpt(pos))) {
      return f.run(pos, [&](size_t p) { return is_han(f.cpt(p)); });
    }
    if (rules.contraction_first) {
      if (const size_t n = contraction_at(f, pos, /*fold=*/true)) return n;
    }
    if (const size_t n = word_at(f, pos, rules)) return n;
    if (f.number(pos))
      return f.run(
          pos, [&](size_t p) { return f.number(p); }, rules.max_digits);
    const size_t body = pos + (f.cpt(pos) == ' ' ? 1 : 0);
    if (punct(body)) {
      size_t end = body + f.run(body, punct);
      const size_t n_after = f.run(end, [&](size_t p) {
        return f.newline(p) || (rules.slash_after_punct && f.cpt(p) == '/');
      });
      end += std::min(rules.punct_newlines, n_after);
      return end - pos;
    }
    if (const size_t n = spaces_at(f, pos, rules.spaces, space_run)) return n;
    return std::nullopt;
  });
}

}  // namespace

// llama.cpp's custom GPT-2 scanner; no codepoint is left unmatched, so each word is one match.
void gpt2_words(Fragment& f) {
  split_matches(f, [&](size_t pos) -> Match {
    if (const size_t n = contraction_at(f, pos, /*fold=*/false)) return n;
    const size_t body = pos + (f.cpt(pos) == ' ' ? 1 : 0);  // after the optional space
    for (const auto same_kind : {&Fragment::letter, &Fragment::number, &Fragment::other}) {
      if ((f.*same_kind)(body)) {
        return body - pos + f.run(body, [&](size_t p) { return (f.*same_kind)(p); });
      }
    }
    const size_t n = f.run(pos, [&](size_t p) { return f.whitespace(p); });
    if (n > 1 && f.inside(pos + n)) return n - 1;  // \s+(?!\S)
    return n > 0 ? Match(n) : std::nullopt;
  });
}

void llama3_words(Fragment& f) {
  split_words(f, {});
}
void qwen2_words(Fragment& f) {
  split_words(f, {.max_digits = 1});
}
void qwen35_words(Fragment& f) {
  split_words(f, {.shape = Shape::LettersMarks, .max_digits = 1, .punct_takes_marks = false});
}
void jais2_words(Fragment& f) {
  split_words(f, {.spaces = Spaces::PowersOfTwo});
}
void minicpm5_words(Fragment& f) {
  split_words(f, {.max_digits = kAny});
}
void seed_coder_words(Fragment& f) {
  split_words(f, {.max_digits = 1, .punct_newlines = 0});
}
void ufakzeka_words(Fragment& f) {
  split_words(f, {.contraction_first = false, .max_digits = 1});
}
void exaone_moe_words(Fragment& f) {
  // Its \s*[\r\n] backtracks to the last newline of the run, exactly as \s*[\r\n]+ does.
  split_words(f, {.shape = Shape::SpacedLetters,
                  .max_digits = 1,
                  .punct_newlines = 1,
                  .slash_after_punct = true});
}
// The Tekken family's punctuation takes [\r\n/]* after it.
void tekken_words(Fragment& f) {
  split_words(f, {.shape = Shape::Cased,
                  .contraction_first = false,
                  .max_digits = 1,
                  .slash_after_punct = true});
}
void gpt4o_words(Fragment& f) {
  split_words(f, {.shape = Shape::Cased,
                  .contraction_first = false,
                  .contraction_suffix = true,
                  .slash_after_punct = true});
}
void granite_multi_words(Fragment& f) {
  split_words(f, {.shape = Shape::CasedMarks,
                  .contraction_first = false,
                  .contraction_suffix = true,
                  .slash_after_punct = true});
}
// youtu and tiny_aya write \p{Lu}, \p{Ll}, ... which llama.cpp collapses to \p{L}: no case split.
void youtu_words(Fragment& f) {
  split_words(f, {.shape = Shape::LettersMarks,
                  .contraction_first = false,
                  .contraction_suffix = true,
                  .max_digits = 1,
                  .slash_after_punct = true});
}
void tiny_aya_words(Fragment& f) {
  split_words(f, {.shape = Shape::LettersMarks,
                  .contraction_first = false,
                  .contraction_suffix = true,
                  .slash_after_punct = true});
}
void kimi_k2_words(Fragment& f) {
  split_words(
      f, {.shape = Shape::NonHanLetters, .contraction_first = false, .contraction_suffix = true});
}

namespace {

bool ascii_letter(uint32_t c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z');
}
// [!"#$%&'()*+,\-./:;<=>?@\[\\\]^_`{|}~]
bool ascii_punct(uint32_t c) {
  return (c >= 0x21 && c <= 0x2F) || (c >= 0x3A && c <= 0x40) || (c >= 0x5B && c <= 0x60) ||
         (c >= 0x7B && c <= 0x7E);
}

// [!-~ punct][A-Za-z]+|[^\r\n\p{L}\p{P}\p{S}]?[\p{L}\p{M}]+| ?[\p{P}\p{S}]+<after>|<spaces>
void split_deepseek3(Fragment& f, size_t punct_newlines, Spaces spaces) {
  const auto letter_or_mark = [&](size_t p) { return f.letter(p) || f.mark(p); };
  const auto punct_or_symbol = [&](size_t p) { return f.punctuation(p) || f.symbol(p); };
  const auto lead = [&](size_t p) {
    return f.inside(p) && !f.newline(p) && !f.letter(p) && !punct_or_symbol(p);
  };
  SpaceRun space_run;
  split_matches(f, [&](size_t pos) -> Match {
    if (ascii_punct(f.cpt(pos))) {
      if (const size_t n = f.run(pos + 1, [&](size_t p) { return ascii_letter(f.cpt(p)); })) {
        return 1 + n;
      }
    }
    if (lead(pos)) {
      if (const size_t n = f.run(pos + 1, letter_or_mark)) return 1 + n;
    }
    if (const size_t n = f.run(pos, letter_or_mark)) return n;
    const size_t body = pos + (f.cpt(pos) == ' ' ? 1 : 0);
    if (punct_or_symbol(body)) {
      size_t end = body + f.run(body, punct_or_symbol);
      end += std::min(punct_newlines, f.run(end, [&](size_t p) { return f.newline(p); }));
      return end - pos;
    }
    if (const size_t n = spaces_at(f, pos, spaces, space_run)) return n;
    return std::nullopt;  // e.g. a control character: it joins the text up to the next match
  });
}

}  // namespace

void deepseek3_words(Fragment& f) {
  split_deepseek3(f, kAny, Spaces::Standard);
}
void spark_words(Fragment& f) {
  split_deepseek3(f, 0, Spaces::NewlineAlone);
}

}  // namespace augur::tokenizer::split
