// SPDX-License-Identifier: Apache-2.0
// Uses encore from another Bazel workspace through the umbrella header. Runs
// anywhere: it touches no GPU.
#include <iostream>

#include "encore/encore.h"

int main() {
  encore::Status ok;
  encore::Status bad = encore::InvalidArgumentError("hello from a consumer workspace");
  std::cout << "encore consumer: default Status: " << ok << "; an error Status: " << bad << "\n";
  return ok.ok() && !bad.ok() ? 0 : 1;
}
