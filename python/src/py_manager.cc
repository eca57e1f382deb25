// SPDX-License-Identifier: Apache-2.0
#include "py_manager.h"

#include <nanobind/stl/string.h>

#include <utility>
#include <vector>

#include "encore/policy/method_flags_text.h"
#include "py_log.h"
#include "py_method.h"
#include "py_status.h"

namespace nb = nanobind;

namespace encore::python {
namespace {

// Manager::Create; raises InvalidArgumentError on a malformed flags text.
PyManager* CreateManager(const std::string& flags_text, size_t budget, nb::object emit, int level) {
  ManagerOptions options;
  options.flags_text = flags_text;
  options.graph_memory_budget = budget;
  if (!emit.is_none()) options.logger = PythonLogger(std::move(emit), level);
  StatusOr<std::unique_ptr<Manager>> made = Manager::Create(std::move(options));
  RaiseIfError(made.status());
  return new PyManager(*std::move(made));
}

}  // namespace

PyManager::~PyManager() { ReleaseWithoutGil(std::move(manager_)); }

std::string PyManager::report_json() const {
  nb::gil_scoped_release nogil;
  return manager_->ReportJson();
}

void PyManager::wait_for_captures() {
  WithoutGil([&] { return manager_->WaitForCaptures(); });
}

size_t PyManager::cancel_pending_captures() {
  nb::gil_scoped_release nogil;
  return manager_->CancelPendingCaptures();
}

PyMethod* PyManager::register_method(const std::string& name, nb::object body, nb::object constants,
                                      nb::object flags_text) {
  MethodSpec spec;
  spec.name = name;
  spec.fn = PythonBody(std::move(body));
  if (!constants.is_none()) spec.constants = ToConstants(constants);
  if (!flags_text.is_none()) {
    StatusOr<MethodFlags> flags = ApplyMethodFlagsText(nb::cast<std::string>(flags_text), MethodFlags{});
    RaiseIfError(flags.status());
    spec.flags = *flags;
  }
  StatusOr<Method*> method = manager_->Register(std::move(spec));
  RaiseIfError(method.status());
  return new PyMethod(*method, manager_, pools_);
}

int64_t PyManager::sleep() {
  int64_t bytes = 0;
  WithoutGil([&]() -> Status {
    // The graphs' last launches are waited for here, before any pool
    // memory goes.
    StatusOr<int64_t> given = manager_->Sleep();
    if (!given.ok()) return given.status();
    StatusOr<int64_t> pools = pools_->Sleep();
    if (!pools.ok()) {
      (void)manager_->Wake();
      pools_->Settle();
      return pools.status();
    }
    bytes = *given + *pools;
    return OkStatus();
  });
  return bytes;
}

void PyManager::wake() {
  WithoutGil([&] {
    Status graphs = manager_->Wake();
    Status pools = pools_->Wake();
    pools_->Settle();
    return graphs.ok() ? pools : graphs;
  });
}

void PyManager::wake_pools() {
  nb::gil_scoped_release nogil;
  (void)pools_->Wake();  // a pool that failed is lost: its method drops its graphs
  pools_->Settle();
}

void BindManager(nb::module_& m) {
  nb::class_<PyManager>(m, "Manager")
      .def_static("create", &CreateManager, nb::arg("flags_text"), nb::arg("budget"), nb::arg("emit").none(),
                  nb::arg("level"), nb::rv_policy::take_ownership)
      .def("register_method", &PyManager::register_method, nb::arg("name"), nb::arg("body"),
           nb::arg("constants").none(), nb::arg("flags_text").none(), nb::rv_policy::take_ownership)
      .def("report_json", &PyManager::report_json)
      .def("wait_for_captures", &PyManager::wait_for_captures)
      .def("cancel_pending_captures", &PyManager::cancel_pending_captures)
      .def("sleep", &PyManager::sleep)
      .def("wake", &PyManager::wake)
      .def("wake_pools", &PyManager::wake_pools)
      .def("settle_pools", &PyManager::settle_pools)
      .def_prop_ro("asleep", &PyManager::asleep);
}

}  // namespace encore::python
