#include "tokenizer/tokenizer.h"

#include <fmt/format.h>

#include "common/error.h"
#include "gguf/file.h"
#include "tokenizer/bpe.h"
#include "tokenizer/special_split.h"
#include "tokenizer/spm.h"
#include "tokenizer/unicode.h"
#include "tokenizer/vocab.h"

namespace augur::tokenizer {

namespace {

constexpr std::string_view kEscapedSpace = "\xE2\x96\x81";  // U+2581 '▁'

void replace_all(std::string& text, std::string_view from, std::string_view to) {
  std::string out;
  out.reserve(text.size());
  size_t begin = 0;
  for (size_t at = text.find(from); at != std::string::npos; at = text.find(from, begin)) {
    out.append(text, begin, at - begin);
    out += to;
    begin = at + from.size();
  }
  out.append(text, begin);
  text.swap(out);
}

// A byte token's text is "<0xXX>".
std::string byte_piece(std::string_view text) {
  if (text.size() != 6 || text.substr(0, 3) != "<0x" || text.back() != '>') return "";
  unsigned value = 0;
  for (const char c : text.substr(3, 2)) {
    value <<= 4;
    if (c >= '0' && c <= '9')
      value |= c - '0';
    else if (c >= 'a' && c <= 'f')
      value |= c - 'a' + 10;
    else if (c >= 'A' && c <= 'F')
      value |= c - 'A' + 10;
    else
      return "";
  }
  return std::string(1, static_cast<char>(value));
}

// GPT-2 byte-level text back to bytes (llama.cpp's llama_decode_text, including its marker for
// characters outside the byte alphabet).
std::string byte_level_decode(std::string_view text) {
  std::string out;
  for (size_t pos = 0; pos < text.size();) {
    const uint32_t cpt = unicode::next_codepoint(text, pos);
    if (const auto byte = unicode::unicode_to_byte(cpt)) {
      out.push_back(static_cast<char>(*byte));
      continue;
    }
    std::string utf8;
    unicode::append_utf8(cpt, utf8);
    out += "[UNK_BYTE_0x";
    for (const char c : utf8) out += fmt::format("{:02x}", static_cast<uint8_t>(c));
    out += text;
    out += "]";
  }
  return out;
}

// The piece of one token as llama.cpp's token_to_piece gives it with special = true.
std::string piece_of(const Vocab& vocab, int32_t id) {
  const std::string_view text = vocab.text(id);
  if (vocab.has(id, kAttrUnknown) || vocab.has(id, kAttrControl) ||
      vocab.has(id, kAttrUserDefined)) {
    return std::string(text);
  }
  if (vocab.has(id, kAttrNormal)) {
    if (vocab.kind == VocabKind::Bpe) return byte_level_decode(text);
    std::string piece(text);
    replace_all(piece, kEscapedSpace, " ");
    return piece;
  }
  if (vocab.has(id, kAttrByte)) return byte_piece(text);
  return "";  // undefined and unused tokens have no text
}

// llama.cpp's detokenize clean-up for clean_spaces vocabularies: three in-place passes over the
// bytes. Kept index-for-index, since each pass reads bytes an earlier step may have changed.
void clean_up_spaces(std::string& text) {
  auto total = static_cast<int64_t>(text.size());

  // Pass 1: " ?", " !", " .", " ," lose the space.
  int64_t size = total;
  total = size ? 1 : 0;
  for (int64_t i = 1; i < size; ++i) {
    const char x = text[i];
    if (text[i - 1] == ' ' && (x == '?' || x == '!' || x == '.' || x == ',')) --total;
    text[total++] = x;
  }

  // Pass 2: " ' " becomes "'".
  size = total;
  total = size ? 1 : 0;
  for (int64_t i = 1; i < size; ++i) {
    const char x = text[i];
    if (x == '\'' && i + 1 < size && text[i - 1] == ' ' && text[i + 1] == ' ') {
      --total;           // drop the space before
      text[++i] = '\0';  // and skip the space after
    }
    text[total++] = x;
  }

  // Pass 3: " 's", " 'm", " 're", " 've" lose the space (" 't", " 'd", " 'll" keep it).
  size = total;
  total = size ? 1 : 0;
  for (int64_t i = 1; i < size; ++i) {
    const char x = text[i];
    if (text[i - 1] == ' ' && x == '\'' && i + 1 < size) {
      const char x1 = text[i + 1];
      if (x1 == 's' || x1 == 'm') {
        --total;
      } else if (i + 2 < size) {
        const char x2 = text[i + 2];
        if ((x1 == 'r' && x2 == 'e') || (x1 == 'v' && x2 == 'e')) --total;
      }
    }
    text[total++] = x;
  }
  text.resize(static_cast<size_t>(total));
}

}  // namespace

Tokenizer::Tokenizer(std::unique_ptr<Vocab> vocab, std::unique_ptr<BpeMerges> merges)
    : vocab_(std::move(vocab)), merges_(std::move(merges)) {
  piece_offset_.reserve(vocab_->size() + 1);
  piece_arena_.reserve(vocab_->text_arena.size());
  for (int32_t id = 0; id < vocab_->size(); ++id) {
    piece_offset_.push_back(static_cast<uint32_t>(piece_arena_.size()));
    piece_arena_ += piece_of(*vocab_, id);
  }
  piece_offset_.push_back(static_cast<uint32_t>(piece_arena_.size()));
}

Tokenizer::~Tokenizer() = default;

std::unique_ptr<Tokenizer> Tokenizer::from_gguf(const gguf::File& file) {
  auto vocab = load_vocab(file);
  std::unique_ptr<BpeMerges> merges;
  if (vocab->kind == VocabKind::Bpe) {
    merges = BpeMerges::load(file, /*required=*/vocab->pre != PreTokenizer::KimiK2);
  }
  return std::unique_ptr<Tokenizer>(new Tokenizer(std::move(vocab), std::move(merges)));
}

int32_t Tokenizer::n_vocab() const {
  return vocab_->size();
}
int32_t Tokenizer::bos() const {
  return vocab_->bos;
}
int32_t Tokenizer::eos() const {
  return vocab_->eos;
}
bool Tokenizer::add_bos() const {
  return vocab_->add_bos;
}
bool Tokenizer::add_eos() const {
  return vocab_->add_eos;
}

bool Tokenizer::is_eog(int32_t id) const {
  return id >= 0 && id < vocab_->size() && vocab_->eog[id];
}

bool Tokenizer::is_control(int32_t id) const {
  check_id(id);
  return vocab_->has(id, kAttrControl);
}

std::string_view Tokenizer::token_text(int32_t id) const {
  check_id(id);
  return vocab_->text(id);
}

TokenType Tokenizer::token_type(int32_t id) const {
  check_id(id);
  return vocab_->types[id];
}

void Tokenizer::check_id(int32_t id) const {
  if (id < 0 || id >= vocab_->size()) {
    throw InvalidArgument(fmt::format("token id {} is out of range: the vocabulary has ids 0..{}",
                                      id, vocab_->size() - 1));
  }
}

std::vector<int32_t> Tokenizer::encode(std::string_view text, bool add_special,
                                       bool parse_special) const {
  const Vocab& vocab = *vocab_;
  std::vector<int32_t> out;
  if (add_special && vocab.add_bos) out.push_back(vocab.bos);

  // SPM prefixes a space to a text fragment at the start or right after a special token.
  bool after_special = true;
  std::string escaped;
  for (const Fragment& fragment : split_special(text, vocab, parse_special)) {
    if (fragment.token >= 0) {
      out.push_back(fragment.token);
      after_special = true;
      continue;
    }
    const std::string_view raw = text.substr(fragment.offset, fragment.length);
    if (vocab.kind == VocabKind::Spm) {
      escaped.clear();
      if (vocab.add_space_prefix && after_special) escaped.push_back(' ');
      escaped += raw;
      replace_all(escaped, " ", kEscapedSpace);
      spm_tokenize(vocab, escaped, out);
    } else {
      bpe_tokenize(vocab, *merges_, raw, out);
    }
    after_special = false;
  }

  if (add_special && vocab.add_eos) out.push_back(vocab.eos);
  return out;
}

std::string_view Tokenizer::piece(int32_t id, bool special) const {
  if (!special && (vocab_->has(id, kAttrControl) || vocab_->has(id, kAttrUnknown))) return {};
  return std::string_view(piece_arena_)
      .substr(piece_offset_[id], piece_offset_[id + 1] - piece_offset_[id]);
}

std::string Tokenizer::token_to_piece(int32_t id, bool special) const {
  check_id(id);
  return std::string(piece(id, special));
}

std::string Tokenizer::decode(std::span<const int32_t> ids, bool special) const {
  for (const int32_t id : ids) check_id(id);
  std::string text;
  bool strip_space = vocab_->add_space_prefix;  // only ever the very first token's piece
  for (const int32_t id : ids) {
    const std::string_view p = piece(id, special);
    const bool strip = strip_space && !p.empty() && p.front() == ' ';
    text.append(p.substr(strip ? 1 : 0));
    strip_space = false;
  }
  if (vocab_->clean_spaces) clean_up_spaces(text);
  return text;
}

StreamDecoder::StreamDecoder(const Tokenizer& tok, bool special) : tok_(&tok), special_(special) {}

std::string StreamDecoder::push(int32_t id) {
  pending_ += tok_->token_to_piece(id, special_);
  const size_t complete = unicode::complete_prefix_length(pending_);
  std::string out = pending_.substr(0, complete);
  pending_.erase(0, complete);
  return out;
}

std::string StreamDecoder::finish() {
  std::string out;
  out.swap(pending_);
  return out;
}

}  // namespace augur::tokenizer
