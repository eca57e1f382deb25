// SPDX-License-Identifier: Apache-2.0
// capture_bench [weights_MiB...]: what a capture costs as the listed
// constants grow. A method of 160 small kernels that read one
// listed weights constant (256 MiB and 8 GiB by default, not flagged
// read-only) and write a 20 MiB state constant, captured under
// binding=staged and binding=auto, methods taking turns, median of 3 each:
// the capture's time (MethodReport::last_capture_us), the device memory it
// holds afterwards beyond staged's, and the growth of the process's peak
// resident memory, and where an auto capture's time went (the engine's
// capture_phases debug line, median of 3). Then verify_every=10 on the first
// size: a verified launch's end-to-end time against a replay plus an eager
// call.
//
//   capture_bench [--kernels N] [weights_MiB...]   (N: 160 by default)
#include <cuda_runtime.h>
#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "encore/bench/bench_util.h"
#include "encore/bench/micro_kernels.h"
#include "encore/encore.h"
#include "encore/examples/example_util.h"

namespace {

#define CK(x) EX_CUDA(x)

int g_kernels = 160;  // kernels per call; --kernels N
constexpr size_t kStateBytes = size_t{20} << 20;
constexpr int kN = 4096;  // floats of input and output

size_t FreeBytes() {
  size_t free = 0, total = 0;
  CK(cudaMemGetInfo(&free, &total));
  return free;
}

long PeakRssKiB() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return u.ru_maxrss;
}

struct Model {
  float* weights = nullptr;
  size_t weight_bytes = 0;
  float* state = nullptr;
};

encore::Status Body(const Model& m, encore::Call& c) {
  const size_t state_floats = kStateBytes / sizeof(float);
  const size_t chunk = state_floats / g_kernels;
  const size_t weight_floats = m.weight_bytes / sizeof(float);
  for (int k = 0; k < g_kernels; ++k) {
    // Each kernel reads its own 64 KiB of the weights (spread over them all)
    // and writes its chunk of the state and the output.
    const size_t w_at = (weight_floats - 16384) / g_kernels * k;
    cudaError_t e = encore::bench::LaunchStateStep(static_cast<const float*>(c.input(0).data), m.weights + w_at,
                                                   m.state + chunk * k, chunk, static_cast<float*>(c.output(0).data),
                                                   kN, c.stream());
    if (e != cudaSuccess) return encore::InternalError(cudaGetErrorName(e));
  }
  return encore::OkStatus();
}

encore::Method* Register(encore::Manager& mgr, const Model& model, encore::Binding binding, int verify_every,
                         int serial) {
  encore::MethodSpec spec;
  spec.name = std::string(encore::BindingName(binding)) + "_" + std::to_string(serial);
  spec.constants = std::vector<encore::Constant>{{"weights", model.weights, model.weight_bytes},
                                                 {"state", model.state, kStateBytes}};
  encore::MethodFlags f;
  f.binding = binding;
  f.verify_every = verify_every;
  spec.flags = f;
  spec.fn = [model](encore::Call& c) { return Body(model, c); };
  auto m = mgr.Register(std::move(spec));
  if (!m.ok()) {
    std::fprintf(stderr, "Register: %s\n", m.status().ToString().c_str());
    std::exit(1);
  }
  return *m;
}

struct Capture {
  double us = 0;
  double done_us = 0;   // the capture call and a wait for its stream: until the result is there
  double held_mib = 0;  // device memory held after the capture
  double rss_kib = 0;   // peak resident growth during the capture call
};

Capture CaptureOnce(encore::Method* m, encore::TensorRef& in, encore::TensorRef& out, cudaStream_t s) {
  for (int i = 0; i < 3; ++i) {  // the warmups
    if (!m->Run({&in, 1}, {&out, 1}, s).ok()) std::exit(1);
  }
  CK(cudaStreamSynchronize(s));
  const size_t free0 = FreeBytes();
  const long rss0 = PeakRssKiB();
  const auto t0 = std::chrono::steady_clock::now();
  encore::Status st = m->Run({&in, 1}, {&out, 1}, s);
  CK(cudaStreamSynchronize(s));
  const auto t1 = std::chrono::steady_clock::now();
  if (!st.ok()) std::exit(1);
  Capture c;
  c.us = static_cast<double>(m->Report().last_capture_us);
  c.done_us = std::chrono::duration<double, std::micro>(t1 - t0).count();
  c.held_mib = (static_cast<double>(free0) - static_cast<double>(FreeBytes())) / (1 << 20);
  c.rss_kib = static_cast<double>(PeakRssKiB() - rss0);
  return c;
}

