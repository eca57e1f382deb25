// SPDX-License-Identifier: Apache-2.0
// encore's version: `#include "encore/version.h"`.
#ifndef ENCORE_VERSION_H_
#define ENCORE_VERSION_H_

#include <string_view>

#define ENCORE_VERSION_MAJOR 0
#define ENCORE_VERSION_MINOR 2
#define ENCORE_VERSION_PATCH 0

#define ENCORE_VERSION_STR_(x) #x
#define ENCORE_VERSION_STR(x) ENCORE_VERSION_STR_(x)

namespace encore {

// "0.2.0": ENCORE_VERSION_MAJOR.MINOR.PATCH.
inline std::string_view Version() {
  return ENCORE_VERSION_STR(ENCORE_VERSION_MAJOR) "." ENCORE_VERSION_STR(ENCORE_VERSION_MINOR) "." ENCORE_VERSION_STR(
      ENCORE_VERSION_PATCH);
}

}  // namespace encore

#endif  // ENCORE_VERSION_H_
