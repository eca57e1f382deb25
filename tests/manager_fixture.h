// SPDX-License-Identifier: Apache-2.0
// GpuManagerTest: the set-up the scenario GPU tests share. A GpuStreamTest
// (skips without a GPU, a stream s()) with a Manager, mgr_, whose log lines
// land in logs_. A test that needs other ManagerOptions overrides Options().
#ifndef ENCORE_TESTS_MANAGER_FIXTURE_H_
#define ENCORE_TESTS_MANAGER_FIXTURE_H_

#include <gtest/gtest.h>

#include <memory>
#include <utility>

#include "encore/graph/manager.h"
#include "encore/tests/gpu_test_util.h"
#include "encore/tests/log_capture.h"

namespace encore::testing {

class GpuManagerTest : public GpuStreamTest {
 protected:
  void SetUp() override {
    GpuStreamTest::SetUp();
    if (IsSkipped()) return;
    auto m = Manager::Create(Options());
    ASSERT_TRUE(m.ok()) << m.status();
    mgr_ = *std::move(m);
  }

  // The Manager's options: logging to logs_, the rest the defaults.
  virtual ManagerOptions Options() {
    ManagerOptions o;
    o.logger = logs_.logger();
    return o;
  }

  LogCapture logs_;
  std::unique_ptr<Manager> mgr_;
};

}  // namespace encore::testing

#endif  // ENCORE_TESTS_MANAGER_FIXTURE_H_
