// SPDX-License-Identifier: Apache-2.0
#include "py_status.h"

#include <nanobind/stl/string.h>

#include <array>
#include <string>

namespace nb = nanobind;

namespace encore::python {
namespace {

constexpr int kCodes = 16;  // StatusCode's values, kOk .. kDataLoss

struct Classes {
  PyObject* error = nullptr;
  PyObject* unsupported_tensor = nullptr;
  std::array<PyObject*, kCodes> by_code{};  // null: encore.Error itself
};

Classes& Made() {
  static Classes* const classes = new Classes();  // the module's, for the process
  return *classes;
}

// A class of module `m`, named as the module is (encore._encore; _encore
// alone where stubgen imports it to write the stub, which then lists it).
PyObject* NewClass(nb::module_& m, const char* name, nb::handle bases, const char* code, const char* doc) {
  nb::dict d;
  d["code"] = code;
  // The message as encore wrote it: str(e), kept as an attribute too.
  d["message"] = nb::handle(reinterpret_cast<PyObject*>(&PyProperty_Type))(
      nb::cpp_function(
          [](nb::handle self) -> nb::str {
            nb::tuple args = nb::borrow<nb::tuple>(self.attr("args"));
            return nb::len(args) > 0 ? nb::str(args[0]) : nb::str("");
          },
          nb::is_method()));
  const std::string qualified = nb::cast<std::string>(m.attr("__name__")) + "." + name;
  PyObject* t = PyErr_NewExceptionWithDoc(qualified.c_str(), doc, bases.ptr(), d.ptr());
  if (t == nullptr) throw nb::python_error();
  m.attr(name) = nb::handle(t);  // the module holds one reference, Made() the other
  return t;
}

}  // namespace

nb::object ErrorObject(const Status& s) {
  if (s.ok()) return nb::none();
  const int code = static_cast<int>(s.code());
  PyObject* cls = code >= 0 && code < kCodes && Made().by_code[code] != nullptr ? Made().by_code[code] : Made().error;
  nb::object e = nb::handle(cls)(nb::str(s.message().data(), s.message().size()));
  if (cls == Made().error) e.attr("code") = nb::str(std::string(StatusCodeName(s.code())).c_str());
  return e;
}

void RaiseIfError(const Status& s) {
  if (s.ok()) return;
  nb::object e = ErrorObject(s);
  PyErr_SetObject(reinterpret_cast<PyObject*>(Py_TYPE(e.ptr())), e.ptr());
  throw nb::python_error();
}

void RaiseUnsupportedTensor(const Status& s) {
  nb::object e = nb::handle(Made().unsupported_tensor)(nb::str(s.message().data(), s.message().size()));
  PyErr_SetObject(Made().unsupported_tensor, e.ptr());
  throw nb::python_error();
}

void BindErrors(nb::module_& m) {
  nb::enum_<StatusCode>(m, "StatusCode", "encore::StatusCode")
      .value("OK", StatusCode::kOk)
      .value("CANCELLED", StatusCode::kCancelled)
      .value("UNKNOWN", StatusCode::kUnknown)
      .value("INVALID_ARGUMENT", StatusCode::kInvalidArgument)
      .value("DEADLINE_EXCEEDED", StatusCode::kDeadlineExceeded)
      .value("NOT_FOUND", StatusCode::kNotFound)
      .value("ALREADY_EXISTS", StatusCode::kAlreadyExists)
      .value("PERMISSION_DENIED", StatusCode::kPermissionDenied)
      .value("RESOURCE_EXHAUSTED", StatusCode::kResourceExhausted)
      .value("FAILED_PRECONDITION", StatusCode::kFailedPrecondition)
      .value("ABORTED", StatusCode::kAborted)
      .value("OUT_OF_RANGE", StatusCode::kOutOfRange)
      .value("UNIMPLEMENTED", StatusCode::kUnimplemented)
      .value("INTERNAL", StatusCode::kInternal)
      .value("UNAVAILABLE", StatusCode::kUnavailable)
      .value("DATA_LOSS", StatusCode::kDataLoss);
  Classes& c = Made();
  c.error = NewClass(m, "Error", nb::handle(PyExc_RuntimeError), "UNKNOWN",
                     "An error from encore: str(e) is the C++ message; `code` the StatusCode's name "
                     "(\"INVALID_ARGUMENT\").");
  auto sub = [&](StatusCode code, const char* name, nb::handle bases, const char* doc) {
    c.by_code[static_cast<int>(code)] =
        NewClass(m, name, bases, std::string(StatusCodeName(code)).c_str(), doc);
  };
  nb::handle error(c.error);
  sub(StatusCode::kInvalidArgument, "InvalidArgumentError", nb::make_tuple(error, nb::handle(PyExc_ValueError)),
      "A bad argument, named with the values that were wrong; nothing changed.");
  sub(StatusCode::kFailedPrecondition, "FailedPreconditionError", error,
      "A call that cannot run as things are: a failed device check, a loop that reached its bound.");
  sub(StatusCode::kResourceExhausted, "ResourceExhaustedError", error, "Out of memory or of another resource.");
  sub(StatusCode::kUnavailable, "UnavailableError", error, "PyTorch or a GPU is missing.");
  sub(StatusCode::kInternal, "InternalError", error, "A failure inside encore or CUDA.");
  c.unsupported_tensor =
      NewClass(m, "UnsupportedTensorError",
               nb::handle(c.by_code[static_cast<int>(StatusCode::kInvalidArgument)]), "INVALID_ARGUMENT",
               "A tensor encore cannot describe (its dtype, more than 8 dims): the call runs eagerly.");
  m.def("error_for", [](StatusCode code, const std::string& message) { return ErrorObject(Status(code, message)); },
        nb::arg("code"), nb::arg("message"), "The exception (not raised) for a Status of `code`.");
}

}  // namespace encore::python
