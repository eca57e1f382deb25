// SPDX-License-Identifier: Apache-2.0
#include "py_fast_call.h"

#include <cuda_runtime_api.h>

#include <stdexcept>
#include <utility>

#include "py_constant_watch.h"
#include "py_method.h"
#include "py_status.h"
#include "py_tensor.h"

namespace nb = nanobind;

namespace encore::python {
namespace {

struct Names {
  PyObject* data_ptr = InternedName("data_ptr");
  PyObject* get_device = InternedName("get_device");
  PyObject* requires_grad = InternedName("requires_grad");
  PyObject* args = InternedName("args");
  PyObject* tensors = InternedName("tensors");
  PyObject* outputs = InternedName("outputs");
  PyObject* exc = InternedName("exc");
  PyObject* ran_kind = InternedName("ran_kind");
  PyObject* direct = InternedName("direct");
  PyObject* leaves = InternedName("leaves");
  PyObject* thread = InternedName("thread");
  PyObject* kept = InternedName("kept");
  PyObject* new_outputs = InternedName("new_outputs");
};

const Names& N() {
  static const Names* const names = new Names();  // never released, as InternedName's strings are not
  return *names;
}

// The int a method of no arguments returns, or `fallback` (the error cleared).
long CallLong(PyObject* o, PyObject* method, long fallback) {
  PyObject* r = PyObject_CallMethodNoArgs(o, method);
  const long v = r != nullptr ? PyLong_AsLong(r) : -1;
  Py_XDECREF(r);
  if (r == nullptr || (v == -1 && PyErr_Occurred())) {
    PyErr_Clear();
    return fallback;
  }
  return v;
}

// Whether attribute `name` of `o` is true; true when it cannot be read, so
// that a doubt is a miss.
bool TrueOrUnknown(PyObject* o, PyObject* name) {
  PyObject* v = PyObject_GetAttr(o, name);
  const int t = v != nullptr ? PyObject_IsTrue(v) : -1;
  Py_XDECREF(v);
  if (t < 0) PyErr_Clear();
  return t != 0;
}

void* DataPtr(PyObject* t) {
  PyObject* r = PyObject_CallMethodNoArgs(t, N().data_ptr);
  if (r == nullptr) throw nb::python_error();
  void* p = PyLong_AsVoidPtr(r);
  Py_DECREF(r);
  if (p == nullptr && PyErr_Occurred()) throw nb::python_error();
  return p;
}

// The method's lock (a threading.RLock), held for this scope.
class LockHeld {
 public:
  explicit LockHeld(nb::handle lock) : lock_(lock) {
    static PyObject* const k_acquire = InternedName("acquire");
    PyObject* r = PyObject_CallMethodNoArgs(lock_.ptr(), k_acquire);
    if (r == nullptr) throw nb::python_error();
    Py_DECREF(r);
  }
  ~LockHeld() {
    static PyObject* const k_release = InternedName("release");
    PyObject* r = PyObject_CallMethodNoArgs(lock_.ptr(), k_release);
    if (r == nullptr) PyErr_WriteUnraisable(lock_.ptr());
    Py_XDECREF(r);
  }
  LockHeld(const LockHeld&) = delete;
  LockHeld& operator=(const LockHeld&) = delete;

