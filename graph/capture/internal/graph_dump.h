// SPDX-License-Identifier: Apache-2.0
// Graph dumps: each captured graph written as Graphviz DOT
// (cudaGraphDebugDotPrint) to `<dir>/<method>.dev<D>.graph<N>.dot`, for
// ManagerOptions::graph_dump_dir or ENCORE_GRAPH_DUMP_DIR. Internal to graph/.
#ifndef ENCORE_GRAPH_CAPTURE_INTERNAL_GRAPH_DUMP_H_
#define ENCORE_GRAPH_CAPTURE_INTERNAL_GRAPH_DUMP_H_

#include <cuda_runtime_api.h>

#include <cstdint>
#include <string>
#include <string_view>

#include "encore/core/status.h"

namespace encore {

// A method name as a file-name stem: ASCII letters, digits, '_' and '-' are
// kept; every other byte, '%' included, becomes %XX (upper-case hex). So the
// stem never holds '/', '.' or a NUL (a method named `../../x` or `a/b`
// writes inside the dump directory), and two names never give one stem (the
// escape is reversible). A stem over 160 bytes keeps its first 140 and adds
// `~` and the 16 hex digits of the name's 64-bit FNV-1a hash, to stay under
// file-system name limits ('~' is escaped everywhere else, so a long name
// never meets a short one).
std::string SafeFileStem(std::string_view method);

// `<dir>/<SafeFileStem(method)>.dev<device>.graph<n>.dot`, or for piece K of
// a method given as stages `...graph<n>.piece<K>.dot`.
std::string GraphDumpPath(std::string_view dir, std::string_view method, int device, uint64_t n, int piece = -1);

// Creates `dir` (and its parents) if needed and writes `graph` to `path` with
// every debug detail (kernel names and parameters, event nodes).
Status DumpGraphDot(cudaGraph_t graph, const std::string& dir, const std::string& path);

// ENCORE_GRAPH_DUMP_DIR, or empty.
std::string GraphDumpDirFromEnv();

class EventLog;

// Dumps graph number `n` of `method` on `device` into `dir` and logs
// `event=graph_dumped path=...` (info), or `graph_dump_failed` (warning) with
// the reason: a dump never fails a capture.
void DumpCapturedGraph(const EventLog& log, const std::string& dir, const std::string& method, int device, uint64_t n,
                       cudaGraph_t graph, int piece = -1);

}  // namespace encore

#endif  // ENCORE_GRAPH_CAPTURE_INTERNAL_GRAPH_DUMP_H_
