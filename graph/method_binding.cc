// SPDX-License-Identifier: Apache-2.0
// Direct binding for MethodInstance (MethodFlags::binding): after a capture,
// the graph's direct form and the binding chosen for it; around the
// capture's first launch, the probe that proves the direct form before any
// replay trusts it.
//
// The probe: the staged graph's launch gives the call its result. Then the
// device state that launch changed (listed constants, shims' generator
// offsets, the check sequence) is put back, encore's static buffers and the
// probe's outputs are poisoned, and the direct form runs on snapshots of the
// inputs. A reference the scan missed (a pointer kept in device memory, or
// split into halves) reads poison or writes where the probe does not look,
// so its outputs differ (or a device check in it fails, which is the probe's
// evidence and no call's failure), and the graph stays staged. The state is
// then left as the staged launch left it: the call's effects are applied
// once.
#include <string>

#include "encore/core/cuda_api.h"
#include "encore/core/cuda_error.h"
#include "graph/capture_job.h"      // private to graph/
#include "graph/method_instance.h"  // private to graph/

namespace encore {

namespace {

constexpr int kPoison = 0xFF;  // NaN in every float type, -1 in every signed integer

}  // namespace

void MethodInstance::StageInstead(GraphEntry& e, std::string why, int64_t index) {
  e.direct.reset();
  e.rebind_sites = 0;
  e.binding = BindingChoice{Binding::kStaged,
                            "binding=" + std::string(BindingName(flags_.binding)) + ": staged, because " + why};
  log_.Info("binding_probe", {{"method", name_}, {"call", index}, {"result", "staged"}, {"reason", why}});
}

void MethodInstance::ChooseGraphBinding(CaptureJob& job) {
  GraphEntry& e = *job.entry;
  BindingFacts facts;
  facts.scan_available = true;
  std::unique_ptr<DirectGraph> direct;
  if (job.padded) {
    // The caller's tensors hold only b rows: the graph must stage them.
    e.binding = PaddedBinding();
    return;
  }
  if (flags_.binding == Binding::kStaged) {
    // Nothing to scan.
  } else if (!flags_.copy_outputs) {
    facts.unsafe_reason = "copy_outputs=false: the caller reads the graph's own output buffers";
  } else if (flags_.binding == Binding::kAuto && counters_.recaptures > kAutoMaxRecapturesForDirect) {
    facts.recaptures = counters_.recaptures;  // no scan: ChooseBinding stages it for the cost
  } else if (!constants_) {
    facts.unsafe_reason =
        "the method cannot list its constants, and the capture's probe runs the graph twice, which would apply "
        "its writes to them twice; list them (an empty list is fine) to bind directly";
  } else if (flags_.checks == CheckMode::kTrap && checks_.graph_checks() > job.checks_before) {
    facts.unsafe_reason =
        "checks=trap and the body checks: a check in the capture's probe that read encore's poison (through a "
        "reference the scan missed) would trap and end the process's CUDA context";
  } else {
    StagedNodes& n = job.staged;
    if (checks_.graph_checks() > job.checks_before && checks_.sequence() != nullptr && !e.template_heads.empty()) {
      n.check_sequence = checks_.sequence();
      n.head_launch = e.template_heads.front().launch;
    }
    direct = DirectGraph::Build(*e.graph, n, e.static_inputs, e.static_outputs, last_launch_event_.get());
    facts.unsafe_reason = direct->unsafe_reason();
    facts.rewrite_nodes = direct->rewrite_nodes();
    // Unknown until replays show it: assumed, and judged again then.
    facts.addresses_recur = true;
    e.auto_rejudge = flags_.binding == Binding::kAuto && facts.rewrite_nodes > kAutoMaxRewriteNodes;
  }
  e.binding = ChooseBinding(flags_.binding, facts);
  if (e.binding.binding != Binding::kDirect) return;
  e.rebind_sites = direct->sites();
  e.direct = std::move(direct);
}

void MethodInstance::InstantiateDirect(GraphEntry& e, int64_t index) {
  if (!e.direct) return;
  // After the staged executable: the capture stands on that one, and a
  // direct form that does not instantiate only costs its speed.
  if (Status s = e.direct->Instantiate(); !s.ok()) {
    StageInstead(e, "the direct form did not instantiate (" + std::string(s.message()) + ")", index);
    return;
  }
  ++counters_.instantiations;
}

std::optional<VerifiedLaunch> MethodInstance::BeginProbe(GraphEntry& e, Args inputs, Args outputs,
                                                         cudaStream_t stream, int64_t index) {
  if (flags_.binding == Binding::kStaged || !e.direct) return std::nullopt;
  std::vector<DeviceStateRegion> regions = StateRegions(e);
  if (checks_.sequence() != nullptr && e.direct->bumps_sequence()) {
    // The direct form bumps the check sequence too: its second launch must
    // not count twice.
    regions.push_back({checks_.sequence(), sizeof(unsigned long long), "device-check sequence"});
  }
  StatusOr<VerifiedLaunch> p = VerifiedLaunch::Begin(inputs, outputs, std::move(regions), stream);
  if (!p.ok()) {
    StageInstead(e, "the probe could not start (" + std::string(p.status().message()) + ")", index);
    return std::nullopt;
  }
  return *std::move(p);
}

void MethodInstance::FinishProbe(GraphEntry& e, VerifiedLaunch* probe, Args outputs, cudaStream_t stream,
                                 int64_t index) {
  if (flags_.binding == Binding::kStaged) return;
  const bool probing = probe != nullptr && e.direct;
  const GraphExec* exec = nullptr;
  std::string why = probing ? PrepareProbe(e, *probe, stream, &exec) : "this rank stages the graph";
  if (votes_.several_ranks()) {
    // The probe launches the graph, and so its collectives, once more:
    // every rank launches it or none does. A rank votes once nothing but
    // the launch is left, so one whose probe could not start or prepare
    // keeps the others from waiting for its collectives.
    std::string veto = votes_.Vote(why, "binding probe");
    if (why.empty() && !veto.empty()) why = "another rank cannot probe (" + veto + ")";
  }
  if (!probing) return;  // staged already, with its reason
  if (why.empty()) why = RunProbe(*probe, *exec, outputs, stream);
  // The state as the staged launch left it, whatever the probe did.
  if (Status kept = probe->KeepGraphResult(stream); !kept.ok() && why.empty()) {
    why = "the probe could not restore the device state (" + std::string(kept.message()) + ")";
  }
  if (!why.empty()) StageInstead(e, std::move(why), index);
}

std::string MethodInstance::PrepareProbe(GraphEntry& e, VerifiedLaunch& probe, cudaStream_t stream,
                                         const GraphExec** exec) {
  if (Status s = probe.Rewind(stream); !s.ok()) {
    return "the probe could not rewind the device state (" + std::string(s.message()) + ")";
  }
  // Rewind waited for the staged launch: a check failure recorded now is
  // the call's, which its next call reports, and a failure in the probe's
  // run could not be told from it.
  if (checks_.failure_pending()) {
    return "a device check failed in the capture's launch, so the probe could not tell its own checks apart";
  }
  for (auto refs : {Args(e.static_inputs), Args(e.static_outputs), probe.eager_outputs()}) {
    for (const TensorRef& t : refs) {
      if (t.span_bytes() == 0) continue;
      if (cudaError_t err = cuda().MemsetAsync(t.data, kPoison, t.span_bytes(), stream); err != cudaSuccess) {
        (void)cuda().GetLastError();
        return "the probe failed (" + std::string(CudaCallName(CudaCall::kMemsetAsync)) + ": " +
               cudaGetErrorName(err) + ")";
      }
    }
  }
  StatusOr<const GraphExec*> bound = e.direct->BindForProbe(probe.eager_inputs(), probe.eager_outputs());
  if (!bound.ok()) return "the probe failed (" + std::string(bound.status().message()) + ")";
  // The snapshots are aligned and disjoint, so Bind does not decline them.
  if (*bound == nullptr) return "the probe failed (its snapshots could not be bound)";
  *exec = *bound;
  return {};
}

std::string MethodInstance::RunProbe(VerifiedLaunch& probe, const GraphExec& exec, Args outputs,
                                     cudaStream_t stream) {
  std::string why;
  Status s = exec.Launch(stream);
  if (s.ok()) {
    StatusOr<std::string> diff = probe.Compare(outputs, flags_.verify_tolerance, stream, /*whole_device=*/false);
    if (!diff.ok()) s = diff.status();
    if (diff.ok() && !diff->empty()) {
      why = "the probe found a reference the scan could not see: with encore's buffers poisoned, the direct form "
            "differs from the staged graph (" + *diff + "; graph = staged, eager = direct)";
    }
  }
  if (!s.ok()) {
    (void)cuda().GetLastError();
    why = "the probe failed (" + std::string(s.message()) + ")";
  }
  // No failure was pending before the probe: one recorded now is a check
  // in the direct form that read the poison through a reference the scan
  // missed. It is the probe's evidence, not a failure of any call.
  if (std::string check = checks_.DiscardFailure(); !check.empty() && why.empty()) {
    why = "a device check failed in the probe's run ('" + check +
          "'): with encore's buffers poisoned, a check reads memory the scan did not bind";
  }
  return why;
}

void MethodInstance::RejudgeAutoBinding(GraphEntry& g, int64_t index) {
  if (g.direct && g.direct->binds() < kAutoRejudgeAfter) return;
  g.auto_rejudge = false;
  if (!g.direct) return;
  BindingFacts facts;
  facts.scan_available = true;
  facts.rewrite_nodes = g.direct->rewrite_nodes();
  facts.addresses_recur = AddressesRecur(g.direct->binds(), g.direct->rewrite_calls());
  BindingChoice c = ChooseBinding(Binding::kAuto, facts);
  if (c.binding == Binding::kDirect) return;
  c.reason += " (" + std::to_string(g.direct->rewrite_calls()) + " of its first " + std::to_string(g.direct->binds()) +
              " replays had to rewrite an executable)";
  g.direct.reset();
  g.rebind_sites = 0;
  g.binding = std::move(c);
  log_.Info("binding", {{"method", name_}, {"call", index}, {"binding", "staged"}, {"reason", g.binding.reason}});
}

}  // namespace encore