 private:
  nb::handle lock_;
};

// The call in flight back to None when this scope ends, as the general
// path's `finally` does.
struct StateCleared {
  explicit StateCleared(PyCallSlots& slots) : slots(slots) {}
  ~StateCleared() { slots.state = nb::none(); }
  PyCallSlots& slots;
};

}  // namespace

PyFastCall::PyFastCall(nb::object cm, nb::tuple inputs, nb::object spec, nb::object state, bool reuse, bool single,
                       nb::tuple hooks)
    : cm_(cm),
      spec_(std::move(spec)),
      state_(std::move(state)),
      reuse_(reuse),
      single_(single) {
  if (!nb::isinstance<PyMethod>(cm_)) throw std::invalid_argument("FastCall: cm is not an encore._encore.Method");
  py_method_ = nb::inst_ptr<PyMethod>(cm_);
  if (nb::len(inputs) == 0 || nb::len(hooks) != 5) throw std::invalid_argument("FastCall: no inputs, or not 5 hooks");
  miss_ = hooks[0];
  torch_ = hooks[1];
  after_body_ = hooks[2];
  unflatten_ = hooks[3];
  if (!hooks[4].is_none()) {
    if (!nb::isinstance<ConstantWatch>(hooks[4])) throw std::invalid_argument("FastCall: hooks[4] is not a ConstantWatch");
    watch_obj_ = hooks[4];
    watch_ = nb::inst_ptr<ConstantWatch>(watch_obj_);
  }
  tensor_type_ = torch_.attr("Tensor");
  is_grad_enabled_ = torch_.attr("is_grad_enabled");
  empty_ = torch_.attr("empty");
  current_stream_ = torch_.attr("_C").attr("_cuda_getCurrentRawStream");
  for (nb::handle t : inputs) {
    TensorRef r;
    if (!ToTensorRef(t.ptr(), &r)) throw std::invalid_argument("FastCall: an input encore cannot describe");
    shapes_.push_back(r.shape);
    dtypes_.push_back(r.dtype);
  }
  device_ = static_cast<int>(CallLong(inputs[0].ptr(), N().get_device, -1));
  device_obj_ = nb::int_(device_);
  nodes_ = spec_.attr("nodes");
  leaves_ = spec_.attr("leaves");
  for (nb::handle o : spec_.attr("out")) out_specs_.emplace_back(nb::borrow(o[0]), nb::borrow(o[1]));
  kwnames_ = nb::make_tuple("dtype", "device");
}

bool PyFastCall::Matches(PyObject* args, std::vector<TensorRef>* in) const {
  if (!PyTuple_Check(args) || PyTuple_GET_SIZE(args) != static_cast<Py_ssize_t>(shapes_.size())) return false;
  const auto* type = reinterpret_cast<PyTypeObject*>(tensor_type_.ptr());
  in->resize(shapes_.size());
  for (size_t i = 0; i < shapes_.size(); ++i) {
    PyObject* a = PyTuple_GET_ITEM(args, static_cast<Py_ssize_t>(i));
    TensorRef& r = (*in)[i];
    if (Py_TYPE(a) != type || !ToTensorRef(a, &r) || r.dtype != dtypes_[i] || r.shape != shapes_[i] ||
        CallLong(a, N().get_device, -2) != device_) {
      return false;
    }
  }
  if (GradForbids(args)) return false;
  // The capture pools sleep (or a wake lost one): the general path tends
  // to them before anything launches.
  if (py_method_->pools_attention()) return false;
  // A constant moved or replaced since: the general path reads them again.
  return watch_ == nullptr || watch_->Unchanged();
}

// With grad mode on, an input, a listed constant or a result that requires
// grad makes the general path run the call eagerly (reason autograd).
bool PyFastCall::GradForbids(PyObject* args) const {
  PyObject* g = PyObject_CallNoArgs(is_grad_enabled_.ptr());
  if (g == nullptr) {
    PyErr_Clear();
    return true;
  }
  const bool grad = g == Py_True;
  Py_DECREF(g);
  if (!grad) return false;
  for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(args); ++i) {
    if (TrueOrUnknown(PyTuple_GET_ITEM(args, i), N().requires_grad)) return true;
  }
  return py_method_->slots().result_grad || (watch_ != nullptr && watch_->requires_grad());
}

nb::object PyFastCall::Call(nb::handle self, nb::handle m, nb::handle args) {
  std::vector<TensorRef> in;
  if (!Matches(args.ptr(), &in)) return miss_;
  PyCallSlots& slots = py_method_->slots();
  LockHeld held(slots.lock);
  // Another thread released the method or replaced this path since the
  // caller read it, or the method's own body calls it (re-entry).
  if (!slots.fast.is(self) || !slots.state.is_none()) return miss_;
  return RunLocked(m, args, in);
}

