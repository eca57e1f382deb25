// SPDX-License-Identifier: Apache-2.0
// DeviceDiff on a GPU says exactly what FirstDifference says on the host:
// random data with random bit flips and special values (NaN payloads,
// infinities, signed zeros) for every dtype, contiguous and strided layouts
// (gaps, transposes, broadcasts, scalars), aligned and unaligned bases,
// tolerance 0 and > 0; "" for equal tensors; the bytewise variant.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "encore/graph/verify/internal/output_compare.h"
#include "encore/graph/verify/internal/device_diff.h"
#include "encore/graph/verify/internal/verify_test_util.h"

namespace encore {
namespace {

using testing::DeviceBuffer;

constexpr DType kAllDTypes[] = {DType::kFloat32, DType::kFloat16, DType::kBFloat16, DType::kFloat64, DType::kInt64,
                                DType::kInt32,   DType::kInt8,    DType::kUInt8,    DType::kBool};

struct Layout {
  const char* name;
  Shape shape;
  Strides strides;
  int trials;
};

const std::vector<Layout>& Layouts() {
  static const std::vector<Layout> l = {
      {"contiguous", {1000}, {}, 24},  {"contiguous3d", {4, 5, 7}, {}, 24}, {"explicit", {4, 5}, {5, 1}, 16},
      {"padded", {4, 5}, {16, 2}, 24}, {"transposed", {5, 4}, {1, 5}, 16},  {"broadcast", {3, 4}, {0, 1}, 16},
      {"scalar", {}, {}, 8},           {"large", {100003}, {}, 4},          {"large-strided", {300, 301}, {302, 1}, 4},
  };
  return l;
}

TensorRef Make(DType d, const Layout& l) {
  TensorRef t;
  t.dtype = d;
  t.shape = l.shape;
  t.strides = l.strides;
  return t;
}

// Byte offset of row-major element k of t.
size_t ElementByte(const TensorRef& t, int64_t k) {
  const Strides st = t.effective_strides();
  int64_t off = 0;
  for (int d = t.shape.size() - 1; d >= 0; --d) {
    off += (k % t.shape[d]) * st[d];
    k /= t.shape[d];
  }
  return static_cast<size_t>(off) * DTypeSize(t.dtype);
}

// NaN, NaN with another payload, +inf, -inf, -0, +0.
uint64_t Special(DType d, int which) {
  static const uint64_t f32[] = {0x7fc00000, 0x7fc00001, 0x7f800000, 0xff800000, 0x80000000, 0};
  static const uint64_t f16[] = {0x7e00, 0x7e01, 0x7c00, 0xfc00, 0x8000, 0};
  static const uint64_t bf16[] = {0x7fc0, 0x7fc1, 0x7f80, 0xff80, 0x8000, 0};
  static const uint64_t f64[] = {0x7ff8000000000000, 0x7ff8000000000001, 0x7ff0000000000000,
                                 0xfff0000000000000, 0x8000000000000000, 0};
  switch (d) {
    case DType::kFloat32:
      return f32[which];
    case DType::kFloat16:
      return f16[which];
    case DType::kBFloat16:
      return bf16[which];
    case DType::kFloat64:
      return f64[which];
    default:
      return which == 0 ? ~0ull : static_cast<uint64_t>(which);
  }
}

class DeviceDiffTest : public testing::GpuStreamTest {
 protected:
  void SetUp() override {
    GpuStreamTest::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    auto d = DeviceDiff::Create(4, s());
    ASSERT_TRUE(d.ok()) << d.status();
    diff_ = std::move(*d);
  }

