// SPDX-License-Identifier: Apache-2.0
// encore's events on Python's `logging`: an spdlog logger whose one sink
// hands each line to a Python callable (python/encore/_log.py forwards it to
// the logger "encore" at the mapped level).
#ifndef ENCORE_PYTHON_SRC_PY_LOG_H_
#define ENCORE_PYTHON_SRC_PY_LOG_H_

#include <nanobind/nanobind.h>

#include <memory>

namespace spdlog {
class logger;
}  // namespace spdlog

namespace encore::python {

// A logger named "encore" that calls `emit(level, text)` with the GIL held
// (level: 0 trace .. 5 critical) for lines at `level` or above; lines after
// the interpreter began to exit are dropped.
std::shared_ptr<spdlog::logger> PythonLogger(nanobind::object emit, int level);

}  // namespace encore::python

#endif  // ENCORE_PYTHON_SRC_PY_LOG_H_
