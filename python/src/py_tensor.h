// SPDX-License-Identifier: Apache-2.0
// PyTorch tensors as encore's TensorRef, through PyTorch's Python API only
// (data_ptr, shape, stride, dtype), so the module links no libtorch.
#ifndef ENCORE_PYTHON_SRC_PY_TENSOR_H_
#define ENCORE_PYTHON_SRC_PY_TENSOR_H_

#include <nanobind/nanobind.h>

#include <string>
#include <vector>

#include "encore/core/status.h"
#include "encore/core/tensor.h"

namespace encore::python {

// `s` as an interned Python string, for attribute lookups on a hot path.
// Never released: released at exit, after the interpreter, it would crash.
PyObject* InternedName(const char* s);

// PyTorch's dtype objects in DType's order (torch.float32, float16, ...),
// given once by python/encore/_torch.py; until then no tensor converts.
void SetTorchDTypes(nanobind::list dtypes);
// The position of `dtype` in that list, or -1 for a dtype encore cannot bind.
int DTypeIndex(nanobind::handle dtype);

// `t` as a TensorRef: its data_ptr, shape, strides (in elements) and dtype.
// False for a dtype encore cannot bind or more than 8 dims (TensorProblem
// says which), so the replay path builds no message.
bool ToTensorRef(PyObject* t, TensorRef* out);
// Why ToTensorRef refused `t`, naming it as `what` ("method 'f': input 0").
Status TensorProblem(nanobind::handle t, const std::string& what);
// Each of `tensors`, named "<method>: <role> i".
Status ToTensorRefs(nanobind::handle tensors, const std::string& method, const char* role,
                    std::vector<TensorRef>* out);

}  // namespace encore::python

#endif  // ENCORE_PYTHON_SRC_PY_TENSOR_H_