  // Uploads g and e at byte offsets `shift` into fresh buffers and returns
  // the device's text.
  std::string OnDevice(const TensorRef& t, const std::vector<std::byte>& g, const std::vector<std::byte>& e, double tol,
                       size_t shift) {
    DeviceBuffer<> dg(g.size() + 32), de(e.size() + 32);
    EXPECT_TRUE(dg.ok() && de.ok());
    EXPECT_EQ(testing::ToDevice(dg.get() + shift, g.data(), g.size()), cudaSuccess);
    EXPECT_EQ(testing::ToDevice(de.get() + 16 + shift, e.data(), e.size()), cudaSuccess);
    auto text = diff_.FirstDifference(t, dg.get() + shift, de.get() + 16 + shift, tol, s());
    EXPECT_TRUE(text.ok()) << text.status();
    return text.ok() ? *text : "<error>";
  }

  void Perturb(const TensorRef& t, std::vector<std::byte>& g, std::vector<std::byte>& e, std::mt19937_64& rng) {
    const int kind = static_cast<int>(rng() % 4);
    const size_t elem = DTypeSize(t.dtype);
    if (kind == 3 && t.numel() > 0) {  // special values at one element
      const size_t at = ElementByte(t, static_cast<int64_t>(rng() % t.numel()));
      const uint64_t vg = Special(t.dtype, static_cast<int>(rng() % 6));
      const uint64_t ve = rng() % 2 ? vg : Special(t.dtype, static_cast<int>(rng() % 6));
      std::memcpy(g.data() + at, &vg, elem);
      std::memcpy(e.data() + at, &ve, elem);
      return;
    }
    for (int i = 0; i < kind; ++i) {  // 0 to 2 random bit flips anywhere, gaps included
      g[rng() % g.size()] ^= static_cast<std::byte>(1u << (rng() % 8));
    }
  }

