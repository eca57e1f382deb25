// SPDX-License-Identifier: Apache-2.0
#include "encore/graph/runtime/internal/background_captures.h"

#include <algorithm>
#include <utility>

namespace encore {

JobCall::JobCall(const CallPlan& p)
    : inputs(p.inputs.begin(), p.inputs.end()),
      outputs(p.outputs.begin(), p.outputs.end()),
      graph_inputs(p.graph_inputs.begin(), p.graph_inputs.end()),
      graph_outputs(p.graph_outputs.begin(), p.graph_outputs.end()),
      plan{inputs, outputs, graph_inputs, graph_outputs, p.batch, p.precapture} {}

BackgroundCaptures::Job* BackgroundCaptures::Find(Args graph_inputs, Args graph_outputs) const {
  for (const auto& j : jobs_) {
    if (j->signature.Matches(graph_inputs, graph_outputs)) return j.get();
  }
  return nullptr;
}

BackgroundCaptures::Job* BackgroundCaptures::Get(uint64_t id) {
  for (auto& j : jobs_) {
    if (j->id == id) return j.get();
  }
  return nullptr;
}

void BackgroundCaptures::Queue(std::unique_ptr<Job> job) {
  job->generation = generation_;
  job->state = State::kQueued;
  const uint64_t id = job->id;
  jobs_.push_back(std::move(job));
  if (submit_) submit_(id);
}

std::unique_ptr<BackgroundCaptures::Job> BackgroundCaptures::Take(uint64_t id) {
  auto it = std::find_if(jobs_.begin(), jobs_.end(), [&](const auto& j) { return j->id == id; });
  if (it == jobs_.end()) return nullptr;
  std::unique_ptr<Job> job = std::move(*it);
  jobs_.erase(it);
  return job;
}

bool BackgroundCaptures::MakeRoom(size_t cap, std::unique_ptr<ReadyCapture>* dropped) {
  if (jobs_.size() < cap) return true;
  auto it = std::find_if(jobs_.begin(), jobs_.end(), [](const auto& j) { return j->state == State::kReady; });
  if (it == jobs_.end()) return false;
  *dropped = std::move((*it)->ready);
  jobs_.erase(it);
  return true;
}

std::vector<std::unique_ptr<ReadyCapture>> BackgroundCaptures::Abandon() {
  ++generation_;
  std::vector<std::unique_ptr<ReadyCapture>> out;
  std::erase_if(jobs_, [&](std::unique_ptr<Job>& j) {
    if (j->state == State::kRecording) return false;
    if (j->ready) out.push_back(std::move(j->ready));
    return true;
  });
  return out;
}

void BackgroundCaptures::AbandonQueued() {
  std::erase_if(jobs_, [](const std::unique_ptr<Job>& j) { return j->state == State::kQueued; });
}

}  // namespace encore
