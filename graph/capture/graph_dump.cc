// SPDX-License-Identifier: Apache-2.0
#include "encore/graph/capture/internal/graph_dump.h"

#include <cstdlib>
#include <filesystem>
#include <system_error>

#include "encore/core/internal/cuda_api.h"
#include "encore/core/cuda_error.h"
#include "encore/core/internal/log.h"
#include "encore/core/internal/text.h"

namespace encore {
namespace {

constexpr size_t kMaxStem = 160;
constexpr size_t kKeptWhenLong = 140;

bool Kept(unsigned char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
}

}  // namespace

std::string SafeFileStem(std::string_view method) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  out.reserve(method.size());
  for (unsigned char c : method) {
    if (Kept(c)) {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  if (out.size() > kMaxStem) {
    size_t keep = kKeptWhenLong;
    // Never cut an escape in half.
    if (out[keep - 1] == '%') keep -= 1;
    else if (out[keep - 2] == '%') keep -= 2;
    out.resize(keep);
    const uint64_t h = Fnv1a(method);
    out += '~';
    for (int shift = 60; shift >= 0; shift -= 4) out += kHex[(h >> shift) & 15];
  }
  return out;
}

std::string GraphDumpPath(std::string_view dir, std::string_view method, int device, uint64_t n, int piece) {
  std::string p(dir);
  if (!p.empty() && p.back() != '/') p += '/';
  p += SafeFileStem(method);
  p += ".dev" + std::to_string(device) + ".graph" + std::to_string(n);
  if (piece >= 0) p += ".piece" + std::to_string(piece);
  p += ".dot";
  return p;
}

Status DumpGraphDot(cudaGraph_t graph, const std::string& dir, const std::string& path) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) {
    return InternalError("graph dump: cannot create the directory '" + dir + "' (" + ec.message() +
                         "); set ManagerOptions::graph_dump_dir or ENCORE_GRAPH_DUMP_DIR to a writable directory");
  }
  cudaError_t err = cuda().GraphDebugDotPrint(graph, path.c_str(), cudaGraphDebugDotFlagsVerbose);
  if (err != cudaSuccess) {
    return CudaResult(err, CudaCall::kGraphDebugDotPrint, "writing '" + path + "'");
  }
  return OkStatus();
}

std::string GraphDumpDirFromEnv() {
  const char* v = std::getenv("ENCORE_GRAPH_DUMP_DIR");
  return v ? std::string(v) : std::string();
}

void DumpCapturedGraph(const EventLog& log, const std::string& dir, const std::string& method, int device, uint64_t n,
                       cudaGraph_t graph, int piece) {
  std::string path = GraphDumpPath(dir, method, device, n, piece);
  if (Status s = DumpGraphDot(graph, dir, path); !s.ok()) {
    ClearCudaError();  // a failed debug print must not look like the method's error later
    log.Warn("graph_dump_failed", {{"method", method}, {"path", path}, {"error", s.message()}});
    return;
  }
  log.Info("graph_dumped", {{"method", method}, {"device", device}, {"graph", n}, {"path", path}});
}

}  // namespace encore
