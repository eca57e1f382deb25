// SPDX-License-Identifier: Apache-2.0
#include "py_tensor.h"

#include <nanobind/stl/string.h>

#include <array>
#include <cstdint>

namespace nb = nanobind;

namespace encore::python {
namespace {

constexpr int kDTypes = 9;  // DType's values, kFloat32 .. kBool
std::array<PyObject*, kDTypes> g_dtypes{};

// A tuple of ints (torch.Size, or stride()'s tuple) into dims; false if it
// is not one or has more than Dims::kMaxRank.
bool ReadDims(PyObject* tuple, Dims* out) {
  if (tuple == nullptr || !PyTuple_Check(tuple)) return false;
  const Py_ssize_t n = PyTuple_GET_SIZE(tuple);
  if (n > Dims::kMaxRank) return false;
  Dims d;
  for (Py_ssize_t i = 0; i < n; ++i) {
    const long long v = PyLong_AsLongLong(PyTuple_GET_ITEM(tuple, i));
    if (v == -1 && PyErr_Occurred()) {
      PyErr_Clear();
      return false;
    }
    d.push_back(v);
  }
  *out = d;
  return true;
}

}  // namespace

PyObject* InternedName(const char* s) { return PyUnicode_InternFromString(s); }

void SetTorchDTypes(nb::list dtypes) {
  for (int i = 0; i < kDTypes && i < static_cast<int>(dtypes.size()); ++i) {
    PyObject* o = dtypes[i].ptr();
    Py_XINCREF(o);  // kept for the process: PyTorch's dtypes are immortal singletons
    g_dtypes[i] = o;
  }
}

int DTypeIndex(nb::handle dtype) {
  for (int i = 0; i < kDTypes; ++i) {
    if (g_dtypes[i] == dtype.ptr()) return i;
  }
  return -1;
}

bool ToTensorRef(PyObject* t, TensorRef* out) {
  static PyObject* const k_data_ptr = InternedName("data_ptr");
  static PyObject* const k_shape = InternedName("shape");
  static PyObject* const k_stride = InternedName("stride");
  static PyObject* const k_dtype = InternedName("dtype");
  PyObject* dtype = PyObject_GetAttr(t, k_dtype);
  const int di = dtype != nullptr ? DTypeIndex(dtype) : -1;
  Py_XDECREF(dtype);
  if (di < 0) {
    PyErr_Clear();
    return false;
  }
  out->dtype = static_cast<DType>(di);
  PyObject* ptr = PyObject_CallMethodNoArgs(t, k_data_ptr);
  out->data = ptr != nullptr ? PyLong_AsVoidPtr(ptr) : nullptr;
  Py_XDECREF(ptr);
  PyObject* shape = PyObject_GetAttr(t, k_shape);
  const bool shape_ok = ReadDims(shape, &out->shape);
  Py_XDECREF(shape);
  PyObject* strides = shape_ok ? PyObject_CallMethodNoArgs(t, k_stride) : nullptr;
  const bool ok = ptr != nullptr && shape_ok && ReadDims(strides, &out->strides);
  Py_XDECREF(strides);
  if (!ok) PyErr_Clear();
  return ok;
}

Status TensorProblem(nb::handle t, const std::string& what) {
  nb::object dtype = t.attr("dtype");
  if (DTypeIndex(dtype) < 0) {
    return InvalidArgumentError(what + " has dtype " + nb::cast<std::string>(nb::str(dtype)) +
                                ", which encore cannot bind");
  }
  const size_t rank = nb::len(nb::object(t.attr("shape")));
  if (rank > static_cast<size_t>(Dims::kMaxRank)) {
    return InvalidArgumentError(what + " has " + std::to_string(rank) + " dims, more than the " +
                                std::to_string(Dims::kMaxRank) + " encore binds");
  }
  return InvalidArgumentError(what + " is not a tensor encore can describe (its data_ptr, shape or stride)");
}

Status ToTensorRefs(nb::handle tensors, const std::string& method, const char* role, std::vector<TensorRef>* out) {
  PyObject* seq = tensors.ptr();
  const bool list = PyList_Check(seq);
  if (!list && !PyTuple_Check(seq)) return InvalidArgumentError("method '" + method + "': tensors must be a list");
  const Py_ssize_t n = list ? PyList_GET_SIZE(seq) : PyTuple_GET_SIZE(seq);
  out->resize(static_cast<size_t>(n));
  for (Py_ssize_t i = 0; i < n; ++i) {
    PyObject* t = list ? PyList_GET_ITEM(seq, i) : PyTuple_GET_ITEM(seq, i);
    if (!ToTensorRef(t, &(*out)[static_cast<size_t>(i)])) {
      return TensorProblem(nb::handle(t), "method '" + method + "': " + role + " " + std::to_string(i));
    }
  }
  return OkStatus();
}

}  // namespace encore::python
