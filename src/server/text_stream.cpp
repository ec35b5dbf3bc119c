#include "server/text_stream.h"

#include <algorithm>

namespace augur::server {

TextStream::TextStream(const tokenizer::Tokenizer& tok, std::vector<std::string> stop)
    : decoder_(tok), stop_(std::move(stop)) {
  std::erase_if(stop_, [](const std::string& s) { return s.empty(); });
}

std::string TextStream::send_up_to(size_t end) {
  std::string out = text_.substr(sent_.size(), end - sent_.size());
  sent_ += out;
  return out;
}

std::string TextStream::push(int32_t token) {
  if (stopped_) return {};
  text_ += decoder_.push(token);
  // The earliest match that may involve new text: a match wholly inside sent_ was impossible
  // (it would have been found before), so start one stop string length before the unsent text.
  size_t first_match = std::string::npos;
  for (const auto& s : stop_) {
    const size_t from = sent_.size() >= s.size() ? sent_.size() - s.size() + 1 : 0;
    const size_t at = text_.find(s, from);
    if (at != std::string::npos) first_match = std::min(first_match, at);
  }
  if (first_match != std::string::npos) {
    stopped_ = true;
    return send_up_to(std::max(first_match, sent_.size()));
  }
  // Hold back the longest tail of text_ that is a proper prefix of some stop string.
  size_t hold = 0;
  for (const auto& s : stop_) {
    const size_t longest = std::min(s.size() - 1, text_.size() - sent_.size());
    for (size_t n = longest; n > hold; --n) {
      if (text_.compare(text_.size() - n, n, s, 0, n) == 0) {
        hold = n;
        break;
      }
    }
  }
  return send_up_to(text_.size() - hold);
}

std::string TextStream::finish() {
  if (stopped_) return {};
  text_ += decoder_.finish();
  return send_up_to(text_.size());
}

}  // namespace augur::server