double MedianOf(std::vector<double> v) { return encore::bench::Median(std::move(v)); }

// The engine's debug lines, where the capture_phases of each capture are.
std::ostringstream g_log;

// "name_us=12.3" fields of the last capture_phases line, in order.
std::vector<std::pair<std::string, double>> LastPhases() {
  const std::string text = g_log.str();
  const size_t at = text.rfind("event=capture_phases");
  std::vector<std::pair<std::string, double>> out;
  if (at == std::string::npos) return out;
  std::istringstream line(text.substr(at, text.find('\n', at) - at));
  for (std::string field; line >> field;) {
    const size_t eq = field.find('=');
    if (eq == std::string::npos || eq < 4 || field.compare(eq - 3, 3, "_us") != 0) continue;
    out.emplace_back(field.substr(0, eq - 3), std::strtod(field.c_str() + eq + 1, nullptr));
  }
  return out;
}

void CaptureCost(encore::Manager& mgr, size_t weight_mib, cudaStream_t s, encore::TensorRef& in,
                 encore::TensorRef& out, int* serial) {
  Model model;
  model.weight_bytes = weight_mib << 20;
  if (cudaMalloc(&model.weights, model.weight_bytes) != cudaSuccess ||
      cudaMalloc(&model.state, kStateBytes) != cudaSuccess) {
    (void)cudaGetLastError();
    std::printf("weights %zu MiB: does not fit, skipped\n", weight_mib);
    return;
  }
  CK(cudaMemset(model.weights, 0, model.weight_bytes));
  CK(cudaMemset(model.state, 0, kStateBytes));
  std::vector<double> us[2], done[2], held[2], rss[2];
  std::vector<std::vector<std::pair<std::string, double>>> phases;
  encore::Method* last[2] = {};
  for (int r = 0; r < 3; ++r) {
    for (int b = 0; b < 2; ++b) {  // the two bindings take turns
      encore::Method* m = Register(mgr, model, b == 0 ? encore::Binding::kStaged : encore::Binding::kAuto, 0, ++*serial);
      Capture c = CaptureOnce(m, in, out, s);
      if (b == 1) phases.push_back(LastPhases());
      us[b].push_back(c.us);
      done[b].push_back(c.done_us);
      held[b].push_back(c.held_mib);
      rss[b].push_back(c.rss_kib);
      if (last[b] != nullptr && !last[b]->Release().ok()) std::exit(1);
      last[b] = m;
    }
  }
  const encore::MethodReport ra = last[1]->Report();
  std::printf("weights %6zu MiB: capture staged %8.1f us, auto %8.1f us (%.2fx; %s)\n", weight_mib, MedianOf(us[0]),
              MedianOf(us[1]), MedianOf(us[1]) / MedianOf(us[0]), std::string(encore::BindingName(ra.binding)).c_str());
  std::printf("  capture call + stream wait (the result there): staged %8.1f us, auto %8.1f us (%.2fx)\n",
              MedianOf(done[0]), MedianOf(done[1]), MedianOf(done[1]) / MedianOf(done[0]));
  std::printf("  device memory held after capture: staged %.1f MiB, auto %.1f MiB (auto - staged %.1f MiB; "
              "inputs + outputs + written state = %.1f MiB)\n",
              MedianOf(held[0]), MedianOf(held[1]), MedianOf(held[1]) - MedianOf(held[0]),
              (2.0 * kN * sizeof(float) + kStateBytes) / (1 << 20));
  std::printf("  peak RSS growth during the capture call: staged %.0f KiB, auto %.0f KiB\n", MedianOf(rss[0]),
              MedianOf(rss[1]));
  std::printf("  binding reason: %s\n", ra.binding_reason.c_str());
  if (!phases.empty() && !phases[0].empty()) {
    std::printf("  auto capture phases (us, median of %zu):", phases.size());
    for (size_t i = 0; i < phases[0].size(); ++i) {
      std::vector<double> v;
      for (const auto& ph : phases) v.push_back(i < ph.size() ? ph[i].second : 0);
      std::printf(" %s %.1f", phases[0][i].first.c_str(), MedianOf(v));
    }
    std::printf("\n");
  }
  for (encore::Method* m : last) (void)m->Release();
  CK(cudaFree(model.weights));
  CK(cudaFree(model.state));
}

double TimedCall(encore::Method* m, encore::TensorRef& in, encore::TensorRef& out, cudaStream_t s) {
  CK(cudaStreamSynchronize(s));
  const auto t0 = std::chrono::steady_clock::now();
  if (!m->Run({&in, 1}, {&out, 1}, s).ok()) std::exit(1);
  CK(cudaStreamSynchronize(s));
  return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
}

