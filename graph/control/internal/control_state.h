// SPDX-License-Identifier: Apache-2.0
// ControlState: a method instance's part in Call::If and Call::While. The
// body streams and the runaway record are made before the first capture of
// a method whose body used them (or that captures on its first call), since
// neither can be made inside a capture; `recording` is the capture
// recording now; a loop an eager call stopped at its bound is reported at
// the next Run.
#ifndef ENCORE_GRAPH_CONTROL_INTERNAL_CONTROL_STATE_H_
#define ENCORE_GRAPH_CONTROL_INTERNAL_CONTROL_STATE_H_

#include <atomic>
#include <string>

#include "encore/graph/control/internal/body_stream_pool.h"
#include "encore/graph/control/internal/conditional_capture.h"
#include "encore/graph/control/internal/loop_record.h"

namespace encore {

struct ControlState {
  // The body called If or While; set from a capture on the manager's
  // worker too (capture=background), beside a call's eager run.
  std::atomic<bool> uses_control{false};
  BodyStreamPool body_streams;
  LoopRecord loops;
  ConditionalCapture* recording = nullptr;
  std::string eager_runaway;
};

}  // namespace encore

#endif  // ENCORE_GRAPH_CONTROL_INTERNAL_CONTROL_STATE_H_
