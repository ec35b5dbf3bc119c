#include "model/heads/load_head.h"

#include <fmt/format.h>

#include <string>

#include "common/error.h"
#include "model/heads/dflash.h"
#include "model/heads/eagle3.h"

namespace augur::model::heads {

bool is_head_arch(std::string_view arch) {
  return arch == "eagle3" || arch == "dflash";
}

std::unique_ptr<Model> load_head(const std::filesystem::path& path, const Model& target) {
  auto file = gguf::File::open(path);
  const std::string arch(file->get_string_opt("general.architecture").value_or(""));
  if (arch == "eagle3") return Eagle3::load(std::move(file), target);
  if (arch == "dflash") return DFlash::load(std::move(file), target);
  throw InvalidArgument(
      fmt::format("{}: general.architecture is '{}': not a drafter head (eagle3 or dflash)",
                  path.string(), arch));
}

}  // namespace augur::model::heads