nb::object PyFastCall::RunLocked(nb::handle m, nb::handle args, const std::vector<TensorRef>& in) {
  nb::object stream_obj = current_stream_(device_obj_);
  void* stream = PyLong_AsVoidPtr(stream_obj.ptr());
  if (stream == nullptr && PyErr_Occurred()) throw nb::python_error();
  std::vector<TensorRef> out;
  nb::object outputs;
  if (!Outputs(&outputs, &out)) return miss_;  // the general path runs it, eagerly if it must
  FillState(args, outputs);
  Status s;
  {
    StateCleared cleared(py_method_->slots());
    nb::gil_scoped_release nogil;
    s = py_method_->method()->Run(in, out, reinterpret_cast<cudaStream_t>(stream));
  }
  if (!s.ok() || !nb::getattr(state_, nb::handle(N().ran_kind)).is_none()) {
    return after_body_(m, state_, ErrorObject(s));
  }
  if (single_) return nb::borrow(PyList_GET_ITEM(outputs.ptr(), 0));
  return unflatten_(nodes_, outputs, leaves_);
}

bool PyFastCall::Outputs(nb::object* outputs, std::vector<TensorRef>* out) {
  if (reuse_) {
    nb::object kept = nb::getattr(spec_, nb::handle(N().kept));
    if (kept.is_none()) kept = nb::getattr(spec_, nb::handle(N().new_outputs))(torch_, device_obj_, true);
    if (!PyList_Check(kept.ptr()) || PyList_GET_SIZE(kept.ptr()) < 1) return false;
    *outputs = kept;
    // The kept tensors are the caller's too, to change: read them every call.
    return ToTensorRefs(*outputs, py_method_->name(), "output", out).ok();
  }
  const size_t n = out_specs_.size();
  nb::object list = nb::steal(PyList_New(static_cast<Py_ssize_t>(n)));
  if (!list.is_valid()) throw nb::python_error();
  for (size_t i = 0; i < n; ++i) {
    PyObject* argv[4] = {nullptr, out_specs_[i].first.ptr(), out_specs_[i].second.ptr(), device_obj_.ptr()};
    PyObject* t = PyObject_Vectorcall(empty_.ptr(), argv + 1, 1 | PY_VECTORCALL_ARGUMENTS_OFFSET, kwnames_.ptr());
    if (t == nullptr) throw nb::python_error();
    PyList_SET_ITEM(list.ptr(), static_cast<Py_ssize_t>(i), t);
  }
  *outputs = list;
  if (out_refs_.empty()) {
    // torch.empty makes the same shape, strides and dtype every call: read
    // them once, then only each new tensor's address.
    if (!ToTensorRefs(*outputs, py_method_->name(), "output", out).ok()) return false;
    out_refs_ = *out;
    return true;
  }
  *out = out_refs_;
  for (size_t i = 0; i < n; ++i) (*out)[i].data = DataPtr(PyList_GET_ITEM(list.ptr(), static_cast<Py_ssize_t>(i)));
  return true;
}

void PyFastCall::FillState(nb::handle args, nb::handle outputs) {
  const Names& k = N();
  nb::setattr(state_, nb::handle(k.args), args);
  nb::setattr(state_, nb::handle(k.tensors), args);
  nb::setattr(state_, nb::handle(k.outputs), outputs);
  for (PyObject* name : {k.exc, k.ran_kind, k.direct, k.leaves}) nb::setattr(state_, nb::handle(name), nb::none());
  // The body tells this call's own state from another thread's by its
  // thread (python/encore/_body.py, capture=background); set when the
  // calling thread changed.
  const unsigned long thread = PyThread_get_thread_ident();
  if (thread != state_thread_) {
    nb::setattr(state_, nb::handle(k.thread), nb::steal(PyLong_FromUnsignedLong(thread)));
    state_thread_ = thread;
  }
  py_method_->slots().state = state_;
}

void BindFastCall(nb::module_& m) {
  nb::class_<PyFastCall>(m, "FastCall")
      .def(nb::init<nb::object, nb::tuple, nb::object, nb::object, bool, bool, nb::tuple>())
      .def("call", [](nb::pointer_and_handle<PyFastCall> self, nb::handle method, nb::handle args) {
        return self.p->Call(self.h, method, args);
      });
}

}  // namespace encore::python
