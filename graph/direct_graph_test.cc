// SPDX-License-Identifier: Apache-2.0
// The pure checks DirectGraph::Bind makes before binding a call's tensors
// in place (no CUDA calls): overlap and alignment.
#include "graph/direct_graph.h"

#include <gtest/gtest.h>

#include <cstdint>

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

}  // namespace
}  // namespace encore
