// SPDX-License-Identifier: Apache-2.0
// checksum_micro [MiB...]: device bandwidth of graph/verify's primitives over
// one region of 256 MiB, 2 GiB and 8 GiB (or the sizes given), each one
// cudaMalloc, sizes that do not fit skipped: RegionChecksums::Compute and
// ComputeAndCompare (16-byte aligned base, and a base 1 byte past it),
// DeviceDiff::EnqueueBytes over two copies, and cudaMemcpyAsync D2D of the
// same size for comparison. GPU time from events, median of 15 after 3
// warmups; GB/s counts the region's bytes once (the D2D copy also writes
// them, and DeviceDiff reads two regions: both noted). The target
// for Compute: >= 3500 GB/s at 8 GiB on an H200.
#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

#include "encore/bench/bench_util.h"
#include "encore/examples/example_util.h"
#include "encore/graph/verify/internal/device_diff.h"
#include "encore/graph/verify/internal/region_checksums.h"

namespace {

namespace ex = encore::examples;
using encore::bench::Median;

constexpr int kWarmup = 3;
constexpr int kRepeats = 15;
constexpr size_t kMiB = size_t{1} << 20;
constexpr size_t kHeadroom = 512 * kMiB;  // left free for the context and tables
constexpr double kTargetGBs = 3500;

// Median milliseconds of `op` on `s`, timed with events.
double TimeMs(cudaStream_t s, const std::function<void()>& op) {
  cudaEvent_t a, b;
  EX_CUDA(cudaEventCreate(&a));
  EX_CUDA(cudaEventCreate(&b));
  for (int i = 0; i < kWarmup; ++i) op();
  std::vector<double> ms;
  for (int i = 0; i < kRepeats; ++i) {
    EX_CUDA(cudaEventRecord(a, s));
    op();
    EX_CUDA(cudaEventRecord(b, s));
    EX_CUDA(cudaEventSynchronize(b));
    float t = 0;
    EX_CUDA(cudaEventElapsedTime(&t, a, b));
    ms.push_back(t);
  }
  EX_CUDA(cudaEventDestroy(a));
  EX_CUDA(cudaEventDestroy(b));
  return Median(ms);
}

size_t FreeBytes() {
  size_t free = 0, total = 0;
  EX_CUDA(cudaMemGetInfo(&free, &total));
  return free;
}

struct Row {
  std::string variant;
  size_t bytes;
  double ms;
};

std::vector<Row> g_rows;

void Report(const std::string& variant, size_t bytes, double ms, const char* note = "") {
  g_rows.push_back({variant, bytes, ms});
  std::printf("%-28s %7zu MiB %9.3f ms %8.0f GB/s %s\n", variant.c_str(), bytes / kMiB, ms, bytes / (ms * 1e6), note);
}

// The checksum variants over the `bytes` at `data`.
void TimeChecksums(const std::string& tag, const void* data, size_t bytes, cudaStream_t s) {
  auto c = ex::CheckOk(encore::RegionChecksums::Create({{data, bytes, "bench"}}, {}, s), "RegionChecksums::Create");
  Report("compute" + tag, bytes, TimeMs(s, [&] { ex::CheckOk(c.Compute(0, s), "Compute"); }));
  Report("compute_and_compare" + tag, bytes,
         TimeMs(s, [&] { ex::CheckOk(c.ComputeAndCompare(1, 0, false, s), "ComputeAndCompare"); }));
  auto v = ex::CheckOk(c.ReadVerdict(s), "ReadVerdict");
  ex::Expect(v.differing_blocks == 0, "unchanged data compared unequal");
}

void RunSize(size_t bytes, cudaStream_t s) {
  if (FreeBytes() < bytes + kHeadroom) {
    std::printf("%zu MiB: skipped, %zu MiB free\n", bytes / kMiB, FreeBytes() / kMiB);
    return;
  }
  void* src = nullptr;
  EX_CUDA(cudaMalloc(&src, bytes));
  EX_CUDA(cudaMemset(src, 0xa5, bytes));
  EX_CUDA(cudaDeviceSynchronize());
  TimeChecksums("", src, bytes, s);
  TimeChecksums("_unaligned", static_cast<char*>(src) + 1, bytes - 1, s);
  if (FreeBytes() < bytes + kHeadroom) {
    std::printf("%zu MiB: D2D copy and DeviceDiff skipped (no room for a second buffer)\n", bytes / kMiB);
  } else {
    void* dst = nullptr;
    EX_CUDA(cudaMalloc(&dst, bytes));
    Report("memcpy_d2d", bytes,
           TimeMs(s, [&] { EX_CUDA(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, s)); }),
           "(reads and writes: 2x bytes moved)");
    auto d = ex::CheckOk(encore::DeviceDiff::Create(1, s), "DeviceDiff::Create");
    Report("device_diff_bytes", bytes,
           TimeMs(s, [&] { ex::CheckOk(d.EnqueueBytes(0, src, dst, bytes, s), "Enqueue"); }),
           "(reads both: 2x bytes read)");
    ex::Expect(ex::CheckOk(d.Read(0, s), "Read").empty(), "copies compared unequal");
    EX_CUDA(cudaFree(dst));
  }
  EX_CUDA(cudaFree(src));
}

std::string Json() {
  std::string j = "{\"benchmark\": \"checksum_micro\", \"repeats\": " + std::to_string(kRepeats) + ", \"rows\": [";
  for (size_t i = 0; i < g_rows.size(); ++i) {
    const Row& r = g_rows[i];
    char buf[256];
    std::snprintf(buf, sizeof buf, "%s{\"variant\": \"%s\", \"bytes\": %zu, \"ms\": %.4f, \"gb_per_s\": %.1f}",
                  i ? ", " : "", r.variant.c_str(), r.bytes, r.ms, r.bytes / (r.ms * 1e6));
    j += buf;
  }
  return j + "]}\n";
}

}  // namespace

int main(int argc, char** argv) {
  if (int rc = ex::RequireGpu("checksum_micro")) return rc;
  std::vector<size_t> sizes;
  for (int i = 1; i < argc; ++i) sizes.push_back(std::strtoull(argv[i], nullptr, 10) * kMiB);
  if (sizes.empty()) sizes = {256 * kMiB, 2048 * kMiB, 8192 * kMiB};
  cudaStream_t s;
  EX_CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  std::printf("%-28s %11s %12s %13s\n", "variant", "size", "median", "bandwidth");
  for (size_t bytes : sizes) RunSize(bytes, s);
  for (const Row& r : g_rows) {
    if (r.variant == "compute" && r.bytes == 8192 * kMiB) {
      const double gbs = r.bytes / (r.ms * 1e6);
      std::printf("target compute >= %.0f GB/s at 8 GiB: %s (%.0f GB/s)\n", kTargetGBs,
                  gbs >= kTargetGBs ? "met" : "NOT met", gbs);
    }
  }
  (void)encore::bench::WriteResults(Json(), "checksum_micro.json", "checksum_micro.json");
  EX_CUDA(cudaStreamDestroy(s));
  return 0;
}
