// SPDX-License-Identifier: Apache-2.0
#include "encore/graph/method_report.h"

#include <algorithm>

#include "encore/core/internal/text.h"
#include "encore/policy/internal/flag_table.h"

namespace encore {

std::string_view MethodPhaseName(MethodPhase p) {
  switch (p) {
    case MethodPhase::kWarmup: return "warmup";
    case MethodPhase::kCapture: return "capture";
    case MethodPhase::kReplay: return "replay";
    case MethodPhase::kEager: return "eager";
  }
  return "unknown";
}

void MethodReport::AddDevice(const MethodReport& o) {
#define ENCORE_X_(counter) counter += o.counter;
  ENCORE_METHOD_REPORT_COUNTERS(ENCORE_X_)
#undef ENCORE_X_
  memory.reserved_bytes += o.memory.reserved_bytes;
  memory.live_bytes += o.memory.live_bytes;
  memory.peak_bytes += o.memory.peak_bytes;
  graph_memory_bytes += o.graph_memory_bytes;
  if (graphs_off_reason.empty()) graphs_off_reason = o.graphs_off_reason;
  devices += o.devices;
  last_capture_us = std::max(last_capture_us, o.last_capture_us);
  for (const auto& [reason, n] : o.eager_by_reason) eager_by_reason[reason] += n;
}

namespace {

std::string ShapesJson(const std::vector<std::vector<Shape>>& graphs) {
  std::string j = "[";
  for (size_t g = 0; g < graphs.size(); ++g) {
    j += g ? ",[" : "[";
    for (size_t i = 0; i < graphs[g].size(); ++i) {
      j += i ? ",[" : "[";
      const Shape& s = graphs[g][i];
      for (int d = 0; d < s.size(); ++d) j += (d ? "," : "") + std::to_string(s[d]);
      j += ']';
    }
    j += ']';
  }
  return j + "]";
}

std::string IntsJson(const std::vector<int64_t>& v) {
  std::string j = "[";
  for (size_t i = 0; i < v.size(); ++i) j += (i ? "," : "") + std::to_string(v[i]);
  return j + "]";
}

std::string ReasonsJson(const std::map<std::string, int64_t, std::less<>>& reasons) {
  std::string j = "{";
  for (const auto& [reason, n] : reasons) j += (j.size() > 1 ? "," : "") + JsonQuoted(reason) + ":" + std::to_string(n);
  return j + "}";
}

std::string PiecesJson(const std::vector<PieceReport>& pieces) {
  std::string j = "[";
  for (const PieceReport& p : pieces) {
    std::string stages = "[";
    for (const std::string& s : p.stages) stages += (stages.size() > 1 ? "," : "") + JsonQuoted(s);
    j += (j.size() > 1 ? "," : "") + std::string("{\"stages\":") + stages + "],\"graphed\":" +
         (p.graphed ? "true" : "false") + ",\"reason\":" + (p.reason.empty() ? "null" : JsonQuoted(p.reason)) +
         ",\"graph_nodes\":" + std::to_string(p.graph_nodes) + ",\"replays\":" + std::to_string(p.replays) + "}";
  }
  return j + "]";
}

}  // namespace

std::string MethodReport::ToJson() const {
  std::string j = "{\"name\":\"" + JsonEscape(name) + "\",\"phase\":\"" + std::string(MethodPhaseName(phase)) +
                  "\",\"flags\":" + MethodFlagsJson(flags);
#define ENCORE_X_(counter) j += ",\"" #counter "\":" + std::to_string(counter);
  ENCORE_METHOD_REPORT_COUNTERS(ENCORE_X_)
#undef ENCORE_X_
  j += ",\"graphs_off_reason\":" + (graphs_off_reason.empty() ? "null" : JsonQuoted(graphs_off_reason));
  j += ",\"captured_input_shapes\":" + ShapesJson(captured_input_shapes);
  j += ",\"graph_nodes\":" + std::to_string(graph_nodes);
  j += ",\"binding\":\"" + std::string(BindingName(binding)) + "\",\"binding_reason\":" +
       (binding_reason.empty() ? "null" : JsonQuoted(binding_reason)) +
       ",\"rebind_sites\":" + std::to_string(rebind_sites);
  j += ",\"memory\":{\"reserved_bytes\":" + std::to_string(memory.reserved_bytes) +
       ",\"live_bytes\":" + std::to_string(memory.live_bytes) + ",\"peak_bytes\":" + std::to_string(memory.peak_bytes) +
       "}";
  j += ",\"buckets\":" + IntsJson(buckets);
  j += ",\"graph_memory_bytes\":" + std::to_string(graph_memory_bytes);
  j += ",\"static_outputs\":" + std::to_string(static_outputs.size());
  j += ",\"devices\":" + std::to_string(devices);
  j += ",\"last_capture_us\":" + std::to_string(last_capture_us);
  j += ",\"eager_by_reason\":" + ReasonsJson(eager_by_reason);
  j += ",\"pieces\":" + PiecesJson(pieces) + "}";
  return j;
}

}  // namespace encore
