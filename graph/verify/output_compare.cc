// SPDX-License-Identifier: Apache-2.0
#include "encore/graph/verify/internal/output_compare.h"

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>

namespace encore {
namespace {

template <class T>
T Load(const std::byte* p) {
  T v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

float HalfToFloat(uint16_t h) {
  const int sign = (h >> 15) & 1;
  const int exp = (h >> 10) & 0x1f;
  const int mant = h & 0x3ff;
  float v;
  if (exp == 0) {
    v = std::ldexp(static_cast<float>(mant), -24);
  } else if (exp == 31) {
    v = mant ? NAN : INFINITY;
  } else {
    v = std::ldexp(static_cast<float>(mant | 0x400), exp - 25);
  }
  return sign ? -v : v;
}

bool IsFloating(DType d) {
  return d == DType::kFloat32 || d == DType::kFloat16 || d == DType::kBFloat16 || d == DType::kFloat64;
}

std::string Format(DType d, double v) {
  char buf[48];
  if (IsFloating(d)) {
    std::snprintf(buf, sizeof buf, "%.9g", v);
  } else {
    std::snprintf(buf, sizeof buf, "%lld", static_cast<long long>(v));
  }
  return buf;
}

bool Close(double g, double e, double tol) {
  if (std::isnan(g) || std::isnan(e)) return std::isnan(g) && std::isnan(e);
  if (std::isinf(g) || std::isinf(e)) return g == e;
  return std::fabs(g - e) <= tol * std::fmax(1.0, std::fabs(e));
}

}  // namespace

double ElementValue(DType dtype, const std::byte* p) {
  switch (dtype) {
    case DType::kFloat32: return Load<float>(p);
    case DType::kFloat16: return HalfToFloat(Load<uint16_t>(p));
    case DType::kBFloat16: {
      const uint32_t bits = static_cast<uint32_t>(Load<uint16_t>(p)) << 16;
      return Load<float>(reinterpret_cast<const std::byte*>(&bits));
    }
    case DType::kFloat64: return Load<double>(p);
    case DType::kInt64: return static_cast<double>(Load<int64_t>(p));
    case DType::kInt32: return Load<int32_t>(p);
    case DType::kInt8: return Load<int8_t>(p);
    case DType::kUInt8: return Load<uint8_t>(p);
    case DType::kBool: return Load<uint8_t>(p);
  }
  return 0;
}

std::string FormatElementDifference(DType dtype, int64_t element, const std::byte* graph, const std::byte* eager) {
  return "element " + std::to_string(element) + ": graph " + Format(dtype, ElementValue(dtype, graph)) + ", eager " +
         Format(dtype, ElementValue(dtype, eager));
}

std::string FirstDifference(const TensorRef& t, const std::byte* graph, const std::byte* eager, double tolerance) {
  const int64_t n = t.numel();
  const size_t elem = DTypeSize(t.dtype);
  const Strides strides = t.effective_strides();
  int64_t idx[Dims::kMaxRank] = {};
  for (int64_t k = 0; k < n; ++k) {
    int64_t offset = 0;
    for (int d = 0; d < t.shape.size(); ++d) offset += idx[d] * strides[d];
    const std::byte* g = graph + offset * elem;
    const std::byte* e = eager + offset * elem;
    const bool same = tolerance == 0 ? std::memcmp(g, e, elem) == 0
                                     : Close(ElementValue(t.dtype, g), ElementValue(t.dtype, e), tolerance);
    if (!same) return FormatElementDifference(t.dtype, k, g, e);
    // Next row-major index.
    for (int d = t.shape.size() - 1; d >= 0; --d) {
      if (++idx[d] < t.shape[d]) break;
      idx[d] = 0;
    }
  }
  return {};
}

}  // namespace encore
