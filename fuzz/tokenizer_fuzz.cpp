// libFuzzer target: the tokenizer on arbitrary bytes (invalid UTF-8 and special-token texts
// included), with every vocabulary kind we have: SPM (llama-spm, zoo), and byte-level BPE with
// each pre-tokenizer of the shared vocabularies (gpt-2, llama-bpe, qwen2, deepseek-llm, falcon,
// mpt, refact, starcoder). Input: [vocabulary][flags][text]. Encoding, decoding the ids again,
// the streaming decoder, and decoding ids read from the input (out-of-range ones included) must
// end normally or with an augur::Error.
#include <fuzzer/FuzzedDataProvider.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "common/error.h"
#include "fuzz_paths.h"
#include "gguf/file.h"
#include "tokenizer/tokenizer.h"

namespace {

using namespace augur;

std::vector<std::unique_ptr<tokenizer::Tokenizer>>& vocabularies() {
  static std::vector<std::unique_ptr<tokenizer::Tokenizer>> all;
  return all;
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  std::vector<std::filesystem::path> files;
  for (const auto& entry :
       std::filesystem::directory_iterator(fuzz::shared_dir() / "fixtures" / "tokenizers"))
    if (entry.path().extension() == ".gguf") files.push_back(entry.path());
  std::sort(files.begin(), files.end());
  files.push_back(fuzz::source_dir() / "models" / "zoo-draft-f16.gguf");
  for (const auto& path : files) {
    vocabularies().push_back(tokenizer::Tokenizer::from_gguf(*gguf::File::open(path)));
  }
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  FuzzedDataProvider in(data, size);
  const auto& tok =
      *vocabularies()[in.ConsumeIntegralInRange<size_t>(0, vocabularies().size() - 1)];
  const uint8_t flags = in.ConsumeIntegral<uint8_t>();
  const bool add_special = flags & 1, parse_special = flags & 2, special = flags & 4;
  try {
    if (flags & 8) {
      // Ids straight from the input, some out of range: decode must refuse those by name.
      std::vector<int32_t> ids;
      while (in.remaining_bytes() >= 2)
        ids.push_back(in.ConsumeIntegralInRange<int32_t>(-2, tok.n_vocab() + 1));
      (void)tok.decode(ids, special);
      tokenizer::StreamDecoder stream(tok, special);
      for (int32_t id : ids) (void)stream.push(id);
      (void)stream.finish();
      return 0;
    }
    const std::string text = in.ConsumeRemainingBytesAsString();
    const std::vector<int32_t> ids = tok.encode(text, add_special, parse_special);
    for (int32_t id : ids)
      if (id < 0 || id >= tok.n_vocab()) __builtin_trap();  // encode yields only valid ids
    const std::string back = tok.decode(ids, special);
    tokenizer::StreamDecoder stream(tok, special);
    std::string streamed;
    for (int32_t id : ids) streamed += stream.push(id);
    streamed += stream.finish();
    (void)back;
  } catch (const Error&) {
    // An id out of range, named: the intended outcome.
  }
  return 0;
}
