// SPDX-License-Identifier: Apache-2.0
#include "encore/graph/capture/internal/verification.h"

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

bool Verification::Wanted(const GraphEntry& g, bool capture_launch, int64_t replays) const {
  // Two integer tests on an unverified replay; no CUDA call.
  if ((c_.info.flags.verify | c_.info.flags.verify_every) == 0) return false;
  return VerifiesLaunch(c_.info.flags, g.launches + 1, capture_launch ? 0 : replays + 1);
}

std::optional<VerifiedLaunch> Verification::Begin(const GraphEntry& g, Args inputs, Args outputs,
                                                  cudaStream_t stream, int64_t index) {
  if (!c_.constants.Listed()) {
    // The eager re-run would apply the body's writes to unlisted state (a
    // KV cache, a counter) a second time.
    if (!c_.constants.unlisted_logged) {
      c_.constants.unlisted_logged = true;
      c_.info.log.Warn("verify_refused",
                  {{"method", c_.info.name},
                   {"reason", "the method cannot list its constants, so an eager re-run would apply its writes to "
                              "them twice; list them (an empty list is fine) to verify"}});
    }
    return std::nullopt;
  }
  StatusOr<ConstantGuard*> guard = c_.constants.Guard(stream);
  StatusOr<VerifiedLaunch> v = guard.ok() ? VerifiedLaunch::Begin(inputs, outputs, DeviceStates(g), *guard,
                                                                  ConstantWatch::GuardBudget(), stream, &c_.constants.scratch())
                                          : StatusOr<VerifiedLaunch>(guard.status());
  if (!v.ok()) {
    c_.info.log.Warn("verify_skipped", {{"method", c_.info.name}, {"call", index}, {"reason", v.status().message()}});
    return std::nullopt;
  }
  return *std::move(v);
}

VerifyOutcome Verification::Finish(VerifiedLaunch* v, Args outputs, cudaStream_t stream, int64_t index) {
  NvtxScope range(c_.info.nvtx, NvtxRange::kVerify);
  std::string diff;
  if (v != nullptr) {
    StatusOr<std::string> d = Check(*v, outputs, stream, index);
    c_.store.last_launch.RecordWork(stream);  // the check's own work on the stream follows the launch
    if (!d.ok()) {
      out_.status = d.status();
      return std::move(out_);
    }
    diff = *std::move(d);
  }
  const ConstantGuard* guard = c_.constants.guard();
  if (v == nullptr && guard != nullptr && !guard->violation().empty()) {
    // A read-only constant that a call changed: the application's error,
    // and verification's failure.
    ++out_.counts.verify_failures;
    diff = guard->violation();
    c_.info.log.Warn("verify_failed", {{"method", c_.info.name}, {"call", index}, {"difference", diff}});
  }
  std::string veto = diff.empty() ? std::string() : "verify: " + diff + " (call " + std::to_string(index) + ")";
  // Every rank checks the same launches, so every rank votes here, even one
  // that could not check this launch.
  if (c_.votes.several_ranks()) {
    veto = c_.votes.Vote(std::move(veto), "verify");
    if (!veto.empty() && veto.rfind("verify:", 0) != 0) veto = "verify: " + veto;
  }
  out_.graphs_off = std::move(veto);
  // This call's result is right, but a failed vote leaves the ranks out of
  // step: say so now rather than at the next call.
  out_.status = c_.votes.failure();
  return std::move(out_);
}

void Verification::Skip(VerifiedLaunch& v, std::string_view reason, cudaStream_t stream, int64_t index) {
  c_.info.log.Warn("verify_skipped", {{"method", c_.info.name}, {"call", index}, {"reason", reason}});
  // The graph's result stands; a failure to restore it is the next call's
  // to see in the context's state.
  if (Status kept = v.KeepGraphResult(stream); !kept.ok()) {
    c_.info.log.Error("verify_restore_failed", {{"method", c_.info.name}, {"call", index}, {"error", kept.message()}});
  }
}

StatusOr<std::string> Verification::Check(VerifiedLaunch& v, Args outputs, cudaStream_t stream, int64_t index) {
  ENCORE_ASSIGN_OR_RETURN(std::string cannot, v.Rewind(stream));
  if (!cannot.empty()) {
    Skip(v, cannot, stream, index);
    return std::string();
  }
  ENCORE_RETURN_IF_ERROR(c_.votes.failure());
  Status eager = c_.runner.RunAll(v.eager_inputs(), v.eager_outputs(), stream, CallKind::kEager, index);
  if (!eager.ok()) {
    Skip(v, eager.message(), stream, index);  // nothing to compare with
    return std::string();
  }
  return Compare(v, outputs, stream, index);
}

StatusOr<std::string> Verification::Compare(VerifiedLaunch& v, Args outputs, cudaStream_t stream, int64_t index) {
  const double tol = c_.info.flags.verify_tolerance;
  ENCORE_ASSIGN_OR_RETURN(std::string diff, v.Compare(outputs, tol, stream));
  if (!diff.empty() && !v.device_synced()) {
    // The eager run may still be writing on a stream it never joined: its
    // result is neither a fair comparison nor one to hand back yet.
    ENCORE_ASSIGN_OR_RETURN(diff, v.Compare(outputs, tol, stream, /*whole_device=*/true, std::chrono::seconds(10)));
  }
  if (!v.device_synced()) {
    c_.info.log.Info("verify_stream_only",
                {{"method", c_.info.name},
                 {"call", index},
                 {"reason", "a graph capture was in flight (on another thread, or around this call), which a "
                            "device-wide sync would break; work the body left on streams it never joined was not "
                            "waited for"}});
    if (!diff.empty()) {
      Skip(v, "inconclusive: " + diff, stream, index);
      return std::string();
    }
  }
  ++out_.counts.verified_launches;
  if (diff.empty()) {
    ENCORE_RETURN_IF_ERROR(v.KeepGraphResult(stream));
    c_.info.log.Debug("verified", {{"method", c_.info.name}, {"call", index}});
    return diff;
  }
  ++out_.counts.verify_failures;
  ENCORE_RETURN_IF_ERROR(v.KeepEagerResult(outputs, stream));
  c_.info.log.Warn("verify_failed", {{"method", c_.info.name}, {"call", index}, {"difference", diff}});
  return diff;
}

}  // namespace encore
