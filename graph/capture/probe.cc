// SPDX-License-Identifier: Apache-2.0
#include "encore/graph/capture/internal/probe.h"

#include <chrono>
#include <string>
#include <vector>

#include "encore/core/internal/cuda_api.h"
#include "encore/core/cuda_error.h"
#include "encore/graph/capture/internal/binding_choice.h"
#include "encore/graph/internal/lap.h"

namespace encore {
namespace {

constexpr int kPoison = VerifiedLaunch::kFill;  // NaN in every float type, -1 in every signed integer

std::string Failed(std::string_view what) { return "the probe failed (" + std::string(what) + ")"; }

}  // namespace

void Probe::Begin(Args inputs, Args outputs, cudaStream_t stream, int64_t index) {
  // The direct form is built while the staged launch runs: decided, not made.
  if (c_.info.flags.binding == Binding::kStaged || piece_.binding.binding != Binding::kDirect) return;
  std::vector<DeviceStateRegion> regions = piece_.device_states;
  if (c_.checks.sequence() != nullptr && bumps_sequence_) {
    // The direct form bumps the check sequence too: its second launch must
    // not count twice.
    regions.push_back({c_.checks.sequence(), sizeof(unsigned long long), "device-check sequence"});
  }
  StatusOr<ConstantGuard*> guard = c_.constants.Guard(stream);
  StatusOr<VerifiedLaunch> v = guard.ok() ? VerifiedLaunch::Begin(inputs, outputs, std::move(regions), *guard,
                                                                  ConstantWatch::GuardBudget(), stream)
                                          : StatusOr<VerifiedLaunch>(guard.status());
  if (!v.ok()) {
    UseStagedBinding(c_, piece_, "the probe could not start (" + std::string(v.status().message()) + ")", index);
    return;
  }
  probe_ = *std::move(v);
}

void Probe::QueueFirstCheck(cudaStream_t stream, int64_t index) {
  if (!probe_) return;
  if (Status s = probe_->QueueFirstCheck(stream); !s.ok()) {
    UseStagedBinding(c_, piece_, "the probe could not check the constants (" + std::string(s.message()) + ")", index);
    probe_.reset();
  }
}

void Probe::Bind(cudaStream_t stream) {
  if (!probe_ || !piece_.direct || bound_.has_value()) return;
  bound_ = piece_.direct->BindForProbe(probe_->eager_inputs(), probe_->eager_outputs());
  if (!bound_->ok() || **bound_ == nullptr) return;
  if (Status s = (**bound_)->Upload(stream); !s.ok()) {
    ClearCudaError();
    bound_ = StatusOr<const GraphExec*>(s);
  }
}

void Probe::Finish(Args outputs, cudaStream_t stream, int64_t index) {
  if (c_.info.flags.binding == Binding::kStaged) return;
  const bool probing = probe_.has_value() && piece_.direct;
  const GraphExec* exec = nullptr;
  std::string why = probing ? Prepare(stream, &exec) : "this rank stages the graph";
  if (c_.votes.several_ranks()) {
    // The probe launches the graph, and so its collectives, once more:
    // every rank launches it or none does. A rank votes once nothing but
    // the launch is left.
    std::string veto = c_.votes.Vote(why, "binding probe");
    if (why.empty() && !veto.empty()) why = "another rank cannot probe (" + veto + ")";
  }
  if (!probing) return;  // staged already, with its reason
  auto t = std::chrono::steady_clock::now();
  if (why.empty()) why = Run(*exec, outputs, stream);
  times_.run = Lap(&t);
  // The state as the staged launch left it, whatever the probe did.
  if (Status kept = probe_->KeepGraphResult(stream); !kept.ok() && why.empty()) {
    why = "the probe could not restore the device state (" + std::string(kept.message()) + ")";
  }
  times_.keep = Lap(&t);
  c_.store.last_launch.RecordWork(stream);  // the restoring copies come after the launch's record
  probe_.reset();
  if (!why.empty()) UseStagedBinding(c_, piece_, why, index);
}

std::string Probe::Prepare(cudaStream_t stream, const GraphExec** exec) {
  auto t = std::chrono::steady_clock::now();
  StatusOr<std::string> rewound = probe_->Rewind(stream);
  times_.wait = Lap(&t);
  if (!rewound.ok()) return "the probe could not rewind the device state (" + std::string(rewound.status().message()) + ")";
  if (!rewound->empty()) return *rewound;  // a constant changed outside what was saved: not run again
  // Rewind waited for the staged launch: a check failure recorded now is
  // the call's, which its next call reports, and a failure in the probe's
  // run could not be told from it.
  if (c_.checks.failure_pending()) {
    return "a device check failed in the capture's launch, so the probe could not tell its own checks apart";
  }
  std::vector<TensorRef> poisoned(entry_.static_inputs.begin(), entry_.static_inputs.end());
  poisoned.insert(poisoned.end(), entry_.static_outputs.begin(), entry_.static_outputs.end());
  // The probe's outputs start as poison, unless the piece reads them (data
  // an earlier stage left). Those no node of the piece names keep their
  // data too: another piece writes them, and both forms leave them as they
  // were (the staged one copies them in and out).
  for (size_t i = 0; i < probe_->eager_outputs().size() && !outputs_in_; ++i) {
    if (piece_.direct->names(entry_.static_inputs.size() + i)) poisoned.push_back(probe_->eager_outputs()[i]);
  }
  for (const TensorRef& t : poisoned) {
    if (t.span_bytes() == 0) continue;
    if (Status s = CudaResult(cuda().MemsetAsync(t.data, kPoison, t.span_bytes(), stream), CudaCall::kMemsetAsync);
        !s.ok()) {
      return Failed(s.message());
    }
  }
  if (!bound_.has_value()) Bind(stream);
  if (!bound_->ok()) return Failed(bound_->status().message());
  // The snapshots are aligned and disjoint, so the form does not decline them.
  if (**bound_ == nullptr) return Failed("its snapshots could not be bound");
  *exec = **bound_;
  times_.bind = Lap(&t);
  return {};
}

std::string Probe::StaticsWritten(cudaStream_t stream, Status* error) {
  // Bound to the snapshots, the direct form has no business with encore's
  // buffers: a write there went through a reference the scan could not see.
  // Replays would keep writing there, and the caller's tensor would not get
  // it (an output no node of the piece names: the probe keeps a later
  // piece's outputs as the earlier stages left them, so the comparison
  // alone cannot tell when they already held the answer).
  std::vector<TensorRef> buffers;
  std::vector<std::string> names;
  for (size_t i = 0; i < entry_.static_inputs.size(); ++i) {
    // Its own copy writes the static buffer of an input no node names.
    if (piece_.direct && piece_.direct->copies(i)) continue;
    buffers.push_back(entry_.static_inputs[i]);
    names.push_back("input " + std::to_string(i));
  }
  for (size_t i = 0; i < entry_.static_outputs.size(); ++i) {
    buffers.push_back(entry_.static_outputs[i]);
    names.push_back("output " + std::to_string(i));
  }
  StatusOr<std::string> written = probe_->FirstWritten(buffers, names, stream);
  if (!written.ok()) {
    *error = written.status();
    return {};
  }
  if (written->empty()) return {};
  return "the probe found a reference the scan could not see: with encore's buffers poisoned, the direct form "
         "wrote encore's own buffer of " + *written + ", a buffer it is not bound to (graph = that buffer, eager = "
         "the poison)";
}

std::string Probe::Run(const GraphExec& exec, Args outputs, cudaStream_t stream) {
  std::string why;
  Status s = exec.Launch(stream);
  if (s.ok()) {
    StatusOr<std::string> diff = probe_->Compare(outputs, c_.info.flags.verify_tolerance, stream, /*whole_device=*/false);
    if (!diff.ok()) s = diff.status();
    if (diff.ok() && !diff->empty()) {
      why = "the probe found a reference the scan could not see: with encore's buffers poisoned, the direct form "
            "differs from the staged graph (" + *diff + "; graph = staged, eager = direct)";
    }
    if (diff.ok() && diff->empty()) why = StaticsWritten(stream, &s);
  }
  if (!s.ok()) {
    ClearCudaError();
    why = Failed(s.message());
  }
  // No failure was pending before the probe: one recorded now is a check
  // in the direct form that read the poison through a reference the scan
  // missed. It is the probe's evidence, not a failure of any call.
  if (std::string check = c_.checks.DiscardFailure(); !check.empty() && why.empty()) {
    why = "a device check failed in the probe's run ('" + check +
          "'): with encore's buffers poisoned, a check reads memory the scan did not bind";
  }
  return why;
}

}  // namespace encore
