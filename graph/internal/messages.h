// SPDX-License-Identifier: Apache-2.0
// Error text helpers for graph/: errors a user sees name the method they
// came from, always worded the same way.
#ifndef ENCORE_GRAPH_INTERNAL_MESSAGES_H_
#define ENCORE_GRAPH_INTERNAL_MESSAGES_H_

#include <string>
#include <string_view>

#include "encore/core/status.h"

namespace encore {

// "method 'forward'": how every message names a method.
inline std::string MethodQuoted(std::string_view method) { return "method '" + std::string(method) + "'"; }

// `s` with "method '<name>': " in front, unless it is OK, a capture refusal
// (whose flag a rebuilt Status would lose; shims name their caller), or
// already names the method.
inline Status NameMethod(std::string_view method, Status s) {
  if (s.ok() || IsCaptureRefusal(s)) return s;
  const std::string head = MethodQuoted(method);
  if (s.message().find(head) != std::string_view::npos) return s;
  return Status(s.code(), head + ": " + std::string(s.message()));
}

}  // namespace encore

#endif  // ENCORE_GRAPH_INTERNAL_MESSAGES_H_
