// SPDX-License-Identifier: Apache-2.0
// Compares a graph's output with an eager run's, element by element, on host
// copies of the tensor's byte span. Pure logic, no CUDA: verification
// (graph/verify/internal/verified_launch.h) copies both to the host and asks this.
#ifndef ENCORE_GRAPH_VERIFY_INTERNAL_OUTPUT_COMPARE_H_
#define ENCORE_GRAPH_VERIFY_INTERNAL_OUTPUT_COMPARE_H_

#include <cstddef>
#include <cstdint>
#include <string>

#include "encore/core/tensor.h"

namespace encore {

// The first element (in row-major order of `t`'s shape, strides followed;
// bytes between elements are not compared) at which `graph` and `eager`
// differ, as "element 3: graph 2.5, eager 3"; empty when none does. Both hold
// t.span_bytes() bytes laid out as `t` describes. With tolerance 0 elements
// must be bitwise equal; else |graph - eager| <= tolerance * max(1, |eager|)
// (NaN equals NaN, an infinity only itself).
std::string FirstDifference(const TensorRef& t, const std::byte* graph, const std::byte* eager, double tolerance);

// FirstDifference's text for element `element` (its row-major index) whose
// bytes in the two runs are at `graph` and `eager`: "element 3: graph 2.5,
// eager 3". Shared with the device-side comparison (graph/verify), so both
// say the same.
std::string FormatElementDifference(DType dtype, int64_t element, const std::byte* graph, const std::byte* eager);

// The element at `p` of type `dtype` as a double (float16 and bfloat16
// widened exactly).
double ElementValue(DType dtype, const std::byte* p);

}  // namespace encore

#endif  // ENCORE_GRAPH_VERIFY_INTERNAL_OUTPUT_COMPARE_H_
