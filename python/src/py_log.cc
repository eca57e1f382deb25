// SPDX-License-Identifier: Apache-2.0
#include "py_log.h"

#include <nanobind/stl/string.h>
#include <spdlog/sinks/base_sink.h>
#include <spdlog/spdlog.h>

#include <mutex>
#include <string>

namespace nb = nanobind;

namespace encore::python {
namespace {

bool InterpreterAlive() {
#if PY_VERSION_HEX >= 0x030D0000
  return Py_IsInitialized() && !Py_IsFinalizing();
#else
  return Py_IsInitialized() && !_Py_IsFinalizing();
#endif
}

// spdlog's own mutex is not needed: the GIL serializes the Python side, and
// formatting is per line.
class PythonSink final : public spdlog::sinks::base_sink<spdlog::details::null_mutex> {
 public:
  explicit PythonSink(nb::object emit) : emit_(emit.release().ptr()) {}
  ~PythonSink() override {
    if (!InterpreterAlive()) return;  // the interpreter owns it now
    nb::gil_scoped_acquire gil;
    Py_DECREF(emit_);
  }

 protected:
  void sink_it_(const spdlog::details::log_msg& msg) override {
    if (!InterpreterAlive()) return;
    const std::string text(msg.payload.data(), msg.payload.size());
    nb::gil_scoped_acquire gil;
    try {
      nb::handle emit(emit_);
      emit(static_cast<int>(msg.level), text);
    } catch (nb::python_error& e) {
      e.discard_as_unraisable("encore's log forwarding");
    }
  }
  void flush_() override {}

 private:
  PyObject* emit_;
};

}  // namespace

std::shared_ptr<spdlog::logger> PythonLogger(nb::object emit, int level) {
  auto logger = std::make_shared<spdlog::logger>("encore", std::make_shared<PythonSink>(std::move(emit)));
  logger->set_level(static_cast<spdlog::level::level_enum>(level));
  return logger;
}

}  // namespace encore::python