// verify_every=10: each verified launch end to end against a replay plus an
// eager call of the same method, all measured in the same run.
void VerifyCost(encore::Manager& mgr, size_t weight_mib, cudaStream_t s, encore::TensorRef& in,
                encore::TensorRef& out, int* serial) {
  Model model;
  model.weight_bytes = weight_mib << 20;
  if (cudaMalloc(&model.weights, model.weight_bytes) != cudaSuccess ||
      cudaMalloc(&model.state, kStateBytes) != cudaSuccess) {
    std::printf("verify: does not fit, skipped\n");
    return;
  }
  CK(cudaMemset(model.weights, 0, model.weight_bytes));
  CK(cudaMemset(model.state, 0, kStateBytes));
  encore::Method* verified = Register(mgr, model, encore::Binding::kAuto, 10, ++*serial);
  encore::Method* plain = Register(mgr, model, encore::Binding::kAuto, 0, ++*serial);
  encore::MethodSpec eager_spec;
  eager_spec.name = "eager_" + std::to_string(++*serial);
  eager_spec.constants = std::vector<encore::Constant>{};
  encore::MethodFlags off;
  off.graphs = false;
  eager_spec.flags = off;
  eager_spec.fn = [model](encore::Call& c) { return Body(model, c); };
  encore::Method* eager = *mgr.Register(std::move(eager_spec));
  for (encore::Method* m : {verified, plain, eager}) {
    for (int i = 0; i < 20; ++i) TimedCall(m, in, out, s);
  }
  std::vector<double> checked, replay, eager_us;
  for (int r = 0; r < 200; ++r) {  // verified replays are every 10th
    const int64_t before = verified->Report().verified_launches;
    const double t = TimedCall(verified, in, out, s);
    if (verified->Report().verified_launches > before) checked.push_back(t);
    replay.push_back(TimedCall(plain, in, out, s));
    eager_us.push_back(TimedCall(eager, in, out, s));
  }
  const double c = MedianOf(checked), rp = MedianOf(replay), e = MedianOf(eager_us);
  std::printf("verify_every=10, weights %zu MiB: verified launch %.1f us end to end (%zu of them), replay %.1f us, "
              "eager %.1f us; verified / (replay + eager) = %.3f (target <= 1.10) %s\n",
              weight_mib, c, checked.size(), rp, e, c / (rp + e), c / (rp + e) <= 1.10 ? "met" : "MISSED");
  const encore::MethodReport r = verified->Report();
  std::printf("  verified_launches %lld, verify_failures %lld, phase %s, binding %s\n",
              static_cast<long long>(r.verified_launches), static_cast<long long>(r.verify_failures),
              std::string(encore::MethodPhaseName(r.phase)).c_str(), std::string(encore::BindingName(r.binding)).c_str());
  for (encore::Method* m : {verified, plain, eager}) (void)m->Release();
  CK(cudaFree(model.weights));
  CK(cudaFree(model.state));
}

}  // namespace

int main(int argc, char** argv) {
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::fprintf(stderr, "capture_bench: no CUDA device visible\n");
    return 77;
  }
  std::vector<size_t> sizes;
  for (int i = 1; i < argc; ++i) {
    if (std::string(argv[i]) == "--kernels" && i + 1 < argc) {
      g_kernels = std::atoi(argv[++i]);
      continue;
    }
    sizes.push_back(std::strtoull(argv[i], nullptr, 10));
  }
  if (sizes.empty()) sizes = {256, 8192};
  cudaStream_t s;
  CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  float *x, *y;
  CK(cudaMalloc(&x, kN * sizeof(float)));
  CK(cudaMalloc(&y, kN * sizeof(float)));
  CK(cudaMemset(x, 0, kN * sizeof(float)));
  encore::TensorRef in{x, encore::DType::kFloat32, {kN}, {}}, out{y, encore::DType::kFloat32, {kN}, {}};
  encore::ManagerOptions mo;
  mo.logger = std::make_shared<spdlog::logger>("phases", std::make_shared<spdlog::sinks::ostream_sink_st>(g_log));
  mo.logger->set_level(spdlog::level::debug);
  auto mgr = *encore::Manager::Create(mo);
  int serial = 0;
  std::printf("capture_bench: %d kernels, 20 MiB written state, weights listed (not read_only)\n", g_kernels);
  for (size_t mib : sizes) CaptureCost(*mgr, mib, s, in, out, &serial);
  VerifyCost(*mgr, sizes.front(), s, in, out, &serial);
  return 0;
}