  DeviceDiff diff_;
};

TEST_F(DeviceDiffTest, AgreesWithFirstDifferenceOnRandomAndEdgeCases) {
  std::mt19937_64 rng(42);
  int differing = 0, total = 0;
  for (DType d : kAllDTypes) {
    for (const Layout& l : Layouts()) {
      const TensorRef t = Make(d, l);
      TensorRef valid = t;
      valid.data = reinterpret_cast<void*>(0x100);
      ASSERT_TRUE(ValidateTensorRef(valid, l.name).ok()) << l.name;
      for (double tol : {0.0, 1e-3, 0.5}) {
        for (size_t shift : {size_t{0}, size_t{1}, DTypeSize(d) == 8 ? size_t{8} : size_t{4}}) {
          for (int trial = 0; trial < l.trials; ++trial) {
            std::vector<std::byte> g = testing::RandomBytes(t.span_bytes(), static_cast<uint32_t>(rng()));
            std::vector<std::byte> e = g;
            Perturb(t, g, e, rng);
            const std::string want = FirstDifference(t, g.data(), e.data(), tol);
            ASSERT_EQ(OnDevice(t, g, e, tol, shift), want)
                << DTypeName(d) << " " << l.name << " tol " << tol << " shift " << shift << " trial " << trial;
            differing += want.empty() ? 0 : 1;
            ++total;
          }
        }
      }
    }
  }
  // The cases must exercise both answers.
  EXPECT_GT(differing, total / 10);
  EXPECT_LT(differing, total);
}

TEST_F(DeviceDiffTest, EqualTensorsGiveEmptyText) {
  for (DType d : kAllDTypes) {
    for (const Layout& l : Layouts()) {
      const TensorRef t = Make(d, l);
      const std::vector<std::byte> g = testing::RandomBytes(t.span_bytes(), 7);
      for (double tol : {0.0, 1e-6}) EXPECT_EQ(OnDevice(t, g, g, tol, 0), "") << DTypeName(d) << " " << l.name;
    }
  }
}

TEST_F(DeviceDiffTest, KnownTexts) {
  TensorRef t;
  t.dtype = DType::kFloat32;
  t.shape = {2};
  std::vector<float> g = {1, 2.5f}, e = {1, 3};
  std::vector<std::byte> gb(8), eb(8);
  std::memcpy(gb.data(), g.data(), 8);
  std::memcpy(eb.data(), e.data(), 8);
  EXPECT_EQ(OnDevice(t, gb, eb, 0, 0), "element 1: graph 2.5, eager 3");
  EXPECT_EQ(OnDevice(t, gb, eb, 0.25, 0), "");  // |2.5 - 3| <= 0.25 * 3
  EXPECT_EQ(OnDevice(t, gb, eb, 0.1, 0), "element 1: graph 2.5, eager 3");
}

TEST_F(DeviceDiffTest, FirstDifferenceWinsAmongMany) {
  TensorRef t;
  t.dtype = DType::kInt32;
  t.shape = {1 << 22};
  std::vector<std::byte> g = testing::RandomBytes(t.span_bytes(), 3), e = g;
  for (int64_t k : {int64_t{4000000}, int64_t{123457}, int64_t{3000001}, int64_t{123458}}) {
    e[k * 4 + 2] ^= std::byte{0x40};
  }
  const std::string want = FirstDifference(t, g.data(), e.data(), 0);
  ASSERT_EQ(want.rfind("element 123457:", 0), 0u) << want;
  EXPECT_EQ(OnDevice(t, g, e, 0, 0), want);
  EXPECT_EQ(OnDevice(t, g, e, 0, 2), want);
}

TEST_F(DeviceDiffTest, BytesVariant) {
  const size_t n = kChecksumBlockBytes + 13;
  std::vector<std::byte> a = testing::RandomBytes(n, 5);
  for (size_t shift : {0, 1, 16}) {
    DeviceBuffer<> x(n + 32), y(n + 32);
    ASSERT_TRUE(x.ok() && y.ok());
    ASSERT_EQ(testing::ToDevice(x.get() + shift, a.data(), n), cudaSuccess);
    ASSERT_EQ(testing::ToDevice(y.get() + shift, a.data(), n), cudaSuccess);
    ASSERT_TRUE(diff_.EnqueueBytes(1, x.get() + shift, y.get() + shift, n, s()).ok());
    auto same = diff_.Read(1, s());
    ASSERT_TRUE(same.ok());
    EXPECT_EQ(*same, "");
    for (size_t at : {n - 1, size_t{77777}, size_t{0}}) {
      const uint8_t old = static_cast<uint8_t>(a[at]);
      testing::WriteByte(y.get() + shift + at, old ^ 0x81);
      ASSERT_TRUE(diff_.EnqueueBytes(1, x.get() + shift, y.get() + shift, n, s()).ok());
      auto text = diff_.Read(1, s());
      ASSERT_TRUE(text.ok());
      EXPECT_EQ(*text, FormatByteDifference(static_cast<int64_t>(at), old, old ^ 0x81)) << "shift " << shift;
    }
  }
}

// Against a fill byte: the first byte that is not it, at every alignment,
// in the vector body and in the tail.
TEST_F(DeviceDiffTest, FillVariant) {
  const size_t n = kChecksumBlockBytes + 13;
  const std::vector<std::byte> ff(n, std::byte{0xFF});
  for (size_t shift : {0, 1, 16}) {
    DeviceBuffer<> x(n + 32);
    ASSERT_TRUE(x.ok());
    ASSERT_EQ(testing::ToDevice(x.get() + shift, ff.data(), n), cudaSuccess);
    ASSERT_TRUE(diff_.EnqueueFill(1, x.get() + shift, 0xFF, n, s()).ok());
    auto same = diff_.Read(1, s());
    ASSERT_TRUE(same.ok()) << same.status();
    EXPECT_EQ(*same, "") << "shift " << shift;
    // The fill is what the comparison reads, not zero.
    ASSERT_TRUE(diff_.EnqueueFill(1, x.get() + shift, 0, n, s()).ok());
    auto zero = diff_.Read(1, s());
    ASSERT_TRUE(zero.ok());
    EXPECT_EQ(*zero, FormatByteDifference(0, 0xFF, 0)) << "shift " << shift;
    for (size_t at : {n - 1, size_t{77777}, size_t{5}}) {
      testing::WriteByte(x.get() + shift + at, 0x3F);
      ASSERT_TRUE(diff_.EnqueueFill(1, x.get() + shift, 0xFF, n, s()).ok());
      auto text = diff_.Read(1, s());
      ASSERT_TRUE(text.ok());
      EXPECT_EQ(*text, FormatByteDifference(static_cast<int64_t>(at), 0x3F, 0xFF)) << "shift " << shift;
    }
  }
  EXPECT_EQ(diff_.EnqueueFill(0, nullptr, 0xFF, 4, s()).code(), StatusCode::kInvalidArgument);
}

// ReadFirst reads every slot after one wait, as Read words each.
TEST_F(DeviceDiffTest, ReadFirstWordsEverySlotAsReadDoes) {
  TensorRef t;
  t.dtype = DType::kUInt8;
  t.shape = {64};
  std::vector<std::byte> g = testing::RandomBytes(64, 3);
  std::vector<std::byte> h = g;
  h[9] ^= std::byte{1};
  DeviceBuffer<> a(64), b(64), c(64);
  ASSERT_TRUE(a.ok() && b.ok() && c.ok());
  ASSERT_EQ(testing::ToDevice(a.get(), g.data(), 64), cudaSuccess);
  ASSERT_EQ(testing::ToDevice(b.get(), g.data(), 64), cudaSuccess);
  ASSERT_EQ(testing::ToDevice(c.get(), h.data(), 64), cudaSuccess);
  ASSERT_TRUE(diff_.Enqueue(0, t, a.get(), c.get(), 0, s()).ok());
  ASSERT_TRUE(diff_.Enqueue(1, t, a.get(), b.get(), 0, s()).ok());
  ASSERT_TRUE(diff_.EnqueueBytes(2, a.get(), c.get(), 64, s()).ok());
  TensorRef empty = t;
  empty.shape = {0};
  ASSERT_TRUE(diff_.Enqueue(3, empty, nullptr, nullptr, 0, s()).ok());
  auto all = diff_.ReadFirst(4, s());
  ASSERT_TRUE(all.ok()) << all.status();
  ASSERT_EQ(all->size(), 4u);
  for (int i = 0; i < 4; ++i) {
    auto one = diff_.Read(i, s());
    ASSERT_TRUE(one.ok());
    EXPECT_EQ((*all)[i], *one) << "slot " << i;
  }
  EXPECT_NE((*all)[0], "");
  EXPECT_EQ((*all)[1], "");
  EXPECT_EQ((*all)[2], FormatByteDifference(9, static_cast<uint8_t>(g[9]), static_cast<uint8_t>(h[9])));
  EXPECT_EQ((*all)[3], "");
  EXPECT_EQ(diff_.ReadFirst(diff_.slots() + 1, s()).status().code(), StatusCode::kInvalidArgument);
}

TEST_F(DeviceDiffTest, SlotsHoldTheirOwnComparisons) {
  TensorRef t;
  t.dtype = DType::kUInt8;
  t.shape = {64};
  std::vector<std::byte> g = testing::RandomBytes(64, 1);
  DeviceBuffer<> a(64), b(64), c(64);
  ASSERT_TRUE(a.ok() && b.ok() && c.ok());
  std::vector<std::byte> h = g;
  h[9] ^= std::byte{1};
  ASSERT_EQ(testing::ToDevice(a.get(), g.data(), 64), cudaSuccess);
  ASSERT_EQ(testing::ToDevice(b.get(), g.data(), 64), cudaSuccess);
  ASSERT_EQ(testing::ToDevice(c.get(), h.data(), 64), cudaSuccess);
  ASSERT_TRUE(diff_.Enqueue(0, t, a.get(), b.get(), 0, s()).ok());
  ASSERT_TRUE(diff_.Enqueue(1, t, a.get(), c.get(), 0, s()).ok());
  TensorRef empty = t;
  empty.shape = {0};
  ASSERT_TRUE(diff_.Enqueue(2, empty, nullptr, nullptr, 0, s()).ok());
  auto r0 = diff_.Read(0, s());
  auto r1 = diff_.ReadDifference(1, s());
  auto r2 = diff_.Read(2, s());
  ASSERT_TRUE(r0.ok() && r1.ok() && r2.ok());
  EXPECT_EQ(*r0, "");
  EXPECT_EQ(r1->index, 9);
  EXPECT_EQ(r1->graph[0], g[9]);
  EXPECT_EQ(r1->eager[0], h[9]);
  EXPECT_EQ(*r2, "");
  EXPECT_EQ(diff_.Read(3, s()).status().code(), StatusCode::kFailedPrecondition);
}

TEST_F(DeviceDiffTest, RejectsBadArguments) {
  TensorRef t;
  t.shape = {4};
  DeviceBuffer<> a(16);
  ASSERT_TRUE(a.ok());
  for (double tol : {-1.0, std::nan(""), std::numeric_limits<double>::infinity()}) {
    EXPECT_EQ(diff_.Enqueue(0, t, a.get(), a.get(), tol, s()).code(), StatusCode::kInvalidArgument) << tol;
  }
  EXPECT_EQ(diff_.Enqueue(0, t, a.get(), nullptr, 0, s()).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(diff_.EnqueueBytes(0, nullptr, a.get(), 4, s()).code(), StatusCode::kInvalidArgument);
  TensorRef neg = t;
  neg.strides = {-1};
  EXPECT_EQ(diff_.Enqueue(0, neg, a.get(), a.get(), 0, s()).code(), StatusCode::kInvalidArgument);
}

TEST_F(DeviceDiffTest, EnqueueCapturesReadRefuses) {
  TensorRef t;
  t.dtype = DType::kFloat32;
  t.shape = {4};
  DeviceBuffer<> a(16), b(16);
  ASSERT_TRUE(a.ok() && b.ok());
  std::vector<std::byte> g = testing::RandomBytes(16, 2), h = g;
  h[13] ^= std::byte{8};
  ASSERT_EQ(testing::ToDevice(a.get(), g.data(), 16), cudaSuccess);
  ASSERT_EQ(testing::ToDevice(b.get(), g.data(), 16), cudaSuccess);
  ENCORE_CUDA_ASSERT(cudaStreamBeginCapture(s(), cudaStreamCaptureModeThreadLocal));
  Status queued = diff_.Enqueue(0, t, a.get(), b.get(), 0, s());
  Status read = diff_.Read(0, s()).status();
  cudaGraph_t graph = nullptr;
  ENCORE_CUDA_ASSERT(cudaStreamEndCapture(s(), &graph));
  ASSERT_TRUE(queued.ok()) << queued;
  EXPECT_EQ(read.code(), StatusCode::kFailedPrecondition);
  cudaGraphExec_t exec = nullptr;
  ENCORE_CUDA_ASSERT(cudaGraphInstantiateWithFlags(&exec, graph, 0));
  ENCORE_CUDA_ASSERT(cudaGraphLaunch(exec, s()));
  auto same = diff_.Read(0, s());
  ASSERT_TRUE(same.ok());
  EXPECT_EQ(*same, "");
  ASSERT_EQ(testing::ToDevice(b.get(), h.data(), 16), cudaSuccess);
  ENCORE_CUDA_ASSERT(cudaGraphLaunch(exec, s()));
  auto differs = diff_.Read(0, s());
  ASSERT_TRUE(differs.ok());
  EXPECT_EQ(*differs, FirstDifference(t, g.data(), h.data(), 0));
  EXPECT_NE(*differs, "");
  ENCORE_CUDA_ASSERT(cudaGraphExecDestroy(exec));
  ENCORE_CUDA_ASSERT(cudaGraphDestroy(graph));
}

}  // namespace
}  // namespace encore
