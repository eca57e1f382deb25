// SPDX-License-Identifier: Apache-2.0
// A registered method as Python sees it: run with PyTorch tensors and a raw
// stream, release, synchronize, report. The Python layer
// (python/encore/_method.py) flattens arguments and results around it.
#ifndef ENCORE_PYTHON_PY_METHOD_H_
#define ENCORE_PYTHON_PY_METHOD_H_

#include <nanobind/nanobind.h>

#include <cstdint>
#include <memory>
#include <string>

#include "encore/core/status.h"
#include "encore/graph/call.h"
#include "encore/graph/manager.h"
#include "encore/graph/method.h"

namespace encore::python {

// The body of a method given from Python: calls `fn(call)` with the GIL held.
// `fn` returns None (OK) or (StatusCode, message, refusal); it catches its
// own exceptions (python/encore/_body.py).
MethodFn PythonBody(nanobind::object fn);

class PyMethod {
 public:
  PyMethod(Method* method, std::shared_ptr<Manager> manager) : method_(method), manager_(std::move(manager)) {}

  // Method::Run over `inputs` and `outputs` (lists of tensors) on `stream`,
  // the GIL released while encore runs; raises its error, or
  // UnsupportedTensorError when a tensor cannot be described to encore.
  void run(nanobind::handle inputs, nanobind::handle outputs, uintptr_t stream);
  void release();
  // Release with a new list of constants (their storage moved).
  void release_constants(nanobind::list constants);
  // Method::RebindConstants: (name, data_ptr, bytes, read_only) tuples of
  // listed constants whose storage moved, the GIL released.
  void rebind_constants(nanobind::list constants);
  void synchronize(uintptr_t stream);
  // A call the Python layer ran eagerly itself, counted in the C++ report.
  void count_eager_call(const std::string& reason) { method_->CountEagerCall(reason); }
  std::string report_json() const;
  const std::string& name() const { return method_->name(); }
  Method* method() const { return method_; }

 private:
  Method* method_;  // owned by manager_
  std::shared_ptr<Manager> manager_;
};

// (name, data_ptr, bytes, read_only) tuples as Constants.
std::vector<Constant> ToConstants(nanobind::handle constants);

void BindMethod(nanobind::module_& m);

}  // namespace encore::python

#endif  // ENCORE_PYTHON_PY_METHOD_H_
