// SPDX-License-Identifier: Apache-2.0
// The key of a call's address set, and the ring of recent keys that no
// executable held: a set seen twice earns its own executable (ExecCache for
// staged graphs, DirectGraph for direct ones). Internal to graph/.
#ifndef ENCORE_GRAPH_ADDRESS_SET_H_
#define ENCORE_GRAPH_ADDRESS_SET_H_

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <span>

#include "encore/core/tensor.h"

namespace encore {

// FNV-1a over the caller's addresses.
inline constexpr uint64_t kAddressKeySeed = 14695981039346656037ull;
inline uint64_t MixAddress(uint64_t key, const void* p) {
  return (key ^ reinterpret_cast<uintptr_t>(p)) * 1099511628211ull;
}

// The same key over addresses already listed (inputs, then outputs).
inline uint64_t AddressKey(std::span<const void* const> addresses) {
  uint64_t key = kAddressKeySeed;
  for (const void* p : addresses) key = MixAddress(key, p);
  return key;
}

// The first index i of n, looking from `start` on and wrapping around, for
// which match(i) holds; n when none does. Executable variants are searched
// this way from the last call's, so fixed and rotating buffers hit at once.
template <class Match>
size_t FindFrom(size_t start, size_t n, Match match) {
  for (size_t j = 0, i = n == 0 ? 0 : start % n; j < n; ++j) {
    if (match(i)) return i;
    if (++i == n) i = 0;
  }
  return n;
}

inline uint64_t AddressSetKey(std::span<const TensorRef> inputs, std::span<const TensorRef> outputs) {
  uint64_t key = kAddressKeySeed;
  for (const TensorRef& t : inputs) key = MixAddress(key, t.data);
  for (const TensorRef& t : outputs) key = MixAddress(key, t.data);
  return key;
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
  // Four times kMaxExecVariants: a rotation over that many sets is seen to
  // recur on its second round.
  std::array<uint64_t, 256> keys_{};
  size_t next_ = 0;
};

}  // namespace encore

#endif  // ENCORE_GRAPH_ADDRESS_SET_H_
