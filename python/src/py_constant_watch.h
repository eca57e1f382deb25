// SPDX-License-Identifier: Apache-2.0
// How a Python method notices that a listed constant moved, without any
// process-wide hook: what the constants were read from (a module's
// parameter, buffer and submodule dicts, a listed dict) and each tensor's
// data pointer, checked at the start of every call.
//
// Note [Finding moved constants]
// A constant moves in two ways. Its tensor is replaced in the dict that
// holds it (`module.weight = Parameter(...)`, `load_state_dict(...,
// assign=True)`, a buffer reassigned, a submodule swapped), or its storage
// changes under the same tensor object (`.data = ...`, which is what
// `module.cuda()`, `.to()` and `.half()` do to parameters). PyTorch gives no
// per-object signal for either, and a global module hook or a wrapped
// `Module._apply` would be traced by torch.compile and make it recompile.
// So the watch compares, per call:
//  - the dicts: on Python 3.12 and newer each one is watched (PyDict_Watch;
//    only these dicts, the callback bumps a counter no Python code can
//    see), so an unchanged set costs one compare; before 3.12, every entry's
//    identity and every dict's length;
//  - every tensor's data pointer, read through the `data_ptr` method's C
//    function for PyTorch's own tensor types (no attribute lookup), else by
//    a method call.
// The second is what a call pays per constant (tens of nanoseconds each);
// docs/python.md gives the measured cost. When anything differs the Python
// layer reads the constants again (python/encore/_constants.py): equal
// entries (the same address handed back by PyTorch's allocator) refresh
// the watch, moved ones release or rebind the graphs.
#ifndef ENCORE_PYTHON_SRC_PY_CONSTANT_WATCH_H_
#define ENCORE_PYTHON_SRC_PY_CONSTANT_WATCH_H_

#include <nanobind/nanobind.h>

#include <cstdint>
#include <vector>

namespace encore::python {

class ConstantWatch {
 public:
  // `data_ptr`: the `data_ptr` method descriptor of PyTorch's tensor type
  // (None when PyTorch is not there: every tensor's method is called).
  explicit ConstantWatch(nanobind::object data_ptr);

  // Watches `dicts` (the containers the constants were read from) and
  // `tensors` at their current data pointers, replacing what was watched.
  void Set(nanobind::list dicts, nanobind::list tensors);

  // True while no watched dict changed and every tensor's data pointer is
  // the one it had at Set. Never raises: an unreadable tensor is a change.
  bool Unchanged() const;

  // Whether a watched tensor required grad at Set.
  bool requires_grad() const { return requires_grad_; }
  size_t num_dicts() const { return dicts_.size(); }
  size_t num_tensors() const { return tensors_.size(); }

 private:
  struct Entry {
    nanobind::object dict, key, value;
  };
  struct Watched {
    nanobind::object tensor;
    PyTypeObject* type;  // the type whose data_ptr is `fast_` (null: call the method)
    uintptr_t ptr;
  };
  bool DictsUnchanged() const;
  uintptr_t DataPtr(const Watched& w) const;

  nanobind::object data_ptr_;
  PyCFunction fast_ = nullptr;
  std::vector<nanobind::object> dicts_;
  std::vector<Py_ssize_t> sizes_;
  std::vector<Entry> entries_;  // before Python 3.12 only
  std::vector<Watched> tensors_;
  uint64_t epoch_ = 0;          // Python 3.12 and newer only
  bool requires_grad_ = false;
};

void BindConstantWatch(nanobind::module_& m);

}  // namespace encore::python

#endif  // ENCORE_PYTHON_SRC_PY_CONSTANT_WATCH_H_
