// SPDX-License-Identifier: Apache-2.0
// How a Status crosses into Python: as the exception of its code, raised at
// the binding's edge once encore has returned (nothing unwinds through
// encore). The classes are made here, in C++, in the module
// encore._encore (python/encore/_errors.py and the package re-export
// them): encore.Error (a RuntimeError)
// with `code`, the StatusCode's name, and a subclass per code that Python
// code catches by name; InvalidArgumentError is also a ValueError.
#ifndef ENCORE_PYTHON_SRC_PY_STATUS_H_
#define ENCORE_PYTHON_SRC_PY_STATUS_H_

#include <nanobind/nanobind.h>

#include <utility>

#include "encore/core/status.h"

namespace encore::python {

// The exception for `s` (not raised), or None for OK.
nanobind::object ErrorObject(const Status& s);

// Raises ErrorObject(s) unless `s` is OK.
void RaiseIfError(const Status& s);

// Raised by Method.run for a tensor encore cannot describe (its dtype,
// more than 8 dims): an InvalidArgumentError the Python layer answers by
// running that call eagerly.
void RaiseUnsupportedTensor(const Status& s);

// Runs `f` (which returns a Status) with the GIL released, so a method body
// on this or another thread can take it while encore runs or waits on the
// device, then raises its error.
template <class F>
void WithoutGil(F&& f) {
  Status s;
  {
    nanobind::gil_scoped_release nogil;
    s = std::forward<F>(f)();
  }
  RaiseIfError(s);
}

// Makes the error classes and the StatusCode enum in module `m`.
void BindErrors(nanobind::module_& m);

}  // namespace encore::python

#endif  // ENCORE_PYTHON_SRC_PY_STATUS_H_
