// SPDX-License-Identifier: Apache-2.0
#include "encore/graph/body/internal/constant_moves.h"

#include <cstdint>
#include <set>

#include "encore/graph/internal/messages.h"

namespace encore {
namespace {

std::string Quoted(std::string_view name) { return "constant '" + std::string(name) + "'"; }

bool Overlap(uintptr_t a, size_t a_bytes, uintptr_t b, size_t b_bytes) {
  return a_bytes > 0 && b_bytes > 0 && a < b + b_bytes && b < a + a_bytes;
}

uintptr_t Address(const void* p) { return reinterpret_cast<uintptr_t>(p); }

}  // namespace

StatusOr<ConstantRebind> PlanConstantRebind(std::string_view method,
                                            const std::optional<std::vector<Constant>>& listed,
                                            std::span<const Constant> changes) {
  const std::string head = MethodQuoted(method) + ": RebindConstants: ";
  ConstantRebind r;
  if (listed) r.list = *listed;
  std::set<std::string_view> seen;
  for (const Constant& c : changes) {
    if (!seen.insert(c.name).second) return InvalidArgumentError(head + Quoted(c.name) + " is given twice");
    size_t i = 0;
    while (i < r.list.size() && r.list[i].name != c.name) ++i;
    if (i == r.list.size()) {
      return InvalidArgumentError(head + Quoted(c.name) + " is not among the method's listed constants" +
                                  (listed ? "" : " (the method cannot list its constants)"));
    }
    if (c.data == nullptr) return InvalidArgumentError(head + Quoted(c.name) + " has a null address");
    if (c.bytes != r.list[i].bytes) {
      return InvalidArgumentError(head + Quoted(c.name) + " has " + std::to_string(c.bytes) + " bytes, listed with " +
                                  std::to_string(r.list[i].bytes) + "; a constant of another size needs Release");
    }
  }
  for (Constant& l : r.list) {
    for (const Constant& c : changes) {
      if (c.name != l.name) continue;
      if (c.data != l.data) r.moves.push_back(ConstantMove{l.name, l.data, c.data, l.bytes});
      l = c;
    }
  }
  return r;
}

std::string MovesAmbiguity(const ConstantRebind& rebind) {
  for (const ConstantMove& m : rebind.moves) {
    const intptr_t shift = static_cast<intptr_t>(Address(m.to) - Address(m.from));
    for (const Constant& c : rebind.list) {
      if (c.name == m.name) continue;
      const ConstantMove* other = nullptr;
      for (const ConstantMove& o : rebind.moves) other = o.name == c.name ? &o : other;
      const uintptr_t base = Address(other != nullptr ? other->from : c.data);
      if (!Overlap(Address(m.from), m.bytes, base, c.bytes)) continue;
      if (other == nullptr) {
        return Quoted(m.name) + " moved and its old bytes overlap " + Quoted(c.name) +
               ", which did not: a reference into the overlap could mean either";
      }
      if (static_cast<intptr_t>(Address(other->to) - Address(other->from)) != shift) {
        return Quoted(m.name) + " and " + Quoted(c.name) +
               " shared bytes and moved by different distances: a reference into the overlap could mean either";
      }
    }
  }
  return {};
}

std::vector<TensorRef> OldStorage(std::span<const ConstantMove> moves) {
  std::vector<TensorRef> refs;
  for (const ConstantMove& m : moves) {
    refs.push_back(TensorRef{const_cast<void*>(m.from), DType::kUInt8, {static_cast<int64_t>(m.bytes)}, {}});
  }
  return refs;
}

std::vector<TensorRef> StayingStorage(const ConstantRebind& rebind) {
  std::vector<TensorRef> refs;
  for (const Constant& c : rebind.list) {
    bool moved = false;
    for (const ConstantMove& m : rebind.moves) moved = moved || m.name == c.name;
    if (moved || c.data == nullptr || c.bytes == 0) continue;
    refs.push_back(TensorRef{const_cast<void*>(c.data), DType::kUInt8, {static_cast<int64_t>(c.bytes)}, {}});
  }
  return refs;
}

std::vector<std::string> MovedNames(std::span<const ConstantMove> moves) {
  std::vector<std::string> names;
  for (const ConstantMove& m : moves) names.push_back(m.name);
  return names;
}

std::vector<const void*> NewAddresses(std::span<const ConstantMove> moves) {
  std::vector<const void*> to;
  for (const ConstantMove& m : moves) to.push_back(m.to);
  return to;
}

}  // namespace encore
