// SPDX-License-Identifier: Apache-2.0
// CaptureWorker: the thread on which a Manager's methods make their
// background captures (capture=background), one task at a time, in the
// order they were submitted. A task belongs to an owner (a method
// instance), which can drop its queued tasks and wait until none of its
// own runs; the Manager can wait until nothing is queued or running
// (Manager::WaitForCaptures). The thread starts with the first task. No
// CUDA here: what a task does is its owner's business, and it must not
// throw (an exception is caught and dropped).
#ifndef ENCORE_CORE_INTERNAL_CAPTURE_WORKER_H_
#define ENCORE_CORE_INTERNAL_CAPTURE_WORKER_H_

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <utility>

namespace encore {

class CaptureWorker {
 public:
  CaptureWorker() = default;
  // Drops the queued tasks, waits for the running one and joins the thread.
  // Owners cancel and wait for their own tasks before they go, so none is
  // left by then.
  ~CaptureWorker();
  CaptureWorker(const CaptureWorker&) = delete;
  CaptureWorker& operator=(const CaptureWorker&) = delete;

  void Submit(const void* owner, std::function<void()> task);
  // Drops `owner`'s queued tasks (a running one runs on); how many.
  size_t Cancel(const void* owner);
  // Until no task of `owner` is queued or running. Never from a task.
  void WaitIdle(const void* owner);
  // Until no task is queued or running. Never from a task.
  void WaitAll();
  // Whether the calling thread is this worker's (a task's own code).
  bool OnWorkerThread() const;
  // Tasks queued or running.
  size_t pending() const;

 private:
  void Loop();
  bool OwnerBusy(const void* owner) const;  // with mu_ held

  mutable std::mutex mu_;
  std::condition_variable wake_;  // a task was queued, or the worker stops
  std::condition_variable idle_;  // a task ended or was dropped
  std::deque<std::pair<const void*, std::function<void()>>> queue_;
  const void* running_ = nullptr;  // the owner of the running task
  bool busy_ = false;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace encore

#endif  // ENCORE_CORE_INTERNAL_CAPTURE_WORKER_H_
