// Generated tokens -> the text a client may see: whole UTF-8 characters only (a character split
// over byte-fallback tokens is held back until it is complete), and stop strings matched on the
// text across token boundaries. Text that could still turn into a stop string is held back; a
// match ends the output just before it, so a stop string is never sent.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tokenizer/tokenizer.h"

namespace augur::server {

class TextStream {
 public:
  TextStream(const tokenizer::Tokenizer& tok, std::vector<std::string> stop);

  // The text that became safe to send with this token (may be empty). After a stop string
  // matched, stopped() is true and every later call returns "".
  std::string push(int32_t token);
  // Generation ended without a stop match: whatever was held back (an incomplete character at
  // the very end is sent as its bytes).
  std::string finish();
  bool stopped() const { return stopped_; }
  // Everything sent so far, i.e. the completion text.
  const std::string& sent() const { return sent_; }
  // Bytes of text decoded so far (sent or held back): where the next token's text starts.
  size_t decoded_size() const { return text_.size(); }

 private:
  // Sends text_[sent_.size(), end).
  std::string send_up_to(size_t end);

  tokenizer::StreamDecoder decoder_;
  std::vector<std::string> stop_;
  std::string text_;  // all decoded text
  std::string sent_;  // its prefix already handed out
  bool stopped_ = false;
};

}  // namespace augur::server
