// SPDX-License-Identifier: Apache-2.0
// ConstantSet: a method's listed constants, the one place they live. The
// Method and each of its device instances share it; Release(new_constants)
// replaces the list for all of them at once.
#ifndef ENCORE_GRAPH_BODY_INTERNAL_CONSTANT_SET_H_
#define ENCORE_GRAPH_BODY_INTERNAL_CONSTANT_SET_H_

#include <memory>
#include <mutex>
#include <optional>
#include <utility>
#include <vector>

#include "encore/graph/method_spec.h"

namespace encore {

class ConstantSet {
 public:
  using List = std::optional<std::vector<Constant>>;  // nullopt: the method cannot list them

  explicit ConstantSet(List list) : list_(std::make_shared<const List>(std::move(list))) {}

  // The list as it is now; stays valid while held, whatever replaces it.
  std::shared_ptr<const List> Get() const {
    std::lock_guard<std::mutex> lock(mu_);
    return list_;
  }
  void Set(std::vector<Constant> constants) {
    auto next = std::make_shared<const List>(std::move(constants));
    std::lock_guard<std::mutex> lock(mu_);
    list_ = std::move(next);
  }

 private:
  mutable std::mutex mu_;
  std::shared_ptr<const List> list_;
};

}  // namespace encore

#endif  // ENCORE_GRAPH_BODY_INTERNAL_CONSTANT_SET_H_
