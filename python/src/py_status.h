// SPDX-License-Identifier: Apache-2.0
// How a Status crosses into Python: None for OK, else (code, message), which
// python/encore/_errors.py raises as the exception class of that code. A
// tuple rather than an exception thrown here, so the replay path returns
// None and nothing unwinds through encore.
#ifndef ENCORE_PYTHON_PY_STATUS_H_
#define ENCORE_PYTHON_PY_STATUS_H_

#include <nanobind/nanobind.h>

#include <string>

#include "encore/core/status.h"

namespace encore::python {

inline nanobind::object StatusToPython(const Status& s) {
  if (s.ok()) return nanobind::none();
  return nanobind::make_tuple(static_cast<int>(s.code()), std::string(s.message()));
}

// Runs `f` (which returns a Status) with the GIL released, so a method body
// on this or another thread can take it while encore runs or waits on the
// device, and returns its Status as StatusToPython does.
template <class F>
nanobind::object WithoutGil(F&& f) {
  Status s;
  {
    nanobind::gil_scoped_release nogil;
    s = f();
  }
  return StatusToPython(s);
}

}  // namespace encore::python

#endif  // ENCORE_PYTHON_PY_STATUS_H_
