// SPDX-License-Identifier: Apache-2.0
// What a Python method body sees of encore's Call: valid only while the body
// runs (a PyCall kept past it answers every question with an error).
#ifndef ENCORE_PYTHON_SRC_PY_CALL_H_
#define ENCORE_PYTHON_SRC_PY_CALL_H_

#include <nanobind/nanobind.h>

#include <cstdint>
#include <string>

#include "encore/graph/call.h"

namespace encore::python {

class PyCall {
 public:
  PyCall(Call* call, int device) : call_(call), device_(device) {}
  void End() { call_ = nullptr; }

  CallKind kind() const;
  int64_t index() const;   // 1-based call count
  uintptr_t stream() const;
  int device() const { return device_; }
  std::string stage() const;
  size_t num_inputs() const;
  size_t num_outputs() const;
  // (data_ptr, shape, strides) of input or output i: the body tells the
  // caller's own tensors from encore's buffers by these.
  nanobind::tuple input_info(size_t i) const;
  nanobind::tuple output_info(size_t i) const;
  // Call::Check on a device bool at `cond`; raises its error.
  void check(uintptr_t cond, const std::string& message);
  // Call::KeepWithGraph for a Python object; raises its error.
  void keep_with_graph(nanobind::object owner);
  // Call::If and Call::While with a Python body: `body(call)` gets the
  // body's PyCall and returns None or (StatusCode, message, refusal), as a
  // method's body does. Raises the error of If or While.
  void if_(uintptr_t cond, nanobind::object body);
  void while_(uintptr_t cond, nanobind::object body, int64_t max_iterations);

 private:
  Call& live() const;
  Call* call_;
  int device_;
};

// Defines PyCall in module `m`.
void BindCall(nanobind::module_& m);

}  // namespace encore::python

#endif  // ENCORE_PYTHON_SRC_PY_CALL_H_
