// SPDX-License-Identifier: Apache-2.0
// Builds against encore's NCCL target; without a communicator it only shows
// that NcclConsensus refuses a null one with a Status instead of crashing.
#include <chrono>
#include <iostream>

#include "encore/encore.h"
#include "encore/interop/nccl/nccl_consensus.h"
// Code written against encore 0.2 includes this path; it still builds.
#include "encore/policy/nccl_consensus.h"

int main() {
  auto consensus = encore::NcclConsensus::Create(nullptr, std::chrono::milliseconds(100));
  std::cout << "encore consumer: NcclConsensus::Create(nullptr): " << consensus.status() << "\n";
  return consensus.ok() ? 1 : 0;
}
