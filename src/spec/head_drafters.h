// Drafters built on a head that reads the target: `eagle3` and `dflash` (a file of their own,
// model/heads/load_head.h), `mtp` (the target's own NextN layer, model/heads/nextn.h), and their
// one-hot `-argmax` variants (spec/argmax_drafts.h) that benchmarks use to measure what drafting
// with q gains.
#pragma once

#include <cstdint>
#include <memory>
#include <string_view>

#include "cache/model_cache.h"
#include "kernels/thread_pool.h"
#include "model/model.h"
#include "spec/draft_source.h"

namespace augur::spec {

// "eagle3", "dflash" or "mtp": the drafter kind of a loaded head.
std::string_view head_kind(const model::Model& head);

// Whether drafter name `drafter` (eagle3, dflash, mtp, each also with -argmax) drafts with a
// head; `kind`, when given, is the head kind it needs.
bool reads_head(std::string_view drafter, std::string_view* kind = nullptr);

// The drafter for `head`; argmax: wrapped to draft argmax with a one-hot q.
std::unique_ptr<DraftSource> make_head_drafter(const model::Model& head, kernels::ThreadPool& pool,
                                               int64_t n_ctx, int64_t ubatch,
                                               cache::CacheTypes types = {}, bool argmax = false);

// The cache a head drafter keeps (tests and memory figures); null for other sources.
const cache::ModelCache* head_drafter_cache(const DraftSource& source);

}  // namespace augur::spec
