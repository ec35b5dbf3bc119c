#include "bench/model_info.h"

#include <map>

#include "bench/build_info.h"

namespace augur::bench {

nlohmann::json model_info(const std::string& role, const model::Model& model) {
  const gguf::File& file = model.file();
  std::map<std::string, int> types;
  for (const auto& t : file.tensors()) ++types[std::string(gguf::type_name(t.type))];
  return {{"role", role},
          {"path", report_path(file.path())},
          {"sha256", sha256_file(file.path())},
          {"bytes", file.file_size()},
          {"arch", std::string(file.get_string("general.architecture"))},
          {"tensor_types", types}};
}

}  // namespace augur::bench
