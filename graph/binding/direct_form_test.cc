// SPDX-License-Identifier: Apache-2.0
// The pure checks DirectGraph::Bind makes before binding a call's tensors
// in place (no CUDA calls): overlap, alignment, and the rings of address
// sets that missed or that CUDA refused.
#include "encore/graph/binding/internal/direct_form.h"

#include <gtest/gtest.h>

#include <cstdint>

#include "encore/graph/binding/internal/address_set.h"

namespace encore {
namespace {

TensorRef At(uintptr_t address, int64_t floats) {
  return TensorRef{reinterpret_cast<void*>(address), DType::kFloat32, {floats}, {}};
}

TEST(DirectGraphTest, OverlapIsAnySharedByte) {
  TensorRef a = At(0x10000, 64), b = At(0x10000 + 256, 64), c = At(0x10000 + 252, 64);
  EXPECT_FALSE(TensorsOverlap({&a, 1}, {&b, 1}));  // a ends where b begins
  EXPECT_TRUE(TensorsOverlap({&a, 1}, {&c, 1}));
  EXPECT_TRUE(TensorsOverlap({&a, 1}, {&a, 1}));   // in place
  TensorRef empty = At(0x10000, 0);
  EXPECT_FALSE(TensorsOverlap({&a, 1}, {&empty, 1}));
}

TEST(DirectGraphTest, EveryTensorMustStartOnTheStaticBuffersAlignment) {
  TensorRef a = At(0x20000, 64), b = At(0x20000 + 512, 64), slice = At(0x20000 + 4, 60);
  EXPECT_TRUE(AlignedLikeStatic({&a, 1}, {&b, 1}));
  EXPECT_FALSE(AlignedLikeStatic({&a, 1}, {&slice, 1}));
  EXPECT_FALSE(AlignedLikeStatic({&slice, 1}, {&b, 1}));
  TensorRef empty = At(0x20000 + 4, 0);  // names no memory
  EXPECT_TRUE(AlignedLikeStatic({&a, 1}, {&empty, 1}));
}

TEST(DirectGraphTest, ARingRemembersRecentKeysAndAskingRemembersNothing) {
  MissRing ring;
  EXPECT_FALSE(ring.Holds(1));
  EXPECT_FALSE(ring.Holds(1));  // asking did not remember it
  EXPECT_FALSE(ring.Recurs(1));
  EXPECT_TRUE(ring.Holds(1));
  EXPECT_TRUE(ring.Recurs(1));
  EXPECT_FALSE(ring.Recurs(2));
  EXPECT_TRUE(ring.Holds(1));
  // Bounded: enough newer keys push the oldest out.
  for (uint64_t k = 3; k < 100000; ++k) (void)ring.Recurs(k);
  EXPECT_FALSE(ring.Holds(1));
  EXPECT_TRUE(ring.Holds(99999));
}

}  // namespace
}  // namespace encore
