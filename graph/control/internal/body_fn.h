// SPDX-License-Identifier: Apache-2.0
// The work of an If or While body: issues it on the stream it is given (a
// body stream being captured into the conditional node's body graph, or the
// call's own stream when run eagerly). Never throws into encore: a body's
// error is a Status.
#ifndef ENCORE_GRAPH_CONTROL_INTERNAL_BODY_FN_H_
#define ENCORE_GRAPH_CONTROL_INTERNAL_BODY_FN_H_

#include <cuda_runtime_api.h>

#include <functional>

#include "encore/core/status.h"

namespace encore {

using BodyFn = std::function<Status(cudaStream_t body_stream)>;

}  // namespace encore

#endif  // ENCORE_GRAPH_CONTROL_INTERNAL_BODY_FN_H_
