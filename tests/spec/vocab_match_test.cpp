// check_same_vocabulary: the zoo target and draft share a vocabulary; a model with another one, or
// a copy of the draft with one token text or one special id changed, is refused with a message
// naming the difference.
#include "spec/vocab_match.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <variant>
#include <vector>

#include "common/error.h"
#include "gguf/file.h"
#include "gguf/writer.h"
#include "support/run_command.h"
#include "test_paths.h"

namespace augur::spec {
namespace {

constexpr const char* kTokensKey = "tokenizer.ggml.tokens";
constexpr const char* kEosKey = "tokenizer.ggml.eos_token_id";

// Writes a metadata value in place of the original (returns true), or leaves it to the copy.
using MetadataEdit =
    std::function<bool(gguf::Writer& out, const std::string& key, const gguf::Value& value)>;

// Copies `src` to `dst` tensor for tensor, letting `edit` replace metadata values.
void copy_gguf(const std::filesystem::path& src, const std::filesystem::path& dst,
               const MetadataEdit& edit) {
  const auto in = gguf::File::open(src);
  gguf::Writer out(dst);
  for (const auto& [key, value] : in->metadata()) {
    if (key == gguf::Writer::kAlignmentKey) {
      out.set(key, value);
      continue;
    }
    if (!edit(out, key, value)) out.set(key, value);
  }
  for (const auto& t : in->tensors()) out.add_tensor(t.name, t.type, t.ne);
  out.write_header();
  for (const auto& t : in->tensors()) {
    out.write_tensor_data(t.name, std::span<const uint8_t>(t.data, t.n_bytes));
  }
  out.finish();
}

std::string what_of(const std::function<void()>& call) {
  try {
    call();
  } catch (const Unsupported& e) {
    return e.what();
  } catch (const std::exception& e) {
    ADD_FAILURE() << "expected Unsupported, got another error: " << e.what();
    return e.what();
  }
  ADD_FAILURE() << "expected Unsupported, nothing was thrown";
  return {};
}

void expect_contains(const std::string& message, const std::string& part) {
  EXPECT_NE(message.find(part), std::string::npos) << "'" << part << "' not in: " << message;
}

class VocabMatch : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    target_ = model::load_model(testing::models_dir() / "zoo-target-q8_0.gguf").release();
  }
  static void TearDownTestSuite() {
    delete target_;
    target_ = nullptr;
  }
  void TearDown() override {
    for (const auto& p : made_) std::filesystem::remove(p);
  }
  static std::filesystem::path draft_path() { return testing::models_dir() / "zoo-draft-f16.gguf"; }
  // A copy of the zoo draft with `edit` applied, removed after the test.
  std::filesystem::path edited_draft(const std::string& name, const MetadataEdit& edit) {
    const auto path = testing::temp_path(name + ".gguf");
    made_.push_back(path);
    copy_gguf(draft_path(), path, edit);
    return path;
  }

  static const model::Model* target_;
  std::vector<std::filesystem::path> made_;
};

const model::Model* VocabMatch::target_ = nullptr;

TEST_F(VocabMatch, ZooTargetAndDraftShareTheirVocabulary) {
  const auto draft = model::load_model(draft_path());
  EXPECT_NO_THROW(check_same_vocabulary(*target_, *draft));
  EXPECT_NO_THROW(check_same_vocabulary(*draft, *target_));
  const auto f16_target = model::load_model(testing::models_dir() / "zoo-target-f16.gguf");
  EXPECT_NO_THROW(check_same_vocabulary(*target_, *f16_target));
}

TEST_F(VocabMatch, UnchangedCopyOfTheDraftPasses) {
  // The rewrite itself changes nothing the check looks at (guards the edits below).
  const auto path = edited_draft("same", [](auto&, const auto&, const auto&) { return false; });
  const auto copy = model::load_model(path);
  EXPECT_NO_THROW(check_same_vocabulary(*target_, *copy));
}

TEST_F(VocabMatch, ModelWithAnotherVocabularySizeIsUnsupported) {
  const auto other_path = testing::fixtures_dir() / "tiny-llama.gguf";
  const auto other = model::load_model(other_path);
  const int64_t n_target = target_->hparams().n_vocab, n_other = other->hparams().n_vocab;
  ASSERT_NE(n_target, n_other);
  const std::string message = what_of([&] { check_same_vocabulary(*target_, *other); });
  expect_contains(message, "vocabulary size");
  expect_contains(message, std::to_string(n_target));
  expect_contains(message, std::to_string(n_other));
  expect_contains(message, other_path.string());
}

TEST_F(VocabMatch, OneChangedTokenTextIsNamedWithBothTexts) {
  const auto source = gguf::File::open(draft_path());
  const auto original = source->get_string_array(kTokensKey);  // views into `source`
  const size_t id = original.size() / 2;
  const std::string was(original[id]);
  const std::string now = "augur-test-changed-token";
  ASSERT_NE(was, now);
  const auto path =
      edited_draft("token", [&](gguf::Writer& out, const std::string& key, const gguf::Value&) {
        if (key != kTokensKey) return false;
        std::vector<std::string> texts(original.begin(), original.end());
        texts[id] = now;
        out.set_array(key, std::span<const std::string>(texts));
        return true;
      });
  const auto draft = model::load_model(path);
  ASSERT_EQ(draft->hparams().n_vocab, target_->hparams().n_vocab);
  const std::string message = what_of([&] { check_same_vocabulary(*target_, *draft); });
  expect_contains(message, "token " + std::to_string(id) + " ");
  expect_contains(message, "'" + was + "'");
  expect_contains(message, "'" + now + "'");
  expect_contains(message, path.string());
}

TEST_F(VocabMatch, DifferentEosTokenIdNamesTheKeyAndBothIds) {
  const int64_t eos = target_->file().get_int(kEosKey);
  const int64_t other_eos = eos + 1;
  const auto path =
      edited_draft("eos", [&](gguf::Writer& out, const std::string& key, const gguf::Value& value) {
        if (key != kEosKey) return false;
        gguf::Value changed = value;  // same stored type and width
        if (std::holds_alternative<uint64_t>(value.data)) {
          changed.data = static_cast<uint64_t>(other_eos);
        } else {
          changed.data = other_eos;
        }
        out.set(key, changed);
        return true;
      });
  const auto draft = model::load_model(path);
  ASSERT_EQ(draft->file().get_int(kEosKey), other_eos);
  const std::string message = what_of([&] { check_same_vocabulary(*target_, *draft); });
  expect_contains(message, kEosKey);
  expect_contains(message, std::to_string(eos) + " vs " + std::to_string(other_eos));
}

TEST_F(VocabMatch, DifferentAddBosFlagIsNamed) {
  constexpr const char* kAddBos = "tokenizer.ggml.add_bos_token";
  const gguf::Value* flag = target_->file().find(kAddBos);
  ASSERT_NE(flag, nullptr) << "the zoo models set " << kAddBos;
  const bool add_bos = flag->as_bool(kAddBos);
  const auto path =
      edited_draft("add-bos", [&](gguf::Writer& out, const std::string& key, const gguf::Value&) {
        if (key != kAddBos) return false;
        out.set_bool(key, !add_bos);
        return true;
      });
  const auto draft = model::load_model(path);
  const std::string message = what_of([&] { check_same_vocabulary(*target_, *draft); });
  expect_contains(message, kAddBos);
}

}  // namespace
}  // namespace augur::spec
