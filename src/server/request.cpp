#include "server/request.h"

#include <fmt/format.h>

#include <cmath>
#include <limits>

#include "common/error.h"

namespace augur::server {
namespace {

using Json = nlohmann::ordered_json;

// The field, when present and not null.
const Json* field(const Json& body, const char* name) {
  const auto it = body.find(name);
  return it == body.end() || it->is_null() ? nullptr : &*it;
}

double number(const Json& body, const char* name, double fallback) {
  const Json* v = field(body, name);
  if (!v) return fallback;
  if (!v->is_number()) throw InvalidArgument(fmt::format("'{}' must be a number", name));
  return v->get<double>();
}

int64_t integer(const Json& body, const char* name, int64_t fallback, int64_t lo, int64_t hi) {
  const Json* v = field(body, name);
  if (!v) return fallback;
  const auto out_of_range = [&](const std::string& value) {
    return InvalidArgument(
        fmt::format("'{}' = {} is out of range: use {}..{}", name, value, lo, hi));
  };
  int64_t value = 0;
  if (v->is_number_unsigned()) {
    if (v->get<uint64_t>() > static_cast<uint64_t>(hi)) throw out_of_range(v->dump());
    value = static_cast<int64_t>(v->get<uint64_t>());
  } else if (v->is_number_integer()) {
    value = v->get<int64_t>();
  } else if (v->is_number_float() && std::nearbyint(v->get<double>()) == v->get<double>() &&
             std::abs(v->get<double>()) < 9e15) {
    value = static_cast<int64_t>(v->get<double>());  // 3.0 is an integer to JSON; 3.5 is not
  } else {
    throw InvalidArgument(fmt::format("'{}' must be an integer", name));
  }
  if (value < lo || value > hi) throw out_of_range(std::to_string(value));
  return value;
}

bool boolean(const Json& body, const char* name, bool fallback) {
  const Json* v = field(body, name);
  if (!v) return fallback;
  if (!v->is_boolean()) throw InvalidArgument(fmt::format("'{}' must be true or false", name));
  return v->get<bool>();
}

std::vector<std::string> stop_strings(const Json& body) {
  const Json* v = field(body, "stop");
  std::vector<std::string> out;
  if (!v) return out;
  const auto add = [&](const Json& s) {
    if (!s.is_string()) throw InvalidArgument("'stop' must be a string or a list of strings");
    if (!s.get_ref<const std::string&>().empty()) out.push_back(s.get<std::string>());
  };
  if (v->is_array()) {
    if (v->size() > kMaxStopStrings) {
      throw InvalidArgument(
          fmt::format("'stop' has {} strings; at most {} are allowed", v->size(), kMaxStopStrings));
    }
    for (const auto& s : *v) add(s);
  } else {
    add(*v);
  }
  return out;
}

std::vector<int32_t> token_ids(const Json& list) {
  std::vector<int32_t> ids;
  for (const auto& t : list) {
    if (!t.is_number_integer() || t.get<int64_t>() < 0 ||
        t.get<int64_t>() > std::numeric_limits<int32_t>::max()) {
      throw InvalidArgument("'prompt' token ids must be non-negative integers");
    }
    ids.push_back(static_cast<int32_t>(t.get<int64_t>()));
  }
  return ids;
}

// prompt: a string, a list of one string, a list of token ids, or a list of one such list.
void read_prompt(const Json& body, CompletionRequest& r) {
  const Json* v = field(body, "prompt");
  if (!v) throw InvalidArgument("'prompt' is required");
  if (v->is_string()) {
    r.prompt = v->get<std::string>();
    return;
  }
  if (!v->is_array() || v->empty()) {
    throw InvalidArgument(
        "'prompt' must be a string, a list of token ids, or a list of one of them");
  }
  if ((*v)[0].is_number()) {
    r.prompt_ids = token_ids(*v);
    return;
  }
  if (v->size() != 1) {
    throw InvalidArgument(fmt::format(
        "'prompt' holds {} prompts; one request completes one prompt (n = 1)", v->size()));
  }
  const Json& only = (*v)[0];
  if (only.is_string()) {
    r.prompt = only.get<std::string>();
  } else if (only.is_array() && !only.empty()) {
    r.prompt_ids = token_ids(only);
  } else {
    throw InvalidArgument(
        "'prompt' must be a string, a list of token ids, or a list of one of them");
  }
}

void read_logprobs(const Json& body, CompletionRequest& r) {
  const Json* v = field(body, "logprobs");
  if (r.endpoint == Endpoint::Chat) {
    r.logprobs = boolean(body, "logprobs", false);
    r.top_logprobs = static_cast<int>(integer(body, "top_logprobs", 0, 0, kMaxTopLogprobs));
    if (r.top_logprobs > 0 && !r.logprobs) {
      throw InvalidArgument("'top_logprobs' needs 'logprobs': true");
    }
    return;
  }
  // Completions: logprobs is the number of alternatives (0 = the chosen token's only).
  if (!v) return;
  if (v->is_boolean()) {
    r.logprobs = v->get<bool>();
    return;
  }
  r.top_logprobs = static_cast<int>(integer(body, "logprobs", 0, 0, kMaxTopLogprobs));
  r.logprobs = true;
}

void refuse_unsupported(const Json& body) {
  if (const Json* bias = field(body, "logit_bias"); bias && !bias->empty()) {
    throw InvalidArgument("'logit_bias' is not supported");
  }
  if (const Json* format = field(body, "response_format")) {
    const Json* type = format->is_object() ? field(*format, "type") : nullptr;
    if (!type || *type != "text") {
      throw InvalidArgument("'response_format' other than {\"type\": \"text\"} is not supported");
    }
  }
  if (const Json* suffix = field(body, "suffix"); suffix && *suffix != "") {
    throw InvalidArgument("'suffix' is not supported");
  }
  if (boolean(body, "echo", false)) throw InvalidArgument("'echo' is not supported");
  if (integer(body, "best_of", 1, 1, 1) != 1) throw InvalidArgument("'best_of' must be 1");
}

}  // namespace

Json parse_messages(const Json& messages) {
  if (!messages.is_array()) throw InvalidArgument("'messages' must be a list of messages");
  if (messages.empty()) throw InvalidArgument("'messages' is empty: nothing to answer");
  Json out = Json::array();
  for (size_t i = 0; i < messages.size(); ++i) {
    const Json& m = messages[i];
    if (!m.is_object()) throw InvalidArgument(fmt::format("messages[{}] must be an object", i));
    const Json* role = field(m, "role");
    if (!role || !role->is_string()) {
      throw InvalidArgument(fmt::format("messages[{}].role must be a string", i));
    }
    const auto& r = role->get_ref<const std::string&>();
    if (r != "system" && r != "developer" && r != "user" && r != "assistant" && r != "tool") {
      throw InvalidArgument(fmt::format(
          "messages[{}].role '{}' is unknown: use system, developer, user, assistant or tool", i,
          r));
    }
    Json copy = m;
    const Json* content = field(m, "content");
    if (!content) {
      if (r != "assistant" || !field(m, "tool_calls")) {
        throw InvalidArgument(fmt::format("messages[{}].content is missing", i));
      }
    } else if (content->is_array()) {
      // Content parts: only text is understood; they are joined as OpenAI does for text-only.
      std::string text;
      for (const auto& part : *content) {
        const Json* type = part.is_object() ? field(part, "type") : nullptr;
        const Json* part_text = part.is_object() ? field(part, "text") : nullptr;
        if (!type || *type != "text" || !part_text || !part_text->is_string()) {
          throw InvalidArgument(
              fmt::format("messages[{}].content: only parts of type \"text\" are supported", i));
        }
        text += part_text->get<std::string>();
      }
      copy["content"] = text;
    } else if (!content->is_string()) {
      throw InvalidArgument(fmt::format("messages[{}].content must be a string", i));
    }
    if (r == "developer") copy["role"] = "system";  // templates know the older name
    out.push_back(std::move(copy));
  }
  return out;
}

CompletionRequest parse_completion_request(const Json& body, Endpoint endpoint) {
  if (!body.is_object()) throw InvalidArgument("the request body must be a JSON object");
  CompletionRequest r;
  r.endpoint = endpoint;
  if (const Json* model = field(body, "model")) {
    if (!model->is_string()) throw InvalidArgument("'model' must be a string");
    r.model = model->get<std::string>();
  }
  if (endpoint == Endpoint::Chat) {
    const Json* messages = field(body, "messages");
    if (!messages) throw InvalidArgument("'messages' is required");
    r.messages = parse_messages(*messages);
  } else {
    read_prompt(body, r);
  }
  constexpr int64_t kMaxTokens = int64_t{1} << 24;
  r.max_tokens = static_cast<int>(integer(body, "max_tokens", -1, -1, kMaxTokens));
  r.max_tokens =
      static_cast<int>(integer(body, "max_completion_tokens", r.max_tokens, -1, kMaxTokens));
  if (integer(body, "n", 1, 1, 1) != 1) throw InvalidArgument("'n' must be 1");

  auto& s = r.sampler;
  s.temperature = static_cast<float>(number(body, "temperature", s.temperature));
  s.top_p = static_cast<float>(number(body, "top_p", s.top_p));
  s.top_k = static_cast<int>(integer(body, "top_k", s.top_k, 0, std::numeric_limits<int>::max()));
  s.min_p = static_cast<float>(number(body, "min_p", s.min_p));
  s.repeat_penalty = static_cast<float>(number(body, "repeat_penalty", s.repeat_penalty));
  for (const auto& [name, value] : {std::pair{"presence_penalty", &s.presence_penalty},
                                    {"frequency_penalty", &s.frequency_penalty}}) {
    const double v = number(body, name, 0);
    if (v < -2 || v > 2) {
      throw InvalidArgument(fmt::format("'{}' = {} is out of range: use -2..2", name, v));
    }
    *value = static_cast<float>(v);
  }
  s.repeat_last_n = static_cast<int>(
      integer(body, "repeat_last_n", s.repeat_last_n, -1, std::numeric_limits<int>::max()));
  try {
    s.validate();
  } catch (const InvalidArgument& e) {
    throw InvalidArgument(fmt::format("sampling parameters: {}", e.what()));
  }
  // -1 is llama-server's "random"; OpenAI seeds are 64-bit integers.
  if (const Json* seed = field(body, "seed")) {
    if (!seed->is_number_integer()) throw InvalidArgument("'seed' must be an integer");
    if (seed->is_number_unsigned()) {
      r.seed = seed->get<uint64_t>();
    } else if (seed->get<int64_t>() != -1) {
      r.seed = static_cast<uint64_t>(seed->get<int64_t>());
    }
  }
  r.stop = stop_strings(body);
  r.stream = boolean(body, "stream", false);
  if (const Json* options = field(body, "stream_options")) {
    if (!options->is_object()) throw InvalidArgument("'stream_options' must be an object");
    if (!r.stream) throw InvalidArgument("'stream_options' is only allowed with 'stream': true");
    r.include_usage = boolean(*options, "include_usage", false);
  }
  read_logprobs(body, r);
  r.ignore_eos = boolean(body, "ignore_eos", false);
  refuse_unsupported(body);
  return r;
}

}  // namespace augur::server
