// SPDX-License-Identifier: Apache-2.0
// Padding to buckets (on_new_shape=pad) in MethodInstance: a call of batch b
// replays the graph of the smallest bucket >= b. The graph is captured for
// the call's tensors seen at the bucket's batch B (their data pointers, B
// rows); its head staging node copies the caller's b rows into the static
// inputs and zeroes rows [b, B), its tail copies b rows of each output back.
// Each launch's b reaches the graph through the rows ring (pad_rows.h), so a
// replay makes the CUDA calls of any replay whatever its b: no parameter
// rewrite. Learned buckets (none listed) come from BucketLearner's reviews.
#include <algorithm>
#include <string>

#include "encore/policy/pad_policy.h"
#include "graph/method_instance.h"  // private to graph/

namespace encore {
namespace {

bool PointersOk(std::span<const TensorRef> tensors) {
  bool ok = true;
  for (const TensorRef& t : tensors) ok &= t.data != nullptr || t.numel() == 0;
  return ok;
}

// The batch a graph of a padded method was captured for.
int64_t GraphBatch(const GraphEntry& g) {
  const auto& sig = g.signature.inputs().empty() ? g.signature.outputs() : g.signature.inputs();
  return sig.empty() || sig[0].shape.size() == 0 ? -1 : sig[0].shape[0];
}

}  // namespace

BindingChoice PaddedBinding() {
  return {Binding::kStaged,
          "on_new_shape=pad: staged, because the caller's tensors hold only the call's b rows of the bucket's B: "
          "the graph copies b rows in, zeroes the rest and copies b rows out"};
}

int MethodInstance::GraphCap() const {
  if (pad_ && !flags_.buckets.empty()) return std::max(flags_.max_graphs, static_cast<int>(flags_.buckets.size()));
  return flags_.max_graphs;
}

Status MethodInstance::DispatchPadded(Args inputs, Args outputs, cudaStream_t stream) {
  if (votes_.several_ranks() && !votes_.flags_compared()) {
    if (std::string why = votes_.CompareFlags(flags_); !why.empty()) TurnGraphsOff(std::move(why), counters_.calls);
  }
  ENCORE_ASSIGN_OR_RETURN(const int64_t batch, CallBatch(name_, inputs, outputs));
  const bool graphs_on = flags_.graphs && !graphs_off_;
  size_t bucket = BucketFor(buckets_, batch);
  if (graphs_on && flags_.buckets.empty() && batch > 0) {
    learner_.Observe(batch, bucket < buckets_.size());
    if (learner_.review_due()) {
      ReviewBuckets(counters_.calls + 1);
      bucket = BucketFor(buckets_, batch);
    }
  }
  const bool has_bucket = bucket < buckets_.size() && batch > 0;
  if (graphs_on && has_bucket) {
    // The fast path: the bucket's graph, a matching call. A match implies
    // valid tensors apart from the data pointers, as in CanReplayFront.
    PaddedViews(inputs, buckets_[bucket], &pad_inputs_);
    PaddedViews(outputs, buckets_[bucket], &pad_outputs_);
    const size_t match = cache_.Find(pad_inputs_, pad_outputs_);
    if (match < cache_.size() && PointersOk(inputs) && PointersOk(outputs)) {
      const int64_t index = ++counters_.calls;
      counters_.real_rows += batch;
      counters_.padded_rows += buckets_[bucket] - batch;
      return ReplayPadded(cache_.Touch(match), inputs, outputs, stream, index, batch);
    }
  }
  return DispatchPaddedSlow(inputs, outputs, stream, batch, has_bucket);
}

Status MethodInstance::DispatchPaddedSlow(Args inputs, Args outputs, cudaStream_t stream, int64_t batch,
                                          bool has_bucket) {
  ENCORE_RETURN_IF_ERROR(ValidateArgs(inputs, outputs));
  ENCORE_RETURN_IF_ERROR(CheckRowsArePrefix(name_, inputs, outputs));
  const int64_t rows = has_bucket ? buckets_[BucketFor(buckets_, batch)] : batch;
  size_t match = cache_.size();
  if (has_bucket) {
    PaddedViews(inputs, rows, &pad_inputs_);
    PaddedViews(outputs, rows, &pad_outputs_);
    match = cache_.Find(pad_inputs_, pad_outputs_);
  }
  Action action = Decide(DecisionInput{&flags_, graphs_off_, warmups_done_, !cache_.empty(), match < cache_.size()});
  // A batch no bucket holds (above the largest, or before any is learned)
  // runs eagerly; so does an empty batch, which has nothing to pad.
  const bool graph_action = action == Action::kCapture || action == Action::kRecapture || action == Action::kReplay;
  if (graph_action && !has_bucket) action = Action::kEagerOnce;
  action = VetoCapture(action);
  const int64_t index = ++counters_.calls;
  counters_.real_rows += batch;
  switch (action) {
    case Action::kWarmup:
      return RunWarmup(inputs, outputs, stream, index);
    case Action::kReplay:
      counters_.padded_rows += rows - batch;
      return ReplayPadded(cache_.Touch(match), inputs, outputs, stream, index, batch);
    case Action::kCapture:
    case Action::kRecapture: {
      counters_.padded_rows += rows - batch;
      // The capture's own launch reads its b from the ring too.
      ENCORE_RETURN_IF_ERROR(StageRows(batch));
      const PaddedArgs padded{pad_inputs_, pad_outputs_};
      return CaptureWithinBudget(inputs, outputs, stream, index, /*recapture=*/false, &padded);
    }
    case Action::kEagerOnce:
      log_.Debug("eager_unbucketed", {{"method", name_}, {"call", index}, {"batch", batch},
                                      {"largest_bucket", buckets_.empty() ? int64_t{0} : buckets_.back()}});
      [[fallthrough]];
    case Action::kEager:
    case Action::kRefuse: {  // pad never refuses
      NvtxScope range(nvtx_, NvtxRange::kEager);
      ++counters_.eager_calls;
      return RunEager(inputs, outputs, stream, CallKind::kEager, index);
    }
  }
  return InternalError("method '" + name_ + "': no action for this padded call");
}

Status MethodInstance::StageRows(int64_t batch) {
  ENCORE_RETURN_IF_ERROR(pad_rows_.Prepare(name_));
  if (pad_rows_.behind()) ENCORE_RETURN_IF_ERROR(WaitForLastLaunch());
  pad_rows_.Stage(batch);
  return OkStatus();
}

Status MethodInstance::ReplayPadded(GraphEntry& g, Args inputs, Args outputs, cudaStream_t stream, int64_t index,
                                    int64_t batch) {
  NvtxScope range(nvtx_, NvtxRange::kReplay);
  ENCORE_ASSIGN_OR_RETURN(BoundExec bound, cache_.Bind(g, inputs, outputs, &counters_.exec_variants));
  ENCORE_RETURN_IF_ERROR(StageRows(batch));
  // Verification checks the caller's b rows against an eager run on them.
  const bool verify = (flags_.verify | flags_.verify_every) != 0 &&
                      VerifiesLaunch(flags_, g.launches + 1, counters_.replays + 1);
  std::optional<VerifiedLaunch> v;
  if (verify) {
    ENCORE_RETURN_IF_ERROR(JoinLastLaunch(stream));  // snapshots after the last launch
    v = BeginVerify(g, inputs, outputs, stream, index);
  }
  ENCORE_RETURN_IF_ERROR(LaunchGraph(*bound.exec, stream, index, bound.bumps_sequence));
  ++g.launches;
  ++counters_.replays;
  if (log_.enabled(spdlog::level::trace)) log_.Log(spdlog::level::trace, "replay", {{"method", name_}, {"call", index}});
  if (verify) return FinishVerify(v ? &*v : nullptr, outputs, stream, index);
  return OkStatus();
}

void MethodInstance::ReviewBuckets(int64_t index) {
  std::optional<std::vector<int64_t>> next = learner_.Review(buckets_);
  if (!next) return;
  const std::string previous = BucketsText(buckets_);
  buckets_ = *std::move(next);
  ++counters_.bucket_changes;
  // Graphs of buckets no longer chosen go now, so capturing the new ones
  // does not evict graphs that are still chosen.
  for (size_t i = cache_.size(); i-- > 0;) {
    if (!std::binary_search(buckets_.begin(), buckets_.end(), GraphBatch(*cache_.entries()[i]))) cache_.Erase(i);
  }
  log_.Info("buckets", {{"method", name_}, {"call", index}, {"buckets", BucketsText(buckets_)},
                        {"previous", previous}, {"observed", learner_.observed()}});
}

}  // namespace encore
