// The transaction every cache kind implements (see design/ARCHITECTURE.md):
// a forward pass appends rows as *pending*; commit(keep) keeps the first `keep` pending rows
// and drops the rest, so after each speculative cycle the cache holds exactly the committed
// tokens. A commit that cannot be honoured throws; it never silently does nothing.
#pragma once

#include <cstdint>

#include "model/memory.h"

namespace augur::cache {

class Cache {
 public:
  virtual ~Cache() = default;
  virtual int64_t size() const = 0;     // committed rows
  virtual int64_t pending() const = 0;  // rows appended since the last commit
  // Keeps the first `keep` pending rows; InvalidArgument if keep > pending().
  virtual void commit(int64_t keep) = 0;
  // Drops committed rows past `n` (and all pending ones); InvalidArgument if n > size().
  virtual void truncate(int64_t n) = 0;
  virtual void clear() { truncate(0); }
  // The view a forward pass writes to and attends over.
  virtual model::Memory& memory() = 0;
};

}  // namespace augur::cache
