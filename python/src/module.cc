// SPDX-License-Identifier: Apache-2.0
// encore._encore: the C++ library's public API for python/encore.
#include <nanobind/nanobind.h>
#include <nanobind/stl/string.h>

#include <string>

#include "encore/core/status.h"
#include "encore/version.h"
#include "py_call.h"
#include "py_constant_watch.h"
#include "py_fast_call.h"
#include "py_manager.h"
#include "py_method.h"
#include "py_status.h"
#include "py_tensor.h"
#include "py_torch_pool.h"

namespace nb = nanobind;

NB_MODULE(_encore, m) {
  // Objects still alive at exit (the process-wide default manager, methods
  // in module globals) are the interpreter's to drop, not leaks.
  nb::set_leak_warnings(false);
  encore::python::BindErrors(m);
  m.doc() = "encore's C++ library: CUDA graph capture and replay for methods";
  m.attr("__version__") = std::string(encore::Version());
  m.def("set_torch_dtypes", &encore::python::SetTorchDTypes,
        "PyTorch's dtypes in encore's DType order (float32, float16, bfloat16, float64, int64, int32, int8, uint8, "
        "bool)");
  m.def("dtype_index", [](nb::handle d) { return encore::python::DTypeIndex(d); });
  m.def("status_code_name", [](int code) {
    return std::string(encore::StatusCodeName(static_cast<encore::StatusCode>(code)));
  });
  encore::python::BindCall(m);
  encore::python::BindMethod(m);
  encore::python::BindFastCall(m);
  encore::python::BindManager(m);
  encore::python::BindConstantWatch(m);
  encore::python::BindTorchPool(m);
}
