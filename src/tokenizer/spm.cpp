#include "tokenizer/spm.h"

#include <queue>

#include "tokenizer/unicode.h"

namespace augur::tokenizer {

namespace {

// A run of bytes of the input; merged symbols absorb their right neighbour (n of which drops to 0).
struct Symbol {
  int prev;
  int next;
  size_t start;
  size_t n;
};

struct Bigram {
  int left;
  int right;
  float score;
  size_t size;  // bytes of left + right when queued; a mismatch later means it is stale
};

// Highest score first; on equal scores the leftmost pair.
struct LowerPriority {
  bool operator()(const Bigram& a, const Bigram& b) const {
    return a.score < b.score || (a.score == b.score && a.left > b.left);
  }
};

class Session {
 public:
  Session(const Vocab& vocab, std::string_view text) : vocab_(vocab), text_(text) {}

  void run(std::vector<int32_t>& out) {
    for (size_t offset = 0; offset < text_.size();) {
      const size_t len = std::min(unicode::sequence_length(static_cast<uint8_t>(text_[offset])),
                                  text_.size() - offset);
      const int index = static_cast<int>(symbols_.size());
      offset += len;
      symbols_.push_back({index - 1, offset == text_.size() ? -1 : index + 1, offset - len, len});
    }
    for (int right = 1; right < static_cast<int>(symbols_.size()); ++right) {
      try_add_bigram(right - 1, right);
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

      try_add_bigram(left.prev, bigram.left);
      try_add_bigram(bigram.left, left.next);
    }

    if (symbols_.empty()) return;
    for (int index = 0; index != -1; index = symbols_[index].next) emit(symbols_[index], out);
  }

 private:
  std::string_view piece(const Symbol& symbol, size_t n) const {
    return text_.substr(symbol.start, n);
  }

  void try_add_bigram(int left, int right) {
    if (left == -1 || right == -1) return;
    const size_t size = symbols_[left].n + symbols_[right].n;
    const int32_t id = vocab_.find(piece(symbols_[left], size));
    if (id < 0) return;
    queue_.push({left, right, vocab_.scores[id], size});
  }

  // A merged symbol is always a vocabulary token (merges only form tokens), so only single
  // characters can miss; they go out as byte tokens. (llama.cpp's rev_merge re-segmentation is
  // therefore never reached and is not reproduced.)
  void emit(const Symbol& symbol, std::vector<int32_t>& out) const {
    const std::string_view text = piece(symbol, symbol.n);
    const int32_t id = vocab_.find(text);
    if (id >= 0) {
      out.push_back(id);
      return;
    }
    for (const char c : text) {
      const int32_t byte_id = vocab_.byte_token(static_cast<uint8_t>(c));
      // llama.cpp aborts when the byte token is missing; we fall back to <unk> (or drop it).
      const int32_t fallback = byte_id >= 0 ? byte_id : vocab_.unk;
      if (fallback >= 0) out.push_back(fallback);
    }
  }

  const Vocab& vocab_;
  std::string_view text_;
  std::vector<Symbol> symbols_;
  std::priority_queue<Bigram, std::vector<Bigram>, LowerPriority> queue_;
};

}  // namespace

void spm_tokenize(const Vocab& vocab, std::string_view text, std::vector<int32_t>& out) {
  Session(vocab, text).run(out);
}

}  // namespace augur::tokenizer
