// SPDX-License-Identifier: Apache-2.0
#include "encore/core/internal/capture_worker.h"

#include <algorithm>

namespace encore {
namespace {
// The worker whose thread this is, if any.
thread_local const CaptureWorker* t_worker = nullptr;
}  // namespace

bool CaptureWorker::OnWorkerThread() const { return t_worker == this; }

CaptureWorker::~CaptureWorker() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
    queue_.clear();
  }
  wake_.notify_all();
  idle_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void CaptureWorker::Submit(const void* owner, std::function<void()> task) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    queue_.emplace_back(owner, std::move(task));
    if (!thread_.joinable()) {
      thread_ = std::thread([this] {
        t_worker = this;
        Loop();
      });
    }
  }
  wake_.notify_one();
}

size_t CaptureWorker::Cancel(const void* owner) {
  size_t n = 0;
  {
    std::lock_guard<std::mutex> lock(mu_);
    n = std::erase_if(queue_, [&](const auto& t) { return t.first == owner; });
  }
  if (n > 0) idle_.notify_all();
  return n;
}

bool CaptureWorker::OwnerBusy(const void* owner) const {
  if (busy_ && running_ == owner) return true;
  return std::any_of(queue_.begin(), queue_.end(), [&](const auto& t) { return t.first == owner; });
}

void CaptureWorker::WaitIdle(const void* owner) {
  std::unique_lock<std::mutex> lock(mu_);
  idle_.wait(lock, [&] { return stop_ || !OwnerBusy(owner); });
}

void CaptureWorker::WaitAll() {
  std::unique_lock<std::mutex> lock(mu_);
  idle_.wait(lock, [&] { return stop_ || (!busy_ && queue_.empty()); });
}

size_t CaptureWorker::pending() const {
  std::lock_guard<std::mutex> lock(mu_);
  return queue_.size() + (busy_ ? 1 : 0);
}

void CaptureWorker::Loop() {
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    wake_.wait(lock, [&] { return stop_ || !queue_.empty(); });
    if (stop_) return;
    auto [owner, task] = std::move(queue_.front());
    queue_.pop_front();
    running_ = owner;
    busy_ = true;
    lock.unlock();
    try {
      task();
    } catch (...) {  // a task must not throw; the worker must not die of one
    }
    task = nullptr;  // what the task holds goes before its owner may
    lock.lock();
    busy_ = false;
    running_ = nullptr;
    idle_.notify_all();
  }
}

}  // namespace encore
