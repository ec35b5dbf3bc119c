// Drafter heads: files that are not language models but read a target's hidden states
// (general.architecture "eagle3" or "dflash"). -md and --draft-head accept either.
#pragma once

#include <filesystem>
#include <memory>
#include <string_view>

#include "model/model.h"

namespace augur::model::heads {

// Whether general.architecture `arch` names a drafter head.
bool is_head_arch(std::string_view arch);

// Loads the head at `path` for `target` by its architecture; InvalidArgument when the file is no
// head (naming its architecture).
std::unique_ptr<Model> load_head(const std::filesystem::path& path, const Model& target);

}  // namespace augur::model::heads
