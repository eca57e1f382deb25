// SPDX-License-Identifier: Apache-2.0
// A call's address set (every input's data pointer, then every output's),
// its key, and the ring of recent keys that no executable held: a set seen
// twice earns its own executable (VariantCache).
#ifndef ENCORE_GRAPH_BINDING_INTERNAL_ADDRESS_SET_H_
#define ENCORE_GRAPH_BINDING_INTERNAL_ADDRESS_SET_H_

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "encore/core/internal/args.h"
#include "encore/core/tensor.h"
#include "encore/core/internal/text.h"

namespace encore {

// What an executable's nodes point at, one address per tensor (inputs, then
// outputs); null where unknown (the next rewrite writes that tensor again).
using Addresses = std::vector<const void*>;

inline Addresses AddressesOf(Args inputs, Args outputs) {
  Addresses a;
  a.reserve(inputs.size() + outputs.size());
  for (const TensorRef& t : inputs) a.push_back(t.data);
  for (const TensorRef& t : outputs) a.push_back(t.data);
  return a;
}

// Whether `bound` holds exactly the call's addresses (no allocation: this
// is the replay path's test).
inline bool SameAddresses(const Addresses& bound, Args inputs, Args outputs) {
  if (bound.size() != inputs.size() + outputs.size()) return false;
  size_t t = 0;
  for (const TensorRef& r : inputs) {
    if (bound[t++] != r.data) return false;
  }
  for (const TensorRef& r : outputs) {
    if (bound[t++] != r.data) return false;
  }
  return true;
}

inline uint64_t AddressKey(const Addresses& addresses) {
  uint64_t key = kFnvOffset;
  for (const void* p : addresses) key = Fnv1aWord(key, reinterpret_cast<uintptr_t>(p));
  return key;
}

inline uint64_t AddressSetKey(Args inputs, Args outputs) {
  uint64_t key = kFnvOffset;
  for (const TensorRef& t : inputs) key = Fnv1aWord(key, reinterpret_cast<uintptr_t>(t.data));
  for (const TensorRef& t : outputs) key = Fnv1aWord(key, reinterpret_cast<uintptr_t>(t.data));
  return key;
}

// The first index i of n, looking from `start` on and wrapping around, for
// which match(i) holds; n when none does. Executables are searched this way
// from the last call's, so fixed and rotating buffers hit at once.
template <class Match>
size_t FindFrom(size_t start, size_t n, Match match) {
  for (size_t j = 0, i = n == 0 ? 0 : start % n; j < n; ++j) {
    if (match(i)) return i;
    if (++i == n) i = 0;
  }
  return n;
}

class MissRing {
 public:
  // True when `key` missed before (it recurs); else remembers it.
  bool Recurs(uint64_t key) {
    if (Holds(key)) return true;
    keys_[next_++ % keys_.size()] = key;
    return false;
  }
  // Whether `key` is among the last keys remembered; remembers nothing.
  bool Holds(uint64_t key) const { return std::find(keys_.begin(), keys_.end(), key) != keys_.end(); }

 private:
  // Four times the most executables a graph keeps: a rotation over that
  // many sets is seen to recur on its second round.
  std::array<uint64_t, 256> keys_{};
  size_t next_ = 0;
};

}  // namespace encore

#endif  // ENCORE_GRAPH_BINDING_INTERNAL_ADDRESS_SET_H_
