#include "tokenizer/bpe.h"

#include <fmt/format.h>

#include <queue>

#include "common/error.h"
#include "tokenizer/unicode.h"

namespace augur::tokenizer {

namespace {

struct Symbol {
  int prev;
  int next;
  size_t start;
  size_t n;  // 0 once merged into its left neighbour
};

struct Bigram {
  int left;
  int right;
  int32_t rank;
  size_t size;  // bytes of left + right when queued; a mismatch later means it is stale
};

// Lowest rank first; on equal ranks the leftmost pair.
struct LowerPriority {
  bool operator()(const Bigram& a, const Bigram& b) const {
    return a.rank > b.rank || (a.rank == b.rank && a.left > b.left);
  }
};

class WordMerger {
 public:
  WordMerger(const Vocab& vocab, const BpeMerges& merges) : vocab_(vocab), merges_(merges) {}

  void run(std::string_view word, std::vector<int32_t>& out) {
    word_ = word;
    symbols_.clear();
    queue_ = {};
    for (size_t offset = 0; offset < word.size();) {
      const size_t len = std::min(unicode::sequence_length(static_cast<uint8_t>(word[offset])),
                                  word.size() - offset);
      const int index = static_cast<int>(symbols_.size());
      offset += len;
      symbols_.push_back({index - 1, offset == word.size() ? -1 : index + 1, offset - len, len});
    }
    for (int right = 1; right < static_cast<int>(symbols_.size()); ++right) {
      add_bigram(right - 1, right);
    }

    while (!queue_.empty()) {
      const Bigram bigram = queue_.top();
      queue_.pop();
      Symbol& left = symbols_[bigram.left];
      Symbol& right = symbols_[bigram.right];
      if (left.n == 0 || right.n == 0 || left.n + right.n != bigram.size) continue;

      left.n += right.n;
      right.n = 0;
      left.next = right.next;
      if (right.next >= 0) symbols_[right.next].prev = bigram.left;

      add_bigram(left.prev, bigram.left);
      add_bigram(bigram.left, left.next);
    }

    for (const Symbol& symbol : symbols_) {
      if (symbol.n == 0) continue;
      const std::string_view text = word_.substr(symbol.start, symbol.n);
      const int32_t id = vocab_.find(text);
      if (id >= 0) {
        out.push_back(id);
        continue;
      }
      // As llama.cpp: look each byte up as a one-byte token; bytes without one are dropped.
      for (const char c : text) {
        const int32_t byte_id = vocab_.find(std::string_view(&c, 1));
        if (byte_id >= 0) out.push_back(byte_id);
      }
    }
  }

 private:
  void add_bigram(int left, int right) {
    if (left == -1 || right == -1) return;
    const Symbol& l = symbols_[left];
    const Symbol& r = symbols_[right];
    const int32_t rank = merges_.rank(word_.substr(l.start, l.n), word_.substr(r.start, r.n));
    if (rank < 0) return;
    queue_.push({left, right, rank, l.n + r.n});
  }

  const Vocab& vocab_;
  const BpeMerges& merges_;
  std::string_view word_;
  std::vector<Symbol> symbols_;
  std::priority_queue<Bigram, std::vector<Bigram>, LowerPriority> queue_;
};

}  // namespace

std::unique_ptr<BpeMerges> BpeMerges::load(const gguf::File& file, bool required) {
  std::unique_ptr<BpeMerges> merges(new BpeMerges());
  if (!file.has("tokenizer.ggml.merges")) {
    if (!required) {
      merges->ranks_.reset(&merges->arena_, 0);
      return merges;
    }
    throw FormatError(fmt::format(
        "{}: tokenizer.ggml.merges is missing; a gpt2 (BPE) tokenizer needs it", file.path()));
  }
  const auto entries = file.get_string_array("tokenizer.ggml.merges");
  size_t total = 0;
  for (const auto entry : entries) total += entry.size();
  if (total > UINT32_MAX) {
    throw FormatError(fmt::format("{}: tokenizer.ggml.merges holds {} bytes, more than 4 GiB",
                                  file.path(), total));
  }
  merges->arena_.reserve(total);
  for (const auto entry : entries) merges->arena_ += entry;

  merges->ranks_.reset(&merges->arena_, entries.size());
  uint32_t offset = 0;
  for (size_t rank = 0; rank < entries.size(); ++rank) {
    const auto length = static_cast<uint32_t>(entries[rank].size());
    // llama.cpp splits at the first space after position 0; entries without one are skipped
    // (llama.cpp files them under an empty pair that no lookup can hit). A repeated entry keeps
    // its first rank, like llama.cpp's std::map::emplace.
    if (entries[rank].find(' ', 1) != std::string_view::npos) {
      (void)merges->ranks_.insert(offset, length, static_cast<int32_t>(rank));
    }
    offset += length;
  }
  return merges;
}

int32_t BpeMerges::rank(std::string_view left, std::string_view right) const {
  return ranks_.find(left, ' ', right);
}

void bpe_tokenize(const Vocab& vocab, const BpeMerges& merges, std::string_view text,
                  std::vector<int32_t>& out) {
  WordMerger merger(vocab, merges);
  std::string encoded;
  for (const std::string& word : pretokenize(text, vocab.pre)) {
    encoded.clear();
    for (const char c : word) encoded += unicode::byte_to_unicode(static_cast<uint8_t>(c));
    if (vocab.ignore_merges) {
      if (const int32_t id = vocab.find(encoded); id >= 0) {
        out.push_back(id);
        continue;
      }
    }
    merger.run(encoded, out);
  }
}

}  // namespace augur::tokenizer
