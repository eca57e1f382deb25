// SPDX-License-Identifier: Apache-2.0
#include "encore/graph/verify/internal/constant_watch.h"

#include <optional>
#include <utility>

#include "encore/core/cuda_error.h"
#include "encore/core/internal/cuda_api.h"

namespace encore {

bool ConstantWatch::WantsGuard(const MethodFlags& flags, bool graphs_on) const {
  const bool twice = flags.binding != Binding::kStaged || flags.verify > 0 || flags.verify_every > 0;
  if (!twice || !graphs_on) return false;
  const std::shared_ptr<const ConstantSet::List> list = constants_->Get();
  return list->has_value() && !(*list)->empty();
}

StatusOr<ConstantGuard*> ConstantWatch::Guard(cudaStream_t stream) {
  std::shared_ptr<const ConstantSet::List> list = constants_->Get();
  if (!list->has_value() || (*list)->empty()) return static_cast<ConstantGuard*>(nullptr);
  if (guard_ && guarded_ == list) return guard_.get();
  // What the calls write stays true of constants that moved (the same
  // sizes): kept, since no warmup learns it again after a rebind. The old
  // guard's device memory goes first.
  std::optional<ConstantGuard::Learned> learned;
  if (guard_) learned = guard_->learned();
  guard_.reset();
  ENCORE_ASSIGN_OR_RETURN(guard_, ConstantGuard::Create(**list, stream));
  if (guard_ && learned) guard_->Inherit(*learned);
  guarded_ = std::move(list);
  return guard_.get();
}

size_t ConstantWatch::GuardBudget() {
  size_t free = 0, total = 0;
  if (cuda().MemGetInfo(&free, &total) != cudaSuccess) {
    ClearCudaError();
    return 0;
  }
  return free / 4;
}

}  // namespace encore
