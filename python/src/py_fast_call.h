// SPDX-License-Identifier: Apache-2.0
// The replay of a call whose arguments are plain CUDA tensors with the
// shapes, dtypes and device of the replay that made it, in one C++ call:
// each tensor read once, the outputs made, the method run, its results
// returned. Anything else (another type or shape, grad to record, constants
// that may have moved, a call of the method in flight) is a miss, and the
// Python layer's general path (python/encore/_method.py) runs the call, so
// this path never decides anything that path would decide differently.
#ifndef ENCORE_PYTHON_SRC_PY_FAST_CALL_H_
#define ENCORE_PYTHON_SRC_PY_FAST_CALL_H_

#include <nanobind/nanobind.h>

#include <vector>

#include "encore/core/tensor.h"

namespace encore::python {

class ConstantWatch;
class PyMethod;

class PyFastCall {
 public:
  // `cm`: the method's PyMethod. `inputs`: the replay's input tensors, whose
  // shapes, dtypes and (first one's) device every call must have. `spec`:
  // the OutSpec of their signature; `state`: the CallState this path fills
  // for the body, should encore run it. `hooks`: (miss, torch,
  // after_body, unflatten, watch): what a miss returns; torch; the
  // function a call whose body ran (or that encore refused) returns through,
  // as after_body(method, state, error); _tree.unflatten; the method's
  // ConstantWatch, or None for a method that lists no constants.
  PyFastCall(nanobind::object cm, nanobind::tuple inputs, nanobind::object spec, nanobind::object state,
             bool reuse, bool single, nanobind::tuple hooks);

  // The call of Python method `m` (whose PyMethod's slots().fast is
  // `self`) with `args` (a tuple): its results, or the miss object. `m` is
  // what after_body gets.
  nanobind::object Call(nanobind::handle self, nanobind::handle m, nanobind::handle args);

 private:
  bool Matches(PyObject* args, std::vector<TensorRef>* in) const;
  bool GradForbids(PyObject* args) const;
  nanobind::object RunLocked(nanobind::handle m, nanobind::handle args, const std::vector<TensorRef>& in);
  // New output tensors (or the kept ones under outputs=reuse) and their
  // refs; false for one encore cannot describe (the call is then a miss).
  bool Outputs(nanobind::object* outputs, std::vector<TensorRef>* out);
  void FillState(nanobind::handle args, nanobind::handle outputs);

  // Borrowed: the method holds this path (PyCallSlots::fast), so a strong
  // reference back would be a cycle the garbage collector cannot see
  // through C++ objects, keeping the method and its graphs alive forever.
  // The path is only ever called through its method.
  nanobind::handle cm_;
  PyMethod* py_method_;
  std::vector<Shape> shapes_;
  std::vector<DType> dtypes_;
  int device_;
  nanobind::object spec_, state_;
  bool reuse_, single_;
  nanobind::object miss_, torch_, after_body_, unflatten_, watch_obj_;
  const ConstantWatch* watch_ = nullptr;
  nanobind::object tensor_type_, is_grad_enabled_, empty_, current_stream_, device_obj_;
  nanobind::object nodes_, leaves_, kwnames_;
  // Per output: (shape tuple, dtype) for torch.empty, and, once the first
  // call made them, the ref every new output has but its address.
  std::vector<std::pair<nanobind::object, nanobind::object>> out_specs_;
  std::vector<TensorRef> out_refs_;
  unsigned long state_thread_ = 0;  // the thread state_'s `thread` names (0: not set yet)
};

void BindFastCall(nanobind::module_& m);

}  // namespace encore::python

#endif  // ENCORE_PYTHON_SRC_PY_FAST_CALL_H_
