// SPDX-License-Identifier: Apache-2.0
// A registered method as Python sees it: run with PyTorch tensors and a raw
// stream, release, synchronize, report. The Python layer
// (python/encore/_method.py) flattens arguments and results around it.
#ifndef ENCORE_PYTHON_SRC_PY_METHOD_H_
#define ENCORE_PYTHON_SRC_PY_METHOD_H_

#include <nanobind/nanobind.h>

#include <cstdint>
#include <memory>
#include <string>

#include "encore/core/status.h"
#include "encore/graph/call.h"
#include "encore/graph/manager.h"
#include "encore/graph/method.h"
#include "py_torch_pool.h"

namespace encore::python {

// The body of a method given from Python: calls `fn(call)` with the GIL held.
// `fn` returns None (OK) or (StatusCode, message, refusal); it catches its
// own exceptions (python/encore/_body.py).
MethodFn PythonBody(nanobind::object fn);

// What the Python layer (python/encore/_method.py) and the replay's fast
// path (py_fast_call.h) share about a method's calls, held here so that
// both read the same typed fields and no attribute name ties them.
struct PyCallSlots {
  // One call of the method at a time; re-entrant, as a body may call its
  // own method (which then runs eagerly). A threading.RLock, made with
  // the method, so Python code takes it with `with`.
  nanobind::object lock;
  // The CallState of the call in flight (its body reads it), or None.
  nanobind::object state;
  // The FastCall serving calls like the last replay's, or None.
  nanobind::object fast;
  // A run returned a result that requires grad while grad mode was on:
  // calls with grad mode on then run eagerly (autograd).
  bool result_grad = false;
};

class PyMethod {
 public:
  // `pools`: the manager's capture pools (py_torch_pool.h), which this
  // method's pools join.
  PyMethod(Method* method, std::shared_ptr<Manager> manager, std::shared_ptr<TorchPools> pools);
  // As ~PyManager: the last share of the manager goes with the GIL released.
  ~PyMethod();
  PyMethod(const PyMethod&) = delete;
  PyMethod& operator=(const PyMethod&) = delete;

  // Method::Run over `inputs` and `outputs` (lists of tensors) on `stream`,
  // the GIL released while encore runs; raises its error, or
  // UnsupportedTensorError when a tensor cannot be described to encore.
  void run(nanobind::handle inputs, nanobind::handle outputs, uintptr_t stream);
  // Method::Precapture over `inputs` and `outputs`; raises its error.
  void precapture(nanobind::handle inputs, nanobind::handle outputs, uintptr_t stream);
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
  PyCallSlots& slots() { return slots_; }
  // The memory behind this method's capture pool on `device`, slept and
  // woken with its manager (python/encore/_pool.py).
  PyTorchPool* torch_pool(int device) { return new PyTorchPool(pools_->Make(device)); }
  // The manager's capture pools sleep, or a wake lost one: the call must
  // take the general path, which tends to them first.
  bool pools_attention() const { return pools_->attention(); }

 private:
  PyCallSlots slots_;
  Method* method_;  // owned by manager_
  std::shared_ptr<Manager> manager_;
  std::shared_ptr<TorchPools> pools_;
};

// Drops `manager` (a share of it) with the GIL released when this thread
// holds it and the interpreter is not finalizing: the manager's end waits
// for a background capture, whose Python body takes the GIL.
void ReleaseWithoutGil(std::shared_ptr<Manager> manager);

// (name, data_ptr, bytes, read_only) tuples as Constants.
std::vector<Constant> ToConstants(nanobind::handle constants);

void BindMethod(nanobind::module_& m);

}  // namespace encore::python

#endif  // ENCORE_PYTHON_SRC_PY_METHOD_H_
