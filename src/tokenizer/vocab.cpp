#include "tokenizer/vocab.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>

#include "common/error.h"
#include "tokenizer/pre_specs.h"
#include "tokenizer/unicode.h"

namespace augur::tokenizer {

namespace {

// Texts llama.cpp treats as end of generation (and forces to Control), wherever they sit.
constexpr std::array<std::string_view, 22> kEogTexts = {
    "<|eot_id|>",
    "<|im_end|>",
    "<|end|>",
    "<|return|>",
    "<|call|>",
    "<|flush|>",
    "<|calls|>",
    "<end_of_turn>",
    "<|endoftext|>",
    "</s>",
    "<|eom_id|>",
    "<EOT>",
    "_<EOT>",
    "[EOT]",
    "[EOS]",
    "<|end_of_text|>",
    "<end_of_utterance>",
    "<eos>",
    "<turn|>",
    "<|tool_response>",
    "<｜end▁of▁sentence｜>",
    "[e~[",
};
// Fill-in-the-middle tokens that also end generation, found by text when no id key names them.
constexpr std::array<std::string_view, 5> kFimPadTexts = {"<|fim_pad|>", "<fim-pad>", "<fim_pad>",
                                                          "<PAD>", "[PAD]"};
constexpr std::array<std::string_view, 5> kFimRepTexts = {"<|fim_repo|>", "<|repo_name|>",
                                                          "<fim-repo>", "<REPO>", "<reponame>"};
constexpr std::array<std::string_view, 1> kFimSepTexts = {"<|file_sep|>"};

uint8_t attr_of(TokenType type) {
  switch (type) {
    case TokenType::Normal: return kAttrNormal;
    case TokenType::Unknown: return kAttrUnknown;
    case TokenType::Control: return kAttrControl;
    case TokenType::UserDefined: return kAttrUserDefined;
    case TokenType::Unused: return kAttrUnused;
    case TokenType::Byte: return kAttrByte;
    case TokenType::Undefined: return 0;
  }
  return 0;
}

TokenType type_from_gguf(int64_t raw) {
  return raw >= 1 && raw <= 6 ? static_cast<TokenType>(raw) : TokenType::Undefined;
}

// Reads an optional token id key; an id outside the vocabulary keeps `fallback` (llama.cpp
// warns and ignores it). A fallback outside the vocabulary becomes -1.
int32_t read_id(const gguf::File& file, std::string_view key, int32_t fallback, int32_t n_vocab) {
  if (fallback >= n_vocab) fallback = -1;
  const auto value = file.get_int_opt(key);
  if (!value || *value < 0 || *value >= n_vocab) return fallback;
  return static_cast<int32_t>(*value);
}

void read_tokens(const gguf::File& file, Vocab& vocab) {
  const auto texts = file.get_string_array("tokenizer.ggml.tokens");
  const auto n_vocab = static_cast<int32_t>(texts.size());
  if (n_vocab == 0) {
    throw FormatError(fmt::format("{}: tokenizer.ggml.tokens is empty", file.path()));
  }

  vocab.text_offset.reserve(texts.size() + 1);
  size_t total = 0;
  for (const auto text : texts) total += text.empty() ? 16 : text.size();
  if (total > UINT32_MAX) {
    throw FormatError(fmt::format("{}: tokenizer.ggml.tokens holds {} bytes, more than 4 GiB",
                                  file.path(), total));
  }
  vocab.text_arena.reserve(total);
  for (int32_t id = 0; id < n_vocab; ++id) {
    vocab.text_offset.push_back(static_cast<uint32_t>(vocab.text_arena.size()));
    // llama.cpp renames empty texts so that every token stays addressable by text.
    if (texts[id].empty()) {
      vocab.text_arena += fmt::format("[EMPTY_{}]", id);
    } else {
      vocab.text_arena += texts[id];
    }
  }
  vocab.text_offset.push_back(static_cast<uint32_t>(vocab.text_arena.size()));
  vocab.build_index(file.path());

  vocab.scores.assign(n_vocab, 0.0f);
  if (file.has("tokenizer.ggml.scores")) {
    const auto scores = file.get_float_array("tokenizer.ggml.scores");
    if (scores.size() < texts.size()) {
      throw FormatError(fmt::format("{}: tokenizer.ggml.scores has {} entries, expected {}",
                                    file.path(), scores.size(), n_vocab));
    }
    std::copy_n(scores.begin(), n_vocab, vocab.scores.begin());
  }

  vocab.types.assign(n_vocab, TokenType::Normal);
  if (file.has("tokenizer.ggml.token_type")) {
    const auto types = file.get_int_array("tokenizer.ggml.token_type");
    if (types.size() < texts.size()) {
      throw FormatError(fmt::format("{}: tokenizer.ggml.token_type has {} entries, expected {}",
                                    file.path(), types.size(), n_vocab));
    }
    for (int32_t id = 0; id < n_vocab; ++id) vocab.types[id] = type_from_gguf(types[id]);
  }
  vocab.attrs.resize(n_vocab);
  for (int32_t id = 0; id < n_vocab; ++id) vocab.attrs[id] = attr_of(vocab.types[id]);
}

// What llama.cpp calls the vocabulary types augur does not implement, for the error message.
std::string_view unsupported_model_kind(std::string_view model) {
  if (model == "t5") return " (UGM, T5's unigram tokenizer)";
  if (model == "bert") return " (WPM, BERT's WordPiece)";
  if (model == "rwkv") return " (RWKV's greedy trie tokenizer)";
  if (model == "plamo2") return " (PLaMo-2's Aho-Corasick tokenizer)";
  if (model == "gemma4") return " (SentencePiece-style BPE on raw UTF-8)";
  if (model == "whitespace") return " (whitespace-split BPE on raw UTF-8)";
  if (model == "hybriddna") return " (BPE with DNA k-mer tokens)";
  if (model == "none" || model == "no_vocab") return " (no vocabulary)";
  return "";
}

void resolve_kind(const gguf::File& file, Vocab& vocab) {
  const std::string_view model = file.get_string("tokenizer.ggml.model");
  const std::string_view pre = file.get_string_opt("tokenizer.ggml.pre").value_or("");
  if (model == "llama") {
    vocab.kind = VocabKind::Spm;
    vocab.add_space_prefix = true;
    vocab.clean_spaces = false;
    vocab.add_bos = true;
    vocab.add_eos = false;
    return;  // SPM has no pre-tokenizer; llama.cpp ignores .pre here
  }
  if (model != "gpt2") {
    throw Unsupported(
        fmt::format("{}: tokenizer.ggml.model '{}'{} is not supported; supported: llama (SPM), "
                    "gpt2 (BPE)",
                    file.path(), model, unsupported_model_kind(model)));
  }
  vocab.kind = VocabKind::Bpe;
  vocab.add_space_prefix = false;
  // A missing .pre makes llama.cpp fall back to its default pre-tokenizer (with a warning).
  const std::string_view name = pre.empty() ? std::string_view("default") : pre;
  const PreSpec* spec = find_pre_spec(name);
  if (!spec) {
    const std::string_view reason = unsupported_pre_reason(name);
    throw Unsupported(fmt::format(
        "{}: tokenizer.ggml.pre '{}' is not supported for tokenizer.ggml.model 'gpt2'{}{}; "
        "supported: {}",
        file.path(), pre, reason.empty() ? "" : ": ", reason, supported_pre_names()));
  }
  vocab.pre = spec->pre;
  vocab.clean_spaces = spec->clean_spaces;
  vocab.ignore_merges = spec->ignore_merges;
  vocab.add_bos = spec->add_bos;
  vocab.add_eos = false;
}

void read_special_ids(const gguf::File& file, Vocab& vocab) {
  const int32_t n = vocab.size();
  const bool spm = vocab.kind == VocabKind::Spm;
  // SPM defaults are llama.cpp's (<unk>=0, <s>=1, </s>=2). For BPE llama.cpp defaults to id 11,
  // which is meaningless; we report "absent" (-1) instead.
  vocab.bos = read_id(file, "tokenizer.ggml.bos_token_id", spm ? 1 : -1, n);
  vocab.eos = read_id(file, "tokenizer.ggml.eos_token_id", spm ? 2 : -1, n);
  vocab.unk = read_id(file, "tokenizer.ggml.unknown_token_id", spm ? 0 : -1, n);
  vocab.eot = read_id(file, "tokenizer.ggml.eot_token_id", -1, n);
  vocab.eom = read_id(file, "tokenizer.ggml.eom_token_id", -1, n);
  vocab.pad = read_id(file, "tokenizer.ggml.padding_token_id", -1, n);

  if (const auto v = file.get_bool_opt("tokenizer.ggml.add_space_prefix"))
    vocab.add_space_prefix = *v;
  if (const auto v = file.get_bool_opt("tokenizer.ggml.add_bos_token")) vocab.add_bos = *v;
  if (const auto v = file.get_bool_opt("tokenizer.ggml.add_eos_token")) vocab.add_eos = *v;
  if (vocab.add_bos && vocab.bos < 0) {
    throw FormatError(fmt::format(
        "{}: tokenizer.ggml.add_bos_token is true, but tokenizer.ggml.bos_token_id is not set",
        file.path()));
  }
  if (vocab.add_eos && vocab.eos < 0) {
    throw FormatError(fmt::format(
        "{}: tokenizer.ggml.add_eos_token is true, but tokenizer.ggml.eos_token_id is not set",
        file.path()));
  }
}

// The lowest id whose text is one of `texts`, or -1.
template <size_t N>
int32_t find_any(const Vocab& vocab, const std::array<std::string_view, N>& texts) {
  int32_t best = -1;
  for (const auto text : texts) {
    const int32_t id = vocab.find(text);
    if (id >= 0 && (best < 0 || id < best)) best = id;
  }
  return best;
}

// llama.cpp's end-of-generation set: FIM pad/repo/sep, every token with an EOG text, and the
// eos/eot/eom ids. Texts found this way are forced to Control, as llama.cpp does.
void mark_end_of_generation(const gguf::File& file, Vocab& vocab) {
  const int32_t n = vocab.size();
  vocab.eog.assign(n, false);
  const auto mark = [&](int32_t id, bool force_control) {
    if (id < 0) return;
    vocab.eog[id] = true;
    if (force_control) vocab.attrs[id] |= kAttrControl;
  };

  const int32_t fim_pad = read_id(file, "tokenizer.ggml.fim_pad_token_id", -1, n);
  const int32_t fim_rep = read_id(file, "tokenizer.ggml.fim_rep_token_id", -1, n);
  const int32_t fim_sep = read_id(file, "tokenizer.ggml.fim_sep_token_id", -1, n);
  mark(fim_pad >= 0 ? fim_pad : find_any(vocab, kFimPadTexts), fim_pad < 0);
  mark(fim_rep >= 0 ? fim_rep : find_any(vocab, kFimRepTexts), fim_rep < 0);
  mark(fim_sep >= 0 ? fim_sep : find_any(vocab, kFimSepTexts), fim_sep < 0);
  for (const auto text : kEogTexts) mark(vocab.find(text), true);
  mark(vocab.eos, false);
  mark(vocab.eot, false);
  mark(vocab.eom, false);

  // gpt-oss / solar-open: "<|end|>" only ends a message there, it is not end of generation.
  const auto in_eog = [&](std::string_view text) {
    const int32_t id = vocab.find(text);
    return id >= 0 && vocab.eog[id];
  };
  const int32_t end_id = vocab.find("<|end|>");
  if (in_eog("<|end|>") && ((in_eog("<|return|>") && in_eog("<|call|>")) ||
                            (in_eog("<|calls|>") && in_eog("<|flush|>")))) {
    vocab.eog[end_id] = false;
    vocab.attrs[end_id] = kAttrUserDefined;
  }
}

void collect_special_tokens(Vocab& vocab) {
  for (int32_t id = 0; id < vocab.size(); ++id) {
    if (vocab.has(id, kAttrControl) || vocab.has(id, kAttrUserDefined) ||
        vocab.has(id, kAttrUnknown)) {
      vocab.special_tokens.push_back(id);
    }
  }
  // Longest first so that a token containing another is cut out before it. llama.cpp's sort is
  // unstable on equal lengths; we keep id order there.
  std::stable_sort(
      vocab.special_tokens.begin(), vocab.special_tokens.end(),
      [&](int32_t a, int32_t b) { return vocab.text(a).size() > vocab.text(b).size(); });
}

}  // namespace

int32_t Vocab::byte_token(uint8_t byte) const {
  if (kind == VocabKind::Bpe) return find(unicode::byte_to_unicode(byte));
  const int32_t hex = find(fmt::format("<0x{:02X}>", byte));
  if (hex >= 0) return hex;
  return find(std::string(1, static_cast<char>(byte)));
}

void Vocab::build_index(std::string_view source) {
  const auto n = static_cast<int32_t>(text_offset.size()) - 1;
  index_.reset(&text_arena, static_cast<size_t>(n));
  for (int32_t id = 0; id < n; ++id) {
    const int32_t existing =
        index_.insert(text_offset[id], text_offset[id + 1] - text_offset[id], id);
    if (existing >= 0) {
      throw FormatError(fmt::format("{}: duplicate token in vocabulary: '{}' has ids {} and {}",
                                    source, text(id), existing, id));
    }
  }
}

std::unique_ptr<Vocab> load_vocab(const gguf::File& file) {
  auto vocab = std::make_unique<Vocab>();
  resolve_kind(file, *vocab);
  read_tokens(file, *vocab);
  read_special_ids(file, *vocab);
  mark_end_of_generation(file, *vocab);
  collect_special_tokens(*vocab);
  return vocab;
}

}  // namespace augur::tokenizer
