#include "spec/head_drafters.h"

#include "common/error.h"
#include "model/heads/dflash.h"
#include "model/heads/pair_head.h"
#include "spec/argmax_drafts.h"
#include "spec/dflash_drafter.h"
#include "spec/pair_head_drafter.h"

namespace augur::spec {

std::string_view head_kind(const model::Model& head) {
  if (const auto* p = dynamic_cast<const model::heads::PairHead*>(&head)) return p->kind();
  if (dynamic_cast<const model::heads::DFlash*>(&head)) return "dflash";
  return {};
}

bool reads_head(std::string_view drafter, std::string_view* kind) {
  if (drafter.ends_with("-argmax")) drafter.remove_suffix(7);
  if (drafter != "eagle3" && drafter != "dflash" && drafter != "mtp") return false;
  if (kind) *kind = drafter;
  return true;
}

std::unique_ptr<DraftSource> make_head_drafter(const model::Model& head, kernels::ThreadPool& pool,
                                               int64_t n_ctx, int64_t ubatch,
                                               cache::CacheTypes types, bool argmax) {
  std::unique_ptr<DraftSource> drafter;
  if (const auto* e = dynamic_cast<const model::heads::PairHead*>(&head)) {
    drafter = std::make_unique<PairHeadDrafter>(*e, pool, n_ctx, ubatch, types);
  } else if (const auto* d = dynamic_cast<const model::heads::DFlash*>(&head)) {
    drafter = std::make_unique<DFlashDrafter>(*d, pool, n_ctx, ubatch, types);
  } else {
    throw InvalidArgument("not a drafter head (eagle3, dflash or mtp)");
  }
  if (argmax) return std::make_unique<ArgmaxDrafts>(std::move(drafter));
  return drafter;
}

const cache::ModelCache* head_drafter_cache(const DraftSource& source) {
  if (const auto* e = dynamic_cast<const PairHeadDrafter*>(&source)) return &e->cache();
  if (const auto* d = dynamic_cast<const DFlashDrafter*>(&source)) return &d->cache();
  return nullptr;
}

}  // namespace augur::spec
