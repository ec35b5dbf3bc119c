// What a report records about a model file: where, which bytes (sha256), what inside.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "model/model.h"

namespace augur::bench {

// {"role", "path", "sha256", "bytes", "arch", "tensor_types": {type: count}}
nlohmann::json model_info(const std::string& role, const model::Model& model);

}  // namespace augur::bench
