// SPDX-License-Identifier: Apache-2.0
#include "py_call.h"

#include <nanobind/stl/string.h>

#include <memory>
#include <stdexcept>

#include "py_method.h"
#include "py_status.h"

namespace nb = nanobind;

namespace encore::python {
namespace {

nb::tuple Info(const TensorRef& t) {
  const Strides eff = t.effective_strides();
  nb::list shape, strides;
  for (int i = 0; i < t.shape.size(); ++i) {
    shape.append(t.shape[i]);
    strides.append(eff[i]);
  }
  return nb::make_tuple(reinterpret_cast<uintptr_t>(t.data), nb::tuple(shape), nb::tuple(strides));
}

// Drops a Python object from any thread, at any time encore lets a graph go.
struct PyOwner {
  explicit PyOwner(nb::object o) : obj(o.release().ptr()) {}
  ~PyOwner() {
    if (obj == nullptr || !Py_IsInitialized()) return;  // at exit the interpreter took it
    nb::gil_scoped_acquire gil;
    Py_DECREF(obj);
  }
  PyObject* obj;
};

}  // namespace

Call& PyCall::live() const {
  if (call_ == nullptr) throw std::runtime_error("encore: a Call is valid only while the method body runs");
  return *call_;
}

CallKind PyCall::kind() const { return live().kind(); }
int64_t PyCall::index() const { return live().index(); }
uintptr_t PyCall::stream() const { return reinterpret_cast<uintptr_t>(live().stream()); }
std::string PyCall::stage() const { return std::string(live().stage()); }
size_t PyCall::num_inputs() const { return live().num_inputs(); }
size_t PyCall::num_outputs() const { return live().num_outputs(); }
nb::tuple PyCall::input_info(size_t i) const { return Info(live().input(i)); }
nb::tuple PyCall::output_info(size_t i) const { return Info(live().output(i)); }

void PyCall::check(uintptr_t cond, const std::string& message) {
  RaiseIfError(live().Check(reinterpret_cast<const bool*>(cond), message));
}

void PyCall::keep_with_graph(nb::object owner) {
  RaiseIfError(live().KeepWithGraph(std::make_shared<PyOwner>(std::move(owner))));
}

void PyCall::if_(uintptr_t cond, nb::object body) {
  Call& call = live();
  MethodFn fn = PythonBody(std::move(body));
  WithoutGil([&] { return call.If(reinterpret_cast<const bool*>(cond), fn); });
}

void PyCall::while_(uintptr_t cond, nb::object body, int64_t max_iterations) {
  Call& call = live();
  MethodFn fn = PythonBody(std::move(body));
  WithoutGil([&] { return call.While(reinterpret_cast<const bool*>(cond), fn, max_iterations); });
}

void BindCall(nb::module_& m) {
  nb::enum_<CallKind>(m, "CallKind", "What a method body's run is for: an eager call, a warmup, or a capture")
      .value("EAGER", CallKind::kEager)
      .value("WARMUP", CallKind::kWarmup)
      .value("CAPTURE", CallKind::kCapture);
  nb::class_<PyCall>(m, "Call")
      .def_prop_ro("kind", &PyCall::kind)
      .def_prop_ro("index", &PyCall::index)
      .def_prop_ro("stream", &PyCall::stream)
      .def_prop_ro("device", &PyCall::device)
      .def_prop_ro("stage", &PyCall::stage)
      .def_prop_ro("num_inputs", &PyCall::num_inputs)
      .def_prop_ro("num_outputs", &PyCall::num_outputs)
      .def("input_info", &PyCall::input_info)
      .def("output_info", &PyCall::output_info)
      .def("check", &PyCall::check)
      .def("keep_with_graph", &PyCall::keep_with_graph)
      .def("if_", &PyCall::if_)
      .def("while_", &PyCall::while_);
}

}  // namespace encore::python
