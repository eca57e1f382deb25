// SPDX-License-Identifier: Apache-2.0
#include "py_tensor.h"

#include <array>
#include <cstdint>

namespace nb = nanobind;

namespace encore::python {
namespace {

constexpr int kDTypes = 9;  // DType's values, kFloat32 .. kBool
std::array<PyObject*, kDTypes> g_dtypes{};

// A tuple of ints (torch.Size, or stride()'s tuple) into dims.
Status ReadDims(PyObject* tuple, const std::string& what, const char* which, Dims* out) {
  if (!PyTuple_Check(tuple)) return InvalidArgumentError(what + ": " + which + " is not a tuple");
  const Py_ssize_t n = PyTuple_GET_SIZE(tuple);
  if (n > Dims::kMaxRank) {
    return InvalidArgumentError(what + " has " + std::to_string(n) + " dims, more than the " +
                                std::to_string(Dims::kMaxRank) + " encore binds");
  }
  Dims d;
  for (Py_ssize_t i = 0; i < n; ++i) {
    const long long v = PyLong_AsLongLong(PyTuple_GET_ITEM(tuple, i));
    if (v == -1 && PyErr_Occurred()) {
      PyErr_Clear();
      return InvalidArgumentError(what + ": a " + which + " is not an integer");
    }
    d.push_back(v);
  }
  *out = d;
  return OkStatus();
}

}  // namespace

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

Status ToTensorRef(nb::handle t, const std::string& what, TensorRef* out) {
  // Leaked on purpose: released at exit, after the interpreter, they would crash.
  static nb::handle k_data_ptr = nb::str("data_ptr").release(), k_shape = nb::str("shape").release(),
                    k_stride = nb::str("stride").release(), k_dtype = nb::str("dtype").release();
  nb::object dtype = t.attr(k_dtype);
  const int di = DTypeIndex(dtype);
  if (di < 0) {
    return InvalidArgumentError(what + " has dtype " + nb::cast<std::string>(nb::str(dtype)) +
                                ", which encore cannot bind");
  }
  out->dtype = static_cast<DType>(di);
  out->data = reinterpret_cast<void*>(nb::cast<uintptr_t>(t.attr(k_data_ptr)()));
  ENCORE_RETURN_IF_ERROR(ReadDims(t.attr(k_shape).ptr(), what, "size", &out->shape));
  nb::object strides = t.attr(k_stride)();
  return ReadDims(strides.ptr(), what, "stride", &out->strides);
}

Status ToTensorRefs(nb::handle tensors, const std::string& method, const char* role, std::vector<TensorRef>* out) {
  const size_t n = nb::len(tensors);
  out->resize(n);
  for (size_t i = 0; i < n; ++i) {
    nb::handle t = PyList_Check(tensors.ptr()) ? nb::handle(PyList_GET_ITEM(tensors.ptr(), i))
                                               : nb::handle(tensors[i]);
    Status s = ToTensorRef(t, "method '" + method + "': " + role + " " + std::to_string(i), &(*out)[i]);
    if (!s.ok()) return s;
  }
  return OkStatus();
}

}  // namespace encore::python
