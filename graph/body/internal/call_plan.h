// SPDX-License-Identifier: Apache-2.0
// CallPlan: the tensors of one call as the dispatcher hands them on: the
// caller's, and those the graph is captured for and matched against (the
// same, or under on_new_shape=pad the caller's seen at its bucket's rows).
#ifndef ENCORE_GRAPH_BODY_INTERNAL_CALL_PLAN_H_
#define ENCORE_GRAPH_BODY_INTERNAL_CALL_PLAN_H_

#include <cstdint>

#include "encore/core/internal/args.h"

namespace encore {

struct CallPlan {
  Args inputs;
  Args outputs;
  Args graph_inputs;
  Args graph_outputs;
  int64_t batch = -1;  // under on_new_shape=pad: the call's b
  bool precapture = false;  // Method::Precapture's: not a call, so never counted as one
  // Under on_new_shape=pad: the call's bucket would pad it more than eager
  // costs, so it runs eagerly (Padding::EagerInstead, asked once per call).
  bool pad_eager = false;
  bool padded() const { return batch >= 0; }
};

// A matching signature already implies valid tensors apart from the data
// pointers, so the fast paths validate nothing twice.
inline bool PointersOk(Args tensors) {
  bool ok = true;
  for (const TensorRef& t : tensors) ok &= t.data != nullptr || t.numel() == 0;
  return ok;
}

}  // namespace encore

#endif  // ENCORE_GRAPH_BODY_INTERNAL_CALL_PLAN_H_
