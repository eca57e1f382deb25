// SPDX-License-Identifier: Apache-2.0
// Every field of MethodFlags described once: its names, its type (through
// a member pointer), the least value an integer takes, whether it joins the
// decision text, and its range check. The flags-text parser, the decision
// text and its fingerprint, ValidateMethodFlags and the report's "flags"
// object all read this table, so a flag is added in one place. Private to
// encore: not installed, not reached from encore/encore.h.
#ifndef ENCORE_POLICY_INTERNAL_FLAG_TABLE_H_
#define ENCORE_POLICY_INTERNAL_FLAG_TABLE_H_

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "encore/core/status.h"
#include "encore/policy/method_flags.h"

namespace encore {

using FlagMember = std::variant<bool MethodFlags::*, int MethodFlags::*, double MethodFlags::*,
                                ShapePolicy MethodFlags::*, CheckMode MethodFlags::*, Binding MethodFlags::*,
                                CaptureMode MethodFlags::*, std::vector<int64_t> MethodFlags::*>;

// Whether a flag is part of DecisionFlagsText: ranks that vote on captures
// must agree on the flags that decide them.
enum class InDecisionText { kNo, kAlways, kUnlessDefault };

struct FlagField;
// A range check of ValidateMethodFlags; `what` names the flags' owner.
using FlagCheck = Status (*)(const FlagField& field, const MethodFlags& flags, std::string_view what);

struct FlagField {
  std::string_view name;      // the member: the JSON key and validation messages
  std::string_view text_key;  // the flags text's key; `name` is accepted too
  FlagMember member;
  int min = 0;  // integers: the least value the text and validation accept
  InDecisionText decision = InDecisionText::kNo;
  FlagCheck check = nullptr;
};

// The table, in the order of MethodFlags, which is the order of every text
// and JSON form.
std::span<const FlagField> MethodFlagFields();
// The field whose text key or name is `key`; null if none.
const FlagField* FindFlagField(std::string_view key);

// Parses `value` (already trimmed) into `into`'s field; false if it is not a
// value the field takes.
bool ParseFlagValue(const FlagField& field, std::string_view value, MethodFlags& into);
// What the field takes, for parse errors: "an integer >= 0", "on or off".
std::string FlagTakes(const FlagField& field);
// The field's value as the flags text writes it ("on", "3", "refuse", "1|2").
std::string FlagText(const FlagField& field, const MethodFlags& flags);
// The field's value as JSON (true, 3, "refuse", 1e-05, [1,2]).
std::string FlagJson(const FlagField& field, const MethodFlags& flags);
// Copies the field's value from `from` to `to`.
void CopyFlag(const FlagField& field, const MethodFlags& from, MethodFlags& to);
bool FlagIsDefault(const FlagField& field, const MethodFlags& flags);

// Checks ranges (warmup_calls >= 0, max_graphs >= 1, verify, verify_every
// and verify_tolerance >= 0, buckets positive and strictly ascending,
// max_padding 0 or >= 1);
// `what` names the owner.
Status ValidateMethodFlags(const MethodFlags& flags, std::string_view what);

// The flags that decide when a method captures, replays, refuses or runs
// eagerly, as text ("graphs=on,warmup=3,on_new_shape=refuse,max_graphs=4").
// Ranks that vote on captures must agree on these: with different warmups,
// one rank votes while another runs an eager collective, and NCCL pairs the
// vote with that collective. verify and verify_every join the text only when
// set, since each verified launch of several ranks is a vote; buckets join
// it when listed, since they decide which captures happen, and so does
// max_padding when set (it decides which buckets a call captures). checks,
// copy_outputs, binding, verify_tolerance and capture_mode are left out (kNo
// in the table; several ranks capture in the foreground whatever
// capture_mode says).
std::string DecisionFlagsText(const MethodFlags& flags);
// A 64-bit FNV-1a hash of DecisionFlagsText, stable across processes and
// builds, so ranks can compare it in one all-reduce.
uint64_t DecisionFlagsFingerprint(const MethodFlags& flags);

// {"graphs":true,"warmup_calls":3,...}: every field, as MethodReport::ToJson
// writes the method's flags.
std::string MethodFlagsJson(const MethodFlags& flags);

// The flags text's spaces: ASCII whitespace, '\r' included (a flags file
// written on Windows ends its lines with "\r\n").
std::string_view TrimFlagSpace(std::string_view s);
// `s` cut at every `sep`; n separators give n + 1 parts.
std::vector<std::string_view> SplitFlagText(std::string_view s, char sep);

// How many members an aggregate has: the most initializers `T{...}` takes.
// Compared with the table's size, so that a field added to MethodFlags but
// not to the table fails the build (policy/internal/flag_table.cc).
namespace flag_table_detail {
struct AnyValue {
  template <class T>
  operator T() const;  // declared only: used in unevaluated contexts
};
template <class T, class... A>
constexpr size_t AggregateMemberCount() {
  if constexpr (requires { T{std::declval<A>()..., AnyValue{}}; }) {
    return AggregateMemberCount<T, A..., AnyValue>();
  } else {
    return sizeof...(A);
  }
}
}  // namespace flag_table_detail

inline constexpr size_t kMethodFlagsMembers = flag_table_detail::AggregateMemberCount<MethodFlags>();

}  // namespace encore

#endif  // ENCORE_POLICY_INTERNAL_FLAG_TABLE_H_
