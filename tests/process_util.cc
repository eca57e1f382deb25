// SPDX-License-Identifier: Apache-2.0
#include "encore/tests/process_util.h"

#include <cuda_runtime.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string_view>
#include <thread>

extern char** environ;

namespace encore::testing {

cudaError_t Upload(void* device, const void* host, size_t bytes) {
  cudaError_t err = cudaMemcpy(device, host, bytes, cudaMemcpyHostToDevice);
  return err != cudaSuccess ? err : cudaDeviceSynchronize();
}

cudaError_t Fill(void* device, int value, size_t bytes) {
  cudaError_t err = cudaMemset(device, value, bytes);
  return err != cudaSuccess ? err : cudaDeviceSynchronize();
}

std::string GetEnv(const char* name) {
  const char* v = std::getenv(name);
  return v ? std::string(v) : std::string();
}

std::string TempPath(const std::string& name) {
  static std::atomic<int> counter{0};
  std::string dir = GetEnv("TEST_TMPDIR");
  if (dir.empty()) dir = "/tmp";
  return dir + "/encore_shims_" + std::to_string(getpid()) + "_" + std::to_string(counter++) + "_" + name;
}

namespace {

// The runner's variables a child must not see: its filter would override
// ours, and a child that wrote the XML file or removed the premature-exit
// file would corrupt the parent's result.
bool IsRunnerVariable(std::string_view kv) {
  static constexpr std::string_view kPrefixes[] = {
      "GTEST_", "TESTBRIDGE_", "XML_OUTPUT_FILE=", "TEST_PREMATURE_EXIT_FILE=", "TEST_SHARD_", "TEST_TOTAL_SHARDS=",
  };
  for (std::string_view p : kPrefixes) {
    if (kv.substr(0, p.size()) == p) return true;
  }
  return false;
}

}  // namespace

pid_t SpawnSelfTest(const std::string& test_name, const std::vector<std::string>& env) {
  std::vector<std::string> args = {"/proc/self/exe", "--gtest_filter=" + test_name,
                                   "--gtest_also_run_disabled_tests"};
  std::vector<std::string> vars;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    if (!IsRunnerVariable(*e)) vars.emplace_back(*e);
  }
  for (const std::string& v : env) vars.push_back(v);
  std::vector<char*> argv, envp;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  for (std::string& v : vars) envp.push_back(v.data());
  envp.push_back(nullptr);
  pid_t pid = -1;
  // posix_spawn execs right away: the child never runs CUDA code inherited
  // from this process, which would be undefined after fork.
  int rc = posix_spawn(&pid, "/proc/self/exe", nullptr, nullptr, argv.data(), envp.data());
  if (rc != 0) {
    errno = rc;
    return -1;
  }
  return pid;
}

std::string ChildExit::Describe() const {
  std::ostringstream os;
  if (timed_out) os << "timed out and was killed; ";
  if (exited) {
    os << "exited with code " << exit_code;
  } else {
    os << "ended by signal " << signal << " (" << strsignal(signal) << ")";
  }
  return os.str();
}

ChildExit WaitChild(pid_t pid, std::chrono::seconds timeout) {
  ChildExit out;
  auto deadline = std::chrono::steady_clock::now() + timeout;
  int status = 0;
  while (true) {
    pid_t r = waitpid(pid, &status, WNOHANG);
    if (r == pid) break;
    if (r < 0) {
      out.exit_code = -1;
      return out;
    }
    if (std::chrono::steady_clock::now() > deadline) {
      out.timed_out = true;
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  if (WIFEXITED(status)) {
    out.exited = true;
    out.exit_code = WEXITSTATUS(status);
  } else if (WIFSIGNALED(status)) {
    out.signal = WTERMSIG(status);
  }
  return out;
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) return {};
  std::ostringstream os;
  os << in.rdbuf();
  return os.str();
}

}  // namespace encore::testing
