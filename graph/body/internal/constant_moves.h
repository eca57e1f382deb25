// SPDX-License-Identifier: Apache-2.0
// A rebind of a method's listed constants (Method::RebindConstants): the
// request checked against the list, the list it makes, and the constants
// whose storage moved. Pure logic, no CUDA (constant_moves_test.cc): the
// graphs' references are found and rewritten by graph/binding, per piece.
#ifndef ENCORE_GRAPH_BODY_INTERNAL_CONSTANT_MOVES_H_
#define ENCORE_GRAPH_BODY_INTERNAL_CONSTANT_MOVES_H_

#include <cstddef>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "encore/core/status.h"
#include "encore/core/tensor.h"
#include "encore/graph/method_spec.h"

namespace encore {

// A listed constant whose bytes now live elsewhere (same size).
struct ConstantMove {
  std::string name;
  const void* from = nullptr;
  const void* to = nullptr;
  size_t bytes = 0;
};

struct ConstantRebind {
  std::vector<Constant> list;       // the listed constants, the rebound ones replaced
  std::vector<ConstantMove> moves;  // those whose address changed, in list order
};

// Checks `changes` against `listed` (the method's constants; nullopt: it
// cannot list them, so no name is known): every name listed and given once,
// a non-null address, the listed size. An InvalidArgument naming the method
// and the constant (and both sizes) otherwise. A change replaces the whole
// entry (its read_only too); one at the same address moves nothing.
StatusOr<ConstantRebind> PlanConstantRebind(std::string_view method,
                                            const std::optional<std::vector<Constant>>& listed,
                                            std::span<const Constant> changes);

// Why the moves cannot be applied by rewriting the words that point into
// the old storage, or empty: a moved constant's old bytes overlap another
// listed constant that did not move, or one that moved by another distance
// (a word in the overlap could mean either).
std::string MovesAmbiguity(const ConstantRebind& rebind);

// The moved constants' old bytes as byte tensors (what the reference scan
// looks for), their names, and their new addresses, in the same order.
std::vector<TensorRef> OldStorage(std::span<const ConstantMove> moves);
// The listed constants that did not move, as byte tensors: a word inside
// one names it, not the end of a moved constant's old bytes it adjoins
// (Note [An end that is a neighbour's base], graph/binding/reference_scan.cc).
std::vector<TensorRef> StayingStorage(const ConstantRebind& rebind);
std::vector<std::string> MovedNames(std::span<const ConstantMove> moves);
std::vector<const void*> NewAddresses(std::span<const ConstantMove> moves);

}  // namespace encore

#endif  // ENCORE_GRAPH_BODY_INTERNAL_CONSTANT_MOVES_H_
