// SPDX-License-Identifier: Apache-2.0
// LastLaunch: where and whether the method's last graph launch (or encore's
// own work after it: the probe's, verification's) is marked complete. The
// graph of a method's last segment, when that segment is a piece, ends with
// a record node of this event, so a replay makes no extra API call; a call
// whose last launch has no record node (an earlier piece's, followed by
// eager stages or by a piece run eagerly) records the event once on the host
// as it ends.
// A launch on a stream other than the previous one waits on the
// event (never on the previous stream, which the application may have
// destroyed, and never with a device-wide sync, which CUDA refuses, and
// which invalidates the capture, while any thread captures any stream).
#ifndef ENCORE_GRAPH_STORE_INTERNAL_LAST_LAUNCH_H_
#define ENCORE_GRAPH_STORE_INTERNAL_LAST_LAUNCH_H_

#include <cuda_runtime_api.h>

#include <string>

#include "encore/core/cuda_handle.h"
#include "encore/core/status.h"
#include "encore/core/internal/stream.h"

namespace encore {

class LastLaunch {
 public:
  explicit LastLaunch(const std::string* method) : method_(method) {}
  LastLaunch(const LastLaunch&) = delete;
  LastLaunch& operator=(const LastLaunch&) = delete;

  // The event every graph records last; made before the first capture.
  Status Prepare();
  cudaEvent_t event() const { return event_.get(); }

  // Makes `stream` wait for the last launch when it ran elsewhere (the
  // test inline: a replay on the stream of the last launch makes no call).
  Status Join(cudaStream_t stream) { return !launched_ || stream == stream_ ? OkStatus() : JoinOther(stream); }
  // Waits on the host for the last launch (Release, dropping graphs).
  Status Wait();
  // A graph launch on `stream` was queued; `records`: its own record node
  // marks its end, else EndCall (or a Join or Wait before it) records it.
  void Launched(cudaStream_t stream, bool records) {
    launched_ = true;
    stream_ = stream;
    recorded_ = records;
    pending_ = !records;
  }
  // The call ends: marks a launch whose graph has no record node.
  void EndCall() {
    if (pending_) RecordWork(stream_);
  }
  // Marks encore's own work queued on `stream` after a launch (the probe's
  // restoring copies, verification's re-run), so a later wait covers it.
  void RecordWork(cudaStream_t stream);
  // Nothing of the method is in flight any more (after Release).
  void Forget() {
    launched_ = false;
    pending_ = false;
  }
  bool launched() const { return launched_; }

 private:
  Status JoinOther(cudaStream_t stream);
  Status Unknown() const;
  const std::string* const method_;
  Event event_;
  cudaStream_t stream_ = nullptr;
  bool launched_ = false;
  // Whether event_ marks the end of the last launch.
  bool recorded_ = false;
  // The last launch had no record node and the call has not recorded it
  // yet; stream_ is the call's stream, alive until the call returns.
  bool pending_ = false;
};

}  // namespace encore

#endif  // ENCORE_GRAPH_STORE_INTERNAL_LAST_LAUNCH_H_
