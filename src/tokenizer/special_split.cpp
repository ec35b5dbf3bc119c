#include "tokenizer/special_split.h"

namespace augur::tokenizer {

std::vector<Fragment> split_special(std::string_view text, const Vocab& vocab, bool parse_special) {
  std::vector<Fragment> fragments;
  if (text.empty()) return fragments;
  fragments.push_back({-1, 0, text.size()});

  std::vector<Fragment> next;
  for (const int32_t id : vocab.special_tokens) {
    if (!parse_special && (vocab.has(id, kAttrControl) || vocab.has(id, kAttrUnknown))) continue;
    const std::string_view special = vocab.text(id);

    // Cheap pre-check: most special texts do not occur at all.
    bool found = false;
    for (const Fragment& f : fragments) {
      if (f.token < 0 && text.substr(f.offset, f.length).find(special) != std::string_view::npos) {
        found = true;
        break;
      }
    }
    if (!found) continue;

    next.clear();
    for (const Fragment& f : fragments) {
      if (f.token >= 0) {
        next.push_back(f);
        continue;
      }
      const std::string_view raw = text.substr(f.offset, f.length);
      size_t begin = 0;
      for (size_t match = raw.find(special); match != std::string_view::npos;
           match = raw.find(special, begin)) {
        if (match > begin) next.push_back({-1, f.offset + begin, match - begin});
        next.push_back({id, f.offset + match, special.size()});
        begin = match + special.size();
      }
      if (begin < raw.size()) next.push_back({-1, f.offset + begin, raw.size() - begin});
    }
    fragments.swap(next);
  }
  return fragments;
}

}  // namespace augur::tokenizer
