// SPDX-License-Identifier: Apache-2.0
// GPU tests of MaskedCopy: bit-for-bit against a CPU reference for every
// element size, masks picking none/some/all, a captured graph replayed with
// new mask contents, and refusals that launch nothing.
#include "encore/shims/masked_copy.h"

#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <vector>

#include "encore/tests/gpu_test_util.h"
#include "encore/tests/device_buffer.h"
#include "encore/tests/process_util.h"

namespace encore::shims {
namespace {

using testing::DeviceBuffer;

enum class MaskKind { kNone, kSome, kAll, kRandomBytes };

std::vector<uint8_t> MakeMask(MaskKind kind, int64_t n, std::mt19937& rng) {
  std::vector<uint8_t> m(n);
  for (int64_t i = 0; i < n; ++i) {
    switch (kind) {
      case MaskKind::kNone: m[i] = 0; break;
      case MaskKind::kAll: m[i] = 1; break;
      case MaskKind::kSome: m[i] = (i % 5 == 0 || i % 3 == 2) ? 1 : 0; break;
      // Any nonzero byte selects.
      case MaskKind::kRandomBytes: m[i] = rng() % 3 == 0 ? 0 : static_cast<uint8_t>(1 + rng() % 255); break;
    }
  }
  return m;
}

std::vector<uint8_t> RandomBytes(size_t n, std::mt19937& rng) {
  std::vector<uint8_t> b(n);
  for (auto& x : b) x = static_cast<uint8_t>(rng());
  return b;
}

// out[i] = mask[i] ? src[i] : out[i], on raw bytes.
std::vector<uint8_t> Reference(const std::vector<uint8_t>& out, const std::vector<uint8_t>& mask,
                               const std::vector<uint8_t>& src, size_t elem) {
  std::vector<uint8_t> r = out;
  for (size_t i = 0; i < mask.size(); ++i) {
    if (mask[i] != 0) std::memcpy(&r[i * elem], &src[i * elem], elem);
  }
  return r;
}

class MaskedCopyTest : public ::encore::testing::GpuStreamTest {
 protected:
  void RunCase(DType dtype, Shape shape, MaskKind kind, cudaStream_t stream) {
    SCOPED_TRACE(std::string(DTypeName(dtype)) + " shape " + shape.ToString() + " mask " +
                 std::to_string(static_cast<int>(kind)));
    TensorRef probe{nullptr, dtype, shape, {}};
    const int64_t n = probe.numel();
    const size_t elem = DTypeSize(dtype);
    std::mt19937 rng(static_cast<unsigned>(n * 31 + static_cast<int>(kind)));
    std::vector<uint8_t> mask = MakeMask(kind, n, rng);
    std::vector<uint8_t> src = RandomBytes(n * elem, rng);
    std::vector<uint8_t> out(n * elem, 0xA5);  // sentinel
    DeviceBuffer d_mask(n), d_src(n * elem), d_out(n * elem);
    ASSERT_TRUE(d_mask.ok() && d_src.ok() && d_out.ok());
    ENCORE_CUDA_ASSERT(testing::Upload(d_mask.get(), mask.data(), n));
    ENCORE_CUDA_ASSERT(testing::Upload(d_src.get(), src.data(), n * elem));
    ENCORE_CUDA_ASSERT(testing::Upload(d_out.get(), out.data(), n * elem));
    Status st = MaskedCopy(TensorRef{d_out.get(), dtype, shape, {}}, d_mask.as<const bool>(),
                           TensorRef{d_src.get(), dtype, shape, {}}, stream);
    ASSERT_TRUE(st.ok()) << st;
    ENCORE_CUDA_ASSERT(cudaStreamSynchronize(stream));
    std::vector<uint8_t> got(n * elem);
    ENCORE_CUDA_ASSERT(cudaMemcpy(got.data(), d_out.get(), n * elem, cudaMemcpyDeviceToHost));
    std::vector<uint8_t> want = Reference(out, mask, src, elem);
    if (kind == MaskKind::kNone) {
      ASSERT_EQ(want, out);
    }
    if (kind == MaskKind::kAll) {
      ASSERT_EQ(want, src);
    }
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < got.size(); ++i) {
      ASSERT_EQ(got[i], want[i]) << "byte " << i << " (element " << i / elem << ", mask " << int(mask[i / elem]) << ")";
    }
  }
};

TEST_F(MaskedCopyTest, MatchesCpuReferenceForEveryElementSize) {
  const DType dtypes[] = {DType::kFloat32, DType::kInt64, DType::kUInt8, DType::kFloat16,
                          DType::kBFloat16, DType::kFloat64, DType::kInt32, DType::kInt8, DType::kBool};
  const Shape shapes[] = {Shape{1}, Shape{37, 29}, Shape{(1 << 20) + 3}, Shape{2, 3, 4, 5}};
  const MaskKind kinds[] = {MaskKind::kNone, MaskKind::kSome, MaskKind::kAll, MaskKind::kRandomBytes};
  for (DType d : dtypes) {
    for (const Shape& shape : shapes) {
      for (MaskKind k : kinds) {
        RunCase(d, shape, k, s());
        if (HasFatalFailure()) return;
      }
    }
  }
}

TEST_F(MaskedCopyTest, WorksOnTheLegacyStream) {
  RunCase(DType::kFloat32, Shape{1000}, MaskKind::kSome, cudaStreamLegacy);
  RunCase(DType::kInt64, Shape{10, 10}, MaskKind::kRandomBytes, nullptr);
}

TEST_F(MaskedCopyTest, ExplicitContiguousStridesAreAccepted) {
  DeviceBuffer d_out(6 * 4), d_src(6 * 4), d_mask(6);
  ASSERT_TRUE(d_out.ok() && d_src.ok() && d_mask.ok());
  const float src[6] = {1, 2, 3, 4, 5, 6};
  const uint8_t mask[6] = {1, 0, 1, 0, 1, 0};
  ENCORE_CUDA_ASSERT(testing::Upload(d_src.get(), src, sizeof src));
  ENCORE_CUDA_ASSERT(testing::Upload(d_mask.get(), mask, sizeof mask));
  ENCORE_CUDA_ASSERT(testing::Fill(d_out.get(), 0, sizeof src));
  Status st = MaskedCopy(TensorRef{d_out.get(), DType::kFloat32, {2, 3}, {3, 1}}, d_mask.as<const bool>(),
                         TensorRef{d_src.get(), DType::kFloat32, {2, 3}, {}}, s());
  ASSERT_TRUE(st.ok()) << st;
  float got[6];
  ENCORE_CUDA_ASSERT(cudaStreamSynchronize(s()));
  ENCORE_CUDA_ASSERT(cudaMemcpy(got, d_out.get(), sizeof got, cudaMemcpyDeviceToHost));
  const float want[6] = {1, 0, 3, 0, 5, 0};
  for (int i = 0; i < 6; ++i) EXPECT_EQ(got[i], want[i]) << i;
}

TEST_F(MaskedCopyTest, CapturedGraphFollowsNewMaskContentsEachReplay) {
  const Shape shape{64, 33};
  const int64_t n = 64 * 33;
  const size_t bytes = n * sizeof(float);
  DeviceBuffer d_out(bytes), d_src(bytes), d_mask(n);
  ASSERT_TRUE(d_out.ok() && d_src.ok() && d_mask.ok());
  ENCORE_CUDA_ASSERT(testing::Fill(d_mask.get(), 0, n));

  cudaGraph_t graph = nullptr;
  ENCORE_CUDA_ASSERT(cudaStreamBeginCapture(s(), cudaStreamCaptureModeThreadLocal));
  Status st = MaskedCopy(TensorRef{d_out.get(), DType::kFloat32, shape, {}}, d_mask.as<const bool>(),
                         TensorRef{d_src.get(), DType::kFloat32, shape, {}}, s());
  cudaError_t end = cudaStreamEndCapture(s(), &graph);
  ASSERT_TRUE(st.ok()) << st;
  ASSERT_EQ(end, cudaSuccess) << cudaGetErrorName(end);
  cudaGraphExec_t exec = nullptr;
  ENCORE_CUDA_ASSERT(cudaGraphInstantiate(&exec, graph, 0));

  std::mt19937 rng(99);
  const MaskKind kinds[] = {MaskKind::kNone, MaskKind::kSome, MaskKind::kAll, MaskKind::kRandomBytes,
                            MaskKind::kRandomBytes, MaskKind::kSome};
  int replay = 0;
  for (MaskKind k : kinds) {
    SCOPED_TRACE("replay " + std::to_string(replay++));
    std::vector<uint8_t> mask = MakeMask(k, n, rng);
    std::vector<uint8_t> src = RandomBytes(bytes, rng);
    std::vector<uint8_t> out(bytes, static_cast<uint8_t>(0x11 * replay));
    ENCORE_CUDA_ASSERT(testing::Upload(d_mask.get(), mask.data(), n));
    ENCORE_CUDA_ASSERT(testing::Upload(d_src.get(), src.data(), bytes));
    ENCORE_CUDA_ASSERT(testing::Upload(d_out.get(), out.data(), bytes));
    ENCORE_CUDA_ASSERT(cudaGraphLaunch(exec, s()));
    ENCORE_CUDA_ASSERT(cudaStreamSynchronize(s()));
    std::vector<uint8_t> got(bytes);
    ENCORE_CUDA_ASSERT(cudaMemcpy(got.data(), d_out.get(), bytes, cudaMemcpyDeviceToHost));
    ASSERT_EQ(got, Reference(out, mask, src, sizeof(float)));
  }
  ENCORE_CUDA_ASSERT(cudaGraphExecDestroy(exec));
  ENCORE_CUDA_ASSERT(cudaGraphDestroy(graph));
}

TEST_F(MaskedCopyTest, RefusedCallsLaunchNothing) {
  DeviceBuffer d_out(6 * 8), d_src(6 * 8), d_mask(6);
  ASSERT_TRUE(d_out.ok() && d_src.ok() && d_mask.ok());
  ENCORE_CUDA_ASSERT(testing::Fill(d_out.get(), 0x5a, 48));
  ENCORE_CUDA_ASSERT(testing::Fill(d_src.get(), 0x01, 48));
  ENCORE_CUDA_ASSERT(testing::Fill(d_mask.get(), 1, 6));
  const bool* mask = d_mask.as<const bool>();

  Status shape = MaskedCopy(TensorRef{d_out.get(), DType::kFloat32, {2, 3}, {}}, mask,
                            TensorRef{d_src.get(), DType::kFloat32, {3, 2}, {}}, s());
  EXPECT_EQ(shape.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(shape.message(), "MaskedCopy: out has shape (2,3), src has shape (3,2)");
  Status dtype = MaskedCopy(TensorRef{d_out.get(), DType::kInt64, {6}, {}}, mask,
                            TensorRef{d_src.get(), DType::kFloat64, {6}, {}}, s());
  EXPECT_EQ(dtype.message(), "MaskedCopy: out has dtype int64, src has dtype float64");
  Status strides = MaskedCopy(TensorRef{d_out.get(), DType::kFloat32, {2, 3}, {}}, mask,
                              TensorRef{d_src.get(), DType::kFloat32, {2, 3}, {1, 2}}, s());
  EXPECT_EQ(strides.message(), "MaskedCopy: src is not contiguous (strides (1,2) for shape (2,3))");
  Status null_mask = MaskedCopy(TensorRef{d_out.get(), DType::kFloat32, {2, 3}, {}}, nullptr,
                                TensorRef{d_src.get(), DType::kFloat32, {2, 3}, {}}, s());
  EXPECT_EQ(null_mask.message(), "MaskedCopy: mask is null for shape (2,3)");

  ENCORE_CUDA_ASSERT(cudaStreamSynchronize(s()));
  std::vector<uint8_t> got(48);
  ENCORE_CUDA_ASSERT(cudaMemcpy(got.data(), d_out.get(), 48, cudaMemcpyDeviceToHost));
  for (uint8_t b : got) ASSERT_EQ(b, 0x5a) << "a refused call wrote out";
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
}

}  // namespace
}  // namespace encore::shims
