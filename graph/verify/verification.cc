// SPDX-License-Identifier: Apache-2.0
#include "encore/graph/verify/internal/verification.h"

#include <chrono>
#include <string>

#include "encore/core/internal/cuda_api.h"

namespace encore {

std::vector<DeviceStateRegion> DeviceStates(const GraphEntry& g) {
  std::vector<DeviceStateRegion> regions;
  for (const PieceGraph& piece : g.pieces) {
    regions.insert(regions.end(), piece.device_states.begin(), piece.device_states.end());
  }
  return regions;
}

bool Verification::Wanted(const GraphEntry& g, bool capture_launch) const {
  // Two integer tests on an unverified replay; no CUDA call.
  if ((p_.flags.verify | p_.flags.verify_every) == 0) return false;
  return VerifiesLaunch(p_.flags, g.launches + 1, capture_launch ? 0 : p_.counters.replays + 1);
}

std::optional<VerifiedLaunch> Verification::Begin(const GraphEntry& g, Args inputs, Args outputs,
                                                  cudaStream_t stream, int64_t index) {
  if (!p_.constants->Get()->has_value()) {
    // The eager re-run would apply the body's writes to unlisted state (a
    // KV cache, a counter) a second time.
    if (!p_.verify_refusal_logged) {
      p_.verify_refusal_logged = true;
      p_.log.Warn("verify_refused",
                  {{"method", p_.name},
                   {"reason", "the method cannot list its constants, so an eager re-run would apply its writes to "
                              "them twice; list them (an empty list is fine) to verify"}});
    }
    return std::nullopt;
  }
  StatusOr<ConstantGuard*> guard = p_.Guard(stream);
  StatusOr<VerifiedLaunch> v = guard.ok() ? VerifiedLaunch::Begin(inputs, outputs, DeviceStates(g), *guard,
                                                                  p_.GuardBudget(), stream, &p_.verify_scratch)
                                          : StatusOr<VerifiedLaunch>(guard.status());
  if (!v.ok()) {
    p_.log.Warn("verify_skipped", {{"method", p_.name}, {"call", index}, {"reason", v.status().message()}});
    return std::nullopt;
  }
  return *std::move(v);
}

Status Verification::Finish(VerifiedLaunch* v, Args outputs, cudaStream_t stream, int64_t index) {
  NvtxScope range(p_.nvtx, NvtxRange::kVerify);
  std::string diff;
  if (v != nullptr) {
    StatusOr<std::string> d = Check(*v, outputs, stream, index);
    p_.last_launch.RecordWork(stream);  // the check's own work on the stream follows the launch
    if (!d.ok()) return d.status();
    diff = *std::move(d);
  }
  if (v == nullptr && p_.guard && !p_.guard->violation().empty()) {
    // A read-only constant that a call changed: the application's error,
    // and verification's failure.
    ++p_.counters.verify_failures;
    diff = p_.guard->violation();
    p_.log.Warn("verify_failed", {{"method", p_.name}, {"call", index}, {"difference", diff}});
  }
  std::string veto = diff.empty() ? std::string() : "verify: " + diff + " (call " + std::to_string(index) + ")";
  // Every rank checks the same launches, so every rank votes here, even one
  // that could not check this launch.
  if (p_.votes.several_ranks()) {
    veto = p_.votes.Vote(std::move(veto), "verify");
    if (!veto.empty() && veto.rfind("verify:", 0) != 0) veto = "verify: " + veto;
  }
  if (!veto.empty()) {
    p_.graphs.TurnOff(eager_reason::kVerifyFailed, std::move(veto), index);
    p_.verify_scratch = VerifyScratch();
  }
  // This call's result is right, but a failed vote leaves the ranks out of
  // step: say so now rather than at the next call.
  return p_.votes.failure();
}

void Verification::Skip(VerifiedLaunch& v, std::string_view reason, cudaStream_t stream, int64_t index) {
  p_.log.Warn("verify_skipped", {{"method", p_.name}, {"call", index}, {"reason", reason}});
  // The graph's result stands; a failure to restore it is the next call's
  // to see in the context's state.
  if (Status kept = v.KeepGraphResult(stream); !kept.ok()) {
    p_.log.Error("verify_restore_failed", {{"method", p_.name}, {"call", index}, {"error", kept.message()}});
  }
}

StatusOr<std::string> Verification::Check(VerifiedLaunch& v, Args outputs, cudaStream_t stream, int64_t index) {
  ENCORE_ASSIGN_OR_RETURN(std::string cannot, v.Rewind(stream));
  if (!cannot.empty()) {
    Skip(v, cannot, stream, index);
    return std::string();
  }
  ENCORE_RETURN_IF_ERROR(p_.votes.failure());
  Status eager = p_.runner.RunAll(v.eager_inputs(), v.eager_outputs(), stream, CallKind::kEager, index);
  if (!eager.ok()) {
    Skip(v, eager.message(), stream, index);  // nothing to compare with
    return std::string();
  }
  return Compare(v, outputs, stream, index);
}

StatusOr<std::string> Verification::Compare(VerifiedLaunch& v, Args outputs, cudaStream_t stream, int64_t index) {
  const double tol = p_.flags.verify_tolerance;
  ENCORE_ASSIGN_OR_RETURN(std::string diff, v.Compare(outputs, tol, stream));
  if (!diff.empty() && !v.device_synced()) {
    // The eager run may still be writing on a stream it never joined: its
    // result is neither a fair comparison nor one to hand back yet.
    ENCORE_ASSIGN_OR_RETURN(diff, v.Compare(outputs, tol, stream, /*whole_device=*/true, std::chrono::seconds(10)));
  }
  if (!v.device_synced()) {
    p_.log.Info("verify_stream_only",
                {{"method", p_.name},
                 {"call", index},
                 {"reason", "a graph capture was in flight (on another thread, or around this call), which a "
                            "device-wide sync would break; work the body left on streams it never joined was not "
                            "waited for"}});
    if (!diff.empty()) {
      Skip(v, "inconclusive: " + diff, stream, index);
      return std::string();
    }
  }
  ++p_.counters.verified_launches;
  if (diff.empty()) {
    ENCORE_RETURN_IF_ERROR(v.KeepGraphResult(stream));
    p_.log.Debug("verified", {{"method", p_.name}, {"call", index}});
    return diff;
  }
  ++p_.counters.verify_failures;
  ENCORE_RETURN_IF_ERROR(v.KeepEagerResult(outputs, stream));
  p_.log.Warn("verify_failed", {{"method", p_.name}, {"call", index}, {"difference", diff}});
  return diff;
}

}  // namespace encore
