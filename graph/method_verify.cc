// SPDX-License-Identifier: Apache-2.0
// Verification of MethodInstance's graph launches (MethodFlags::verify,
// verify_every): the launch, then the same call eagerly on snapshots of its
// inputs with the device state it changes rewound, then a comparison. A
// mismatch returns the eager result and turns graphs off, on every rank.
#include <chrono>
#include <string>

#include "graph/method_instance.h"  // private to graph/

namespace encore {

std::vector<DeviceStateRegion> MethodInstance::StateRegions(const GraphEntry& g) const {
  std::vector<DeviceStateRegion> regions;
  if (constants_) {
    for (const Constant& c : *constants_) {
      if (c.bytes > 0) regions.push_back({const_cast<void*>(c.data), c.bytes, "constant '" + c.name + "'"});
    }
  }
  regions.insert(regions.end(), g.device_states.begin(), g.device_states.end());
  return regions;
}

std::optional<VerifiedLaunch> MethodInstance::BeginVerify(const GraphEntry& g, Args inputs, Args outputs,
                                                          cudaStream_t stream, int64_t index) {
  if (!constants_) {
    // The eager re-run would apply the body's writes to unlisted state (a
    // KV cache, a counter) a second time.
    if (!verify_refusal_logged_) {
      verify_refusal_logged_ = true;
      log_.Warn("verify_refused",
                {{"method", name_},
                 {"reason", "the method cannot list its constants, so an eager re-run would apply its writes to "
                            "them twice; list them (an empty list is fine) to verify"}});
    }
    return std::nullopt;
  }
  StatusOr<VerifiedLaunch> v = VerifiedLaunch::Begin(inputs, outputs, StateRegions(g), stream);
  if (!v.ok()) {
    log_.Warn("verify_skipped", {{"method", name_}, {"call", index}, {"reason", v.status().message()}});
    return std::nullopt;
  }
  return *std::move(v);
}

Status MethodInstance::FinishVerify(VerifiedLaunch* v, Args outputs, cudaStream_t stream, int64_t index) {
  std::string diff;
  if (v != nullptr) {
    StatusOr<std::string> d = CheckLaunch(*v, outputs, stream, index);
    RecordLastWork(stream);  // the check's own work on the stream follows the launch
    if (!d.ok()) return d.status();
    diff = *std::move(d);
  }
  std::string veto = diff.empty() ? std::string() : "verify: " + diff + " (call " + std::to_string(index) + ")";
  // Every rank checks the same launches, so every rank votes here, even one
  // that could not check this launch.
  if (votes_.several_ranks()) {
    veto = votes_.Vote(std::move(veto), "verify");
    if (!veto.empty() && veto.rfind("verify:", 0) != 0) veto = "verify: " + veto;
  }
  if (!veto.empty()) TurnGraphsOff(std::move(veto), index);
  // This call's result is right, but a failed vote leaves the ranks out of
  // step: say so now rather than at the next call.
  return votes_.failure();
}

StatusOr<std::string> MethodInstance::CheckLaunch(VerifiedLaunch& v, Args outputs, cudaStream_t stream,
                                                  int64_t index) {
  ENCORE_RETURN_IF_ERROR(v.Rewind(stream));
  Status eager = RunEager(v.eager_inputs(), v.eager_outputs(), stream, CallKind::kEager, index);
  if (!eager.ok()) {
    // Nothing to compare with; the graph's result stands.
    log_.Warn("verify_skipped", {{"method", name_}, {"call", index}, {"reason", eager.message()}});
    ENCORE_RETURN_IF_ERROR(v.KeepGraphResult(stream));
    return std::string();
  }
  ENCORE_ASSIGN_OR_RETURN(std::string diff, v.Compare(outputs, flags_.verify_tolerance, stream));
  if (!diff.empty() && !v.device_synced()) {
    // The eager run may still be writing on a stream it never joined: its
    // result is neither a fair comparison nor one to hand back yet.
    ENCORE_ASSIGN_OR_RETURN(diff, v.Compare(outputs, flags_.verify_tolerance, stream, /*whole_device=*/true,
                                            std::chrono::seconds(10)));
  }
  if (!v.device_synced()) {
    log_.Info("verify_stream_only",
              {{"method", name_},
               {"call", index},
               {"reason", "a graph capture was in flight (on another thread, or around this call), which a "
                          "device-wide sync would break; work the body left on streams it never joined was not "
                          "waited for"}});
    if (!diff.empty()) {
      // Inconclusive: the graph's result stands, as when the eager run fails.
      log_.Warn("verify_skipped", {{"method", name_}, {"call", index}, {"reason", "inconclusive: " + diff}});
      ENCORE_RETURN_IF_ERROR(v.KeepGraphResult(stream));
      return std::string();
    }
  }
  ++counters_.verified_launches;
  if (diff.empty()) {
    ENCORE_RETURN_IF_ERROR(v.KeepGraphResult(stream));
    log_.Debug("verified", {{"method", name_}, {"call", index}});
    return diff;
  }
  ++counters_.verify_failures;
  ENCORE_RETURN_IF_ERROR(v.KeepEagerResult(outputs, stream));
  log_.Warn("verify_failed", {{"method", name_}, {"call", index}, {"difference", diff}});
  return diff;
}

}  // namespace encore
