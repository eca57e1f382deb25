// SPDX-License-Identifier: Apache-2.0
// Uses an installed encore through find_package(encore). Runs anywhere: it
// touches no GPU.
#include <iostream>

#include "encore/encore.h"
#include "encore/version.h"

int main() {
  encore::Status bad = encore::InvalidArgumentError("hello from a CMake consumer");
  std::cout << "encore " << encore::Version() << " (package " << EXPECTED_ENCORE_VERSION << "): " << bad << "\n";
  if (encore::Version() != EXPECTED_ENCORE_VERSION) {
    std::cerr << "the package's version and encore/version.h disagree\n";
    return 1;
  }
  return bad.ok() ? 1 : 0;
}
