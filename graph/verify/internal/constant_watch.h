// SPDX-License-Identifier: Apache-2.0
// ConstantWatch: a method instance's listed constants (shared with the
// Method) and what watches them: the guard (device checksums of their
// blocks, snapshots of those a call writes) made on first use and anew when
// the list is replaced, and the scratch memory verified launches keep.
#ifndef ENCORE_GRAPH_VERIFY_INTERNAL_CONSTANT_WATCH_H_
#define ENCORE_GRAPH_VERIFY_INTERNAL_CONSTANT_WATCH_H_

#include <cuda_runtime_api.h>

#include <cstddef>
#include <memory>

#include "encore/core/status.h"
#include "encore/graph/body/internal/constant_set.h"
#include "encore/graph/verify/internal/constant_guard.h"
#include "encore/graph/verify/internal/verified_launch.h"
#include "encore/policy/method_flags.h"

namespace encore {

class ConstantWatch {
 public:
  explicit ConstantWatch(std::shared_ptr<ConstantSet> constants) : constants_(std::move(constants)) {}

  // The list as it is now.
  std::shared_ptr<const ConstantSet::List> List() const { return constants_->Get(); }
  bool Listed() const { return constants_->Get()->has_value(); }
  // Whether calls need the guard (the probe of a direct binding, or
  // verification) and the method lists constants to guard.
  bool WantsGuard(const MethodFlags& flags, bool graphs_on) const;
  // The guard of the constants listed now, made on first use (and anew when
  // they were replaced); null when none is listed. Not during a capture.
  StatusOr<ConstantGuard*> Guard(cudaStream_t stream);
  // The guard made so far, or null.
  ConstantGuard* guard() const { return guard_.get(); }
  // The guard's limit on what it may save: a quarter of the free memory.
  static size_t GuardBudget();
  // Snapshot memory kept for the next verified launch while graphs are on.
  VerifyScratch& scratch() { return scratch_; }
  void DropScratch() { scratch_ = VerifyScratch(); }

  // Verification refused for unlisted constants has been logged.
  bool unlisted_logged = false;

 private:
  const std::shared_ptr<ConstantSet> constants_;
  std::unique_ptr<ConstantGuard> guard_;
  std::shared_ptr<const ConstantSet::List> guarded_;  // the list `guard_` was made for
  VerifyScratch scratch_;
};

}  // namespace encore

#endif  // ENCORE_GRAPH_VERIFY_INTERNAL_CONSTANT_WATCH_H_
