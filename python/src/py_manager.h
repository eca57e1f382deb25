// SPDX-License-Identifier: Apache-2.0
// encore's Manager for Python: made with a flags text, a graph-memory budget
// and, unless the environment asks for encore's own log format, a logger
// that forwards to Python's `logging`.
#ifndef ENCORE_PYTHON_SRC_PY_MANAGER_H_
#define ENCORE_PYTHON_SRC_PY_MANAGER_H_

#include <nanobind/nanobind.h>

#include <cstdint>
#include <memory>
#include <string>

#include "encore/graph/manager.h"
#include "py_torch_pool.h"

namespace encore::python {

class PyMethod;

class PyManager {
 public:
  explicit PyManager(std::unique_ptr<Manager> manager) : manager_(std::move(manager)) {}

  // Registers a method whose body is `body` (a Python callable of a
  // PyCall; a method given as stages is one method per graphed piece, made
  // by python/encore/_stages.py), with `constants` ((name, data_ptr, bytes,
  // read_only) tuples, or None: cannot be listed) and one method's flags
  // text (None: the manager's defaults). Raises the error of Register.
  PyMethod* register_method(const std::string& name, nanobind::object body, nanobind::object constants,
                                   nanobind::object flags_text);
  // Both with the GIL released: the manager's capture worker may be
  // logging (to Python, which takes the GIL) with a method's mutex held.
  std::string report_json() const;
  // Manager::WaitForCaptures (Manager.synchronize_captures in Python).
  void wait_for_captures();
  // Manager::CancelPendingCaptures, the GIL released (the methods' mutexes
  // may be held by calls whose eager bodies wait for it).
  size_t cancel_pending_captures();
  // Drops this handle's share of the manager with the GIL released: the
  // last one ends the manager, which waits for a background capture being
  // recorded, whose Python body needs the GIL.
  ~PyManager();
  // Manager::Sleep (the bytes given back) and Wake, then the same for the
  // methods' capture pools (py_torch_pool.h), the GIL released while they
  // wait on the device; raise their errors. A pool that cannot sleep wakes
  // the manager again.
  int64_t sleep();
  void wake();
  bool asleep() const { return manager_->asleep(); }
  // A call found the capture pools asleep or one lost: wakes them (a pool
  // whose memory cannot come back is lost, which its method looks at).
  void wake_pools();
  // Clears the pools' attention once none sleeps and none is lost.
  void settle_pools() { pools_->Settle(); }

 private:
  // Shared with every PyMethod it made: a method keeps its manager, which
  // owns the Method, alive.
  std::shared_ptr<Manager> manager_;
  std::shared_ptr<TorchPools> pools_ = std::make_shared<TorchPools>();
};

void BindManager(nanobind::module_& m);

}  // namespace encore::python

#endif  // ENCORE_PYTHON_SRC_PY_MANAGER_H_
