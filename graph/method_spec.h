// SPDX-License-Identifier: Apache-2.0
// What an application registers: a method's name, its body (one fn, or
// stages), its constants and its flags.
#ifndef ENCORE_GRAPH_METHOD_SPEC_H_
#define ENCORE_GRAPH_METHOD_SPEC_H_

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "encore/core/status.h"
#include "encore/graph/call.h"
#include "encore/policy/method_flags.h"

namespace encore {

// A device buffer whose address stays fixed for a graph's life: weights, and
// state a method updates in place (a KV cache, a counter).
struct Constant {
  std::string name;
  const void* data = nullptr;
  size_t bytes = 0;
  // The method never writes it (weights): the capture's probe and
  // verification never copy it, only check with a device-side checksum that
  // it did not change.
  bool read_only = false;
};

// InvalidArgument naming the first constant with a null address.
Status ValidateConstants(std::string_view method, const std::vector<Constant>& constants);

// One step of a piecewise method. Each maximal run of stages that are not
// `eager` is captured as one graph (a piece); an eager stage runs eagerly on
// every call, between the graphs of the pieces around it.
struct Stage {
  std::string name;
  MethodFn fn;
  bool eager = false;
};

struct MethodSpec {
  std::string name;
  // The body; a method has either `fn` or `stages`.
  MethodFn fn;
  // nullopt: the method cannot list its constants.
  std::optional<std::vector<Constant>> constants;
  // nullopt: the manager's defaults, overridden by the flags text.
  std::optional<MethodFlags> flags;
  // The body as stages, run in order on the call's stream.
  std::vector<Stage> stages;
};

// InvalidArgument naming the method when it has both fn and stages or
// neither, or a stage with an empty or repeated name or no fn.
Status ValidateMethodBody(const MethodSpec& spec);

}  // namespace encore

#endif  // ENCORE_GRAPH_METHOD_SPEC_H_
