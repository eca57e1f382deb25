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

PyMethod::PyMethod(Method* method, std::shared_ptr<Manager> manager, std::shared_ptr<TorchPools> pools)
    : method_(method), manager_(std::move(manager)), pools_(std::move(pools)) {
  slots_.lock = nb::module_::import_("threading").attr("RLock")();
  slots_.state = nb::none();
  slots_.fast = nb::none();
}

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

void PyMethod::precapture(nb::handle inputs, nb::handle outputs, uintptr_t stream) {
  std::vector<TensorRef> in, out;
  Status s = ToTensorRefs(inputs, method_->name(), "input", &in);
  if (s.ok()) s = ToTensorRefs(outputs, method_->name(), "output", &out);
  RaiseIfError(s);
  WithoutGil([&] { return method_->Precapture(in, out, reinterpret_cast<cudaStream_t>(stream)); });
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

PyMethod::~PyMethod() { ReleaseWithoutGil(std::move(manager_)); }

std::string PyMethod::report_json() const {
  // Without the GIL: the capture worker may be logging to Python with this
  // method's mutex held, which Report takes.
  nb::gil_scoped_release nogil;
  return method_->Report().ToJson();
}

void ReleaseWithoutGil(std::shared_ptr<Manager> manager) {
#if PY_VERSION_HEX >= 0x030D0000
  const bool finalizing = Py_IsFinalizing();
#else
  const bool finalizing = _Py_IsFinalizing();
#endif
  if (manager == nullptr || !Py_IsInitialized() || finalizing || !PyGILState_Check()) return;
  nb::gil_scoped_release nogil;
  manager.reset();
}

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
      .def("precapture", &PyMethod::precapture)
      .def("release", &PyMethod::release)
      .def("release_constants", &PyMethod::release_constants)
      .def("rebind_constants", &PyMethod::rebind_constants, nb::arg("constants"))
      .def("synchronize", &PyMethod::synchronize)
      .def("count_eager_call", &PyMethod::count_eager_call, nb::arg("reason"))
      .def("report_json", &PyMethod::report_json)
      .def("torch_pool", &PyMethod::torch_pool, nb::arg("device"), nb::rv_policy::take_ownership,
           "The memory behind this method's capture pool on a device (python/src/py_torch_pool.h)")
      .def_prop_ro("pools_attention", &PyMethod::pools_attention,
                   "The manager's capture pools sleep, or a wake lost one")
      .def_prop_ro("name", &PyMethod::name)
      .def_prop_ro(
          "lock", [](PyMethod& m) { return m.slots().lock; }, "The RLock that serializes the method's calls")
      .def_prop_rw(
          "state", [](PyMethod& m) { return m.slots().state; },
          [](PyMethod& m, nb::object s) { m.slots().state = std::move(s); }, nb::for_setter(nb::arg("state").none()),
          "The CallState of the call in flight, or None")
      .def_prop_rw(
          "fast", [](PyMethod& m) { return m.slots().fast; },
          [](PyMethod& m, nb::object f) { m.slots().fast = std::move(f); }, nb::for_setter(nb::arg("fast").none()),
          "The FastCall serving calls like the last replay's, or None")
      .def_prop_rw(
          "result_grad", [](PyMethod& m) { return m.slots().result_grad; },
          [](PyMethod& m, bool g) { m.slots().result_grad = g; },
          "A result required grad in grad mode: such calls run eagerly")
      .def_prop_ro(
          "on_new_shape",
          [](const PyMethod& m) { return std::string(ShapePolicyName(m.method()->flags().on_new_shape)); },
          "The method's on_new_shape flag as the flags text names it (refuse, eager, recapture, pad)")
      .def_prop_ro(
          "capture_mode", [](const PyMethod& m) { return std::string(CaptureModeName(m.method()->flags().capture_mode)); },
          "The method's capture flag as the flags text names it (foreground, background)");
}

}  // namespace encore::python
