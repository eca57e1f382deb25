// SPDX-License-Identifier: Apache-2.0
#include "py_method.h"

#include <nanobind/stl/string.h>

#include <cuda_runtime_api.h>

#include <exception>
#include <utility>
#include <vector>

#include "py_call.h"
#include "py_status.h"
#include "py_tensor.h"

namespace nb = nanobind;

namespace encore::python {
namespace {

// The body's Python callable, dropped with the GIL held whichever thread
// drops the last copy of the MethodFn.
struct PyCallable {
  explicit PyCallable(nb::object o) : fn(o.release().ptr()) {}
  ~PyCallable() {
    if (!Py_IsInitialized()) return;
    nb::gil_scoped_acquire gil;
    Py_DECREF(fn);
  }
  PyObject* fn;
};

Status FromBodyResult(nb::handle r) {
  if (r.is_none()) return OkStatus();
  auto t = nb::cast<nb::tuple>(r);
  const auto code = nb::cast<StatusCode>(t[0]);
  const auto message = nb::cast<std::string>(t[1]);
  if (nb::len(t) > 2 && nb::cast<bool>(t[2])) return CaptureRefusal(message);
  return Status(code, message);
}

Status CallPython(PyObject* fn, Call& call) {
  int device = 0;
  if (cudaGetDevice(&device) != cudaSuccess) (void)cudaGetLastError();
  nb::gil_scoped_acquire gil;
  auto* pc = new PyCall(&call, device);
  nb::object handle = nb::cast(pc, nb::rv_policy::take_ownership);
  Status s;
  try {
    s = FromBodyResult(nb::handle(fn)(handle));
  } catch (nb::python_error& e) {
    s = InternalError(std::string("the Python body raised: ") + e.what());
  } catch (const std::exception& e) {
    s = InternalError(std::string("the Python body: ") + e.what());
  }
  pc->End();
  return s;
}

}  // namespace

MethodFn PythonBody(nb::object fn) {
  auto callable = std::make_shared<PyCallable>(std::move(fn));
  return [callable](Call& call) { return CallPython(callable->fn, call); };
}

void PyMethod::run(nb::handle inputs, nb::handle outputs, uintptr_t stream) {
  std::vector<TensorRef> in, out;
  Status s = ToTensorRefs(inputs, method_->name(), "input", &in);
  if (s.ok()) s = ToTensorRefs(outputs, method_->name(), "output", &out);
  if (!s.ok()) RaiseUnsupportedTensor(s);
  WithoutGil([&] { return method_->Run(in, out, reinterpret_cast<cudaStream_t>(stream)); });
}

void PyMethod::release() {
  WithoutGil([&] { return method_->Release(); });
}

void PyMethod::release_constants(nb::list constants) {
  std::vector<Constant> list = ToConstants(constants);
  WithoutGil([&] { return method_->Release(std::move(list)); });
}

void PyMethod::rebind_constants(nb::list constants) {
  std::vector<Constant> list = ToConstants(constants);
  WithoutGil([&] { return method_->RebindConstants(list); });
}

void PyMethod::synchronize(uintptr_t stream) {
  WithoutGil([&] { return method_->Synchronize(reinterpret_cast<cudaStream_t>(stream)); });
}

std::string PyMethod::report_json() const { return method_->Report().ToJson(); }

std::vector<Constant> ToConstants(nb::handle constants) {
  std::vector<Constant> out;
  for (nb::handle c : constants) {
    auto t = nb::cast<nb::tuple>(c);
    out.push_back(Constant{nb::cast<std::string>(t[0]), reinterpret_cast<const void*>(nb::cast<uintptr_t>(t[1])),
                           nb::cast<size_t>(t[2]), nb::cast<bool>(t[3])});
  }
  return out;
}

void BindMethod(nb::module_& m) {
  nb::class_<PyMethod>(m, "Method")
      .def("run", &PyMethod::run)
      .def("release", &PyMethod::release)
      .def("release_constants", &PyMethod::release_constants)
      .def("rebind_constants", &PyMethod::rebind_constants, nb::arg("constants"))
      .def("synchronize", &PyMethod::synchronize)
      .def("count_eager_call", &PyMethod::count_eager_call, nb::arg("reason"))
      .def("report_json", &PyMethod::report_json)
      .def_prop_ro("name", &PyMethod::name);
}

}  // namespace encore::python
