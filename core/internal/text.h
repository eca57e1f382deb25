// SPDX-License-Identifier: Apache-2.0
// The one string escape and the one hash encore uses: JSON string escaping
// (logs, reports, benchmarks' results) and 64-bit FNV-1a (vote tags, dump
// file names, the keys of caller address sets). No CUDA, no spdlog.
#ifndef ENCORE_CORE_INTERNAL_TEXT_H_
#define ENCORE_CORE_INTERNAL_TEXT_H_

#include <cstdint>
#include <string>
#include <string_view>

namespace encore {

// `s` escaped for the inside of a JSON string: quotes, backslashes and
// control bytes (as \uXXXX) escaped, other bytes kept.
std::string JsonEscape(std::string_view s);
// `s` escaped and in double quotes.
std::string JsonQuoted(std::string_view s);

inline constexpr uint64_t kFnvOffset = 14695981039346656037ull;
inline constexpr uint64_t kFnvPrime = 1099511628211ull;

// FNV-1a over the bytes of `s`, continuing from `h`.
constexpr uint64_t Fnv1a(std::string_view s, uint64_t h = kFnvOffset) {
  for (char c : s) h = (h ^ static_cast<unsigned char>(c)) * kFnvPrime;
  return h;
}
// One FNV-1a step over a whole 64-bit word (an address): a key per call's
// address set costs one multiply per tensor.
constexpr uint64_t Fnv1aWord(uint64_t h, uint64_t word) { return (h ^ word) * kFnvPrime; }

}  // namespace encore

#endif  // ENCORE_CORE_INTERNAL_TEXT_H_
