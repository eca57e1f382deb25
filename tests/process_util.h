// SPDX-License-Identifier: Apache-2.0
// Test helpers for GPU tests: uploads that wait for the data, and running
// one test of this binary in a child process (fork+exec of /proc/self/exe),
// for what must not happen in the test process itself (a trap that poisons the
// CUDA context) or must happen in several processes at once.
#ifndef ENCORE_TESTS_PROCESS_UTIL_H_
#define ENCORE_TESTS_PROCESS_UTIL_H_

#include <cuda_runtime_api.h>
#include <sys/types.h>

#include <chrono>
#include <cstddef>
#include <string>
#include <vector>

namespace encore::testing {

// cudaMemcpy host-to-device and cudaMemset, then cudaDeviceSynchronize. The
// tests' streams are non-blocking, so they do not wait for the legacy stream,
// and neither call is complete on return: a pageable cudaMemcpy may return
// before its DMA lands (seen on an H200 as a stale tail of a 1 MB buffer), and
// cudaMemset of device memory is asynchronous.
cudaError_t Upload(void* device, const void* host, size_t bytes);
cudaError_t Fill(void* device, int value, size_t bytes);

// The value of environment variable `name`, or "" if unset.
std::string GetEnv(const char* name);

// A fresh path under TEST_TMPDIR (or /tmp) that names this process.
std::string TempPath(const std::string& name);

// Starts this test binary again with only `test_name` (Suite.Test; a
// DISABLED_ test runs too) and `env` ("KEY=value") added to an environment
// cleaned of the test runner's variables (filters, XML output, premature-exit
// file, sharding). Returns the child's pid, or -1 with errno set.
pid_t SpawnSelfTest(const std::string& test_name, const std::vector<std::string>& env);

struct ChildExit {
  bool timed_out = false;  // killed with SIGKILL after the timeout
  bool exited = false;     // exit_code is valid
  int exit_code = -1;
  int signal = 0;  // the signal that ended it, if it did not exit
  std::string Describe() const;
};

// Waits for `pid`, killing it after `timeout`.
ChildExit WaitChild(pid_t pid, std::chrono::seconds timeout);

// Reads a whole file; "" if it cannot.
std::string ReadFile(const std::string& path);

}  // namespace encore::testing

#endif  // ENCORE_TESTS_PROCESS_UTIL_H_
