// SPDX-License-Identifier: Apache-2.0
// The flags text of one method, without its name: what a binding or a
// configuration file gives for a method it registers ("warmup=2,
// on_new_shape=recapture"). The text of several methods is
// ManagerOptions::flags_text.
#ifndef ENCORE_POLICY_METHOD_FLAGS_TEXT_H_
#define ENCORE_POLICY_METHOD_FLAGS_TEXT_H_

#include <string_view>

#include "encore/core/status.h"
#include "encore/policy/method_flags.h"

namespace encore {

// `base` with the flags of `text` applied in order; keys the text does not
// set keep `base`'s values. An InvalidArgument that quotes the bad token for
// a malformed text, one that names a method (it has a ':' or a ';'), or
// flags out of range (warmup=-1).
[[nodiscard]] StatusOr<MethodFlags> ApplyMethodFlagsText(std::string_view text, MethodFlags base);

}  // namespace encore

#endif  // ENCORE_POLICY_METHOD_FLAGS_TEXT_H_
