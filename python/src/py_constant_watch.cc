// SPDX-License-Identifier: Apache-2.0
#include "py_constant_watch.h"

#include <atomic>
#include <stdexcept>
#include <utility>

#include "py_tensor.h"

namespace nb = nanobind;

namespace encore::python {
namespace {

#if PY_VERSION_HEX >= 0x030C0000
constexpr bool kDictWatchers = true;

// Bumped by every event of a dict some watch watches (the GIL is held).
std::atomic<uint64_t> g_epoch{1};

int OnDictEvent(PyDict_WatchEvent, PyObject*, PyObject*, PyObject*) {
  g_epoch.fetch_add(1, std::memory_order_relaxed);
  return 0;
}

// This module's dict watcher, or -1 where the interpreter has none left
// (then the entries are compared, as before Python 3.12).
int Watcher() {
  static const int id = [] {
    const int w = PyDict_AddWatcher(&OnDictEvent);
    if (w < 0) PyErr_Clear();
    return w;
  }();
  return id;
}
#else
constexpr bool kDictWatchers = false;
#endif

}  // namespace

ConstantWatch::ConstantWatch(nb::object data_ptr) : data_ptr_(std::move(data_ptr)) {
  PyObject* d = data_ptr_.ptr();
  if (d != Py_None && Py_IS_TYPE(d, &PyMethodDescr_Type)) {
    PyMethodDef* def = reinterpret_cast<PyMethodDescrObject*>(d)->d_method;
    if ((def->ml_flags & (METH_NOARGS | METH_VARARGS | METH_KEYWORDS | METH_FASTCALL | METH_O)) == METH_NOARGS) {
      fast_ = def->ml_meth;
    }
  }
}

void ConstantWatch::Set(nb::list dicts, nb::list tensors) {
  static PyObject* const k_data_ptr = InternedName("data_ptr");
  std::vector<nb::object> new_dicts;
  std::vector<Py_ssize_t> sizes;
  std::vector<Entry> entries;
  bool watched = false;
#if PY_VERSION_HEX >= 0x030C0000
  watched = Watcher() >= 0;
#endif
  for (nb::handle d : dicts) {
    if (!PyDict_Check(d.ptr())) throw std::invalid_argument("ConstantWatch.set: dicts holds a non-dict");
    new_dicts.push_back(nb::borrow(d));
    sizes.push_back(PyDict_GET_SIZE(d.ptr()));
#if PY_VERSION_HEX >= 0x030C0000
    if (watched && PyDict_Watch(Watcher(), d.ptr()) != 0) throw nb::python_error();
#endif
    if (watched) continue;
    Py_ssize_t pos = 0;
    PyObject *key, *value;
    while (PyDict_Next(d.ptr(), &pos, &key, &value)) entries.push_back({nb::borrow(d), nb::borrow(key), nb::borrow(value)});
  }
  static PyObject* const k_requires_grad = InternedName("requires_grad");
  std::vector<Watched> new_tensors;
  bool grad = false;
  for (nb::handle t : tensors) {
    PyObject* g = PyObject_GetAttr(t.ptr(), k_requires_grad);
    grad = grad || g == Py_True;
    Py_XDECREF(g);
    PyErr_Clear();
    Watched w{nb::borrow(t), nullptr, 0};
    if (fast_ != nullptr) {
      PyObject* found = PyObject_GetAttr(reinterpret_cast<PyObject*>(Py_TYPE(t.ptr())), k_data_ptr);
      if (found == data_ptr_.ptr()) w.type = Py_TYPE(t.ptr());
      Py_XDECREF(found);
      PyErr_Clear();
    }
    w.ptr = DataPtr(w);
    if (w.ptr == 0 && PyErr_Occurred()) throw nb::python_error();
    new_tensors.push_back(std::move(w));
  }
#if PY_VERSION_HEX >= 0x030C0000
  epoch_ = watched ? g_epoch.load(std::memory_order_relaxed) : 0;
#endif
  dicts_ = std::move(new_dicts);
  sizes_ = std::move(sizes);
  entries_ = std::move(entries);
  tensors_ = std::move(new_tensors);
  requires_grad_ = grad;
}

uintptr_t ConstantWatch::DataPtr(const Watched& w) const {
  static PyObject* const k_data_ptr = InternedName("data_ptr");
  PyObject* t = w.tensor.ptr();
  PyObject* r = (w.type != nullptr && Py_TYPE(t) == w.type) ? fast_(t, nullptr) : PyObject_CallMethodNoArgs(t, k_data_ptr);
  if (r == nullptr) return 0;
  const auto p = reinterpret_cast<uintptr_t>(PyLong_AsVoidPtr(r));
  Py_DECREF(r);
  return p;
}

bool ConstantWatch::DictsUnchanged() const {
#if PY_VERSION_HEX >= 0x030C0000
  if (epoch_ != 0) return epoch_ == g_epoch.load(std::memory_order_relaxed);
#endif
  for (size_t i = 0; i < dicts_.size(); ++i) {
    if (PyDict_GET_SIZE(dicts_[i].ptr()) != sizes_[i]) return false;
  }
  for (const Entry& e : entries_) {
    PyObject* now = PyDict_GetItemWithError(e.dict.ptr(), e.key.ptr());  // borrowed
    if (now != e.value.ptr()) {
      PyErr_Clear();
      return false;
    }
  }
  return true;
}

bool ConstantWatch::Unchanged() const {
  if (!DictsUnchanged()) return false;
  for (const Watched& w : tensors_) {
    if (DataPtr(w) != w.ptr) {
      PyErr_Clear();
      return false;
    }
  }
  return true;
}

void BindConstantWatch(nb::module_& m) {
  m.attr("DICT_WATCHERS") = kDictWatchers;
  nb::class_<ConstantWatch>(m, "ConstantWatch",
                            "What a method's constants were read from, checked at the start of every call "
                            "(python/src/py_constant_watch.h)")
      .def(nb::init<nb::object>(), nb::arg("data_ptr").none())
      .def("set", &ConstantWatch::Set, nb::arg("dicts"), nb::arg("tensors"))
      .def("unchanged", &ConstantWatch::Unchanged)
      .def_prop_ro("requires_grad", &ConstantWatch::requires_grad)
      .def_prop_ro("num_dicts", &ConstantWatch::num_dicts)
      .def_prop_ro("num_tensors", &ConstantWatch::num_tensors);
}

}  // namespace encore::python
