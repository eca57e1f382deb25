// SPDX-License-Identifier: Apache-2.0
// MethodInstance::CaptureJob: what one capture has made so far, passed from
// stage to stage of the capture pipeline (method_capture.cc) and to the
// binding step (method_binding.cc). Internal to graph/.
#ifndef ENCORE_GRAPH_CAPTURE_JOB_H_
#define ENCORE_GRAPH_CAPTURE_JOB_H_

#include <cuda_runtime_api.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>

#include "encore/graph/graph.h"
#include "graph/direct_graph.h"     // private to graph/
#include "graph/exec_cache.h"       // private to graph/
#include "graph/method_instance.h"  // private to graph/

namespace encore {

struct MethodInstance::CaptureJob {
  std::chrono::steady_clock::time_point t0 = std::chrono::steady_clock::now();
  std::unique_ptr<GraphEntry> entry = std::make_unique<GraphEntry>();
  cudaStream_t stream = nullptr;  // the stream the capture records
  // The tensors the graph is captured for: the call's, or under
  // on_new_shape=pad the call's seen at its bucket's batch.
  Args graph_inputs;
  Args graph_outputs;
  bool padded = false;
  // Where head nodes tell tail nodes the caller's output addresses; for a
  // padded graph also how many bytes of each to copy out, and the launch's
  // number in the rows ring.
  void** out_table = nullptr;
  uint64_t* out_bytes = nullptr;
  uint64_t* launch_slot = nullptr;
  std::optional<Graph> graph;
  bool updated_in_place = false;
  // encore's nodes in the captured graph, for its direct form.
  StagedNodes staged;
  int64_t checks_before = 0;  // DeviceChecks::graph_checks() before the body
};

}  // namespace encore

#endif  // ENCORE_GRAPH_CAPTURE_JOB_H_
