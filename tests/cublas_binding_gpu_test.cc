// SPDX-License-Identifier: Apache-2.0
// Direct binding (MethodFlags::binding) of methods whose bodies are cuBLAS and
// cuBLASLt calls: an FP32 GEMM, a BF16 tensor-core GEMM,
// a cuBLASLt matmul with a bias epilogue, a gemv (whose kernels take one
// struct argument), and a GEMM reading alpha and beta from device memory.
// Each runs on rotating buffer sets and then on buffers at new addresses,
// every replay verified against an eager re-run, and every result must be
// bit-equal to the same body run eagerly, outside encore, on the same inputs.
//
// Every case binds directly, the probe passing. cuBLAS launches some kernels
// with their parameters in one packed buffer (the launch's `extra`): on the
// H200 with cuBLAS 13.1 the BF16 tensor-core GEMMs (nvJet kernels), from
// cublasGemmEx and cublasLtMatmul alike, whose tensor-map descriptors hold
// the tensors' addresses as plain words. The scan reads that buffer too; the
// test captures each body alone to say which form it met, and prints it.
//
// The cuBLAS handle's workspace is a buffer allocated once, outside any
// capture: without one, cuBLAS (12.2 and later) allocates its workspace in
// a capture through stream-ordered allocation, which becomes graph memory
// nodes, and cublasSetStream puts the handle back on that pool, so the body
// sets the workspace again after every cublasSetStream. cuBLASLt takes its
// workspace as an argument, and its algorithm is chosen by the heuristic
// once, outside the capture. The workspaces are scratch whose contents no
// call reads, so they are not listed as constants: a second run (the probe's,
// the verifier's) writing them again changes nothing.
#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "encore/core/internal/cuda_api.h"
#include "encore/graph/manager.h"
#include "encore/tests/device_buffer.h"
#include "encore/tests/gpu_test_util.h"
#include "encore/tests/log_capture.h"

namespace encore {
namespace {

using testing::DeviceBuffer;
using Bytes = std::vector<std::byte>;

constexpr size_t kWorkspaceBytes = size_t{32} << 20;  // cuBLAS's advice for Hopper
constexpr int kSets = 3;    // buffer sets the calls rotate through
constexpr int kRounds = 3;  // rounds over the sets at recurring addresses
// Calls: kRounds * kSets at recurring addresses, then kSets at new ones.
constexpr int kCalls = (kRounds + 1) * kSets;
constexpr int kWarmups = 1;  // cuBLAS loads its kernels before the capture

#define ENCORE_CUBLAS_RETURN(call)                                                                   \
  do {                                                                                               \
    cublasStatus_t encore_st_ = (call);                                                              \
    if (encore_st_ != CUBLAS_STATUS_SUCCESS) {                                                       \
      return InternalError(std::string(#call) + ": " + cublasGetStatusName(encore_st_));             \
    }                                                                                                \
  } while (0)

// Handles and workspaces shared by every test: created once, on first use.
struct Blas {
  cublasHandle_t handle = nullptr;
  cublasLtHandle_t lt = nullptr;
  void* workspace = nullptr;     // cuBLAS's, set on the handle
  void* lt_workspace = nullptr;  // cuBLASLt's, passed to each matmul
};
Blas* blas = nullptr;

// The handle on `s`, with the test's workspace (cublasSetStream drops it).
Status UseStream(cudaStream_t s) {
  ENCORE_CUBLAS_RETURN(cublasSetStream(blas->handle, s));
  ENCORE_CUBLAS_RETURN(cublasSetWorkspace(blas->handle, blas->workspace, kWorkspaceBytes));
  return OkStatus();
}

struct Tensor {
  DType dtype;
  int64_t numel;
  size_t bytes() const { return static_cast<size_t>(numel) * DTypeSize(dtype); }
};

using Body = std::function<Status(const std::vector<const void*>& in, const std::vector<void*>& out, cudaStream_t)>;

struct Case {
  std::string name;
  std::vector<Tensor> inputs, outputs;
  Body body;
  // Set `set`'s input `i`, as bytes.
  std::function<Bytes(int set, int i)> input;
  // Checks an eager result against the CPU, so that a wrong reference (all
  // zeros, say) cannot make a wrong graph pass; empty when it agrees.
  std::function<std::string(const std::vector<Bytes>& in, const std::vector<Bytes>& out)> check;
  std::vector<Constant> constants;
};

// Small multiples of 1/4 in [-1, 1]: exact in FP32 and BF16, so the CPU's
// sums differ from the GPU's only by the output's rounding.
float Value(int set, int salt, int64_t i) { return float((i * 7 + set * 13 + salt * 5) % 9 - 4) / 4.0f; }

uint16_t ToBf16(float f) {  // exact for Value()'s numbers
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return static_cast<uint16_t>(u >> 16);
}
float FromBf16(uint16_t h) {
  uint32_t u = uint32_t{h} << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

Bytes Floats(int set, int salt, int64_t n) {
  Bytes b(n * sizeof(float));
  for (int64_t i = 0; i < n; ++i) {
    float v = Value(set, salt, i);
    std::memcpy(b.data() + i * sizeof(float), &v, sizeof(float));
  }
  return b;
}
Bytes Bf16s(int set, int salt, int64_t n) {
  Bytes b(n * 2);
  for (int64_t i = 0; i < n; ++i) {
    uint16_t v = ToBf16(Value(set, salt, i));
    std::memcpy(b.data() + i * 2, &v, 2);
  }
  return b;
}
float F32At(const Bytes& b, int64_t i) {
  float f;
  std::memcpy(&f, b.data() + i * sizeof(float), sizeof(float));
  return f;
}
float Bf16At(const Bytes& b, int64_t i) {
  uint16_t h;
  std::memcpy(&h, b.data() + i * 2, 2);
  return FromBf16(h);
}

// Column-major C (m x n) = alpha * A (m x k) * B (k x n) + beta * C0 (+ bias[row]).
std::vector<double> CpuGemm(int64_t m, int64_t n, int64_t k, const std::function<float(int64_t)>& a,
                            const std::function<float(int64_t)>& b, double alpha) {
  std::vector<double> c(m * n, 0.0);
  for (int64_t j = 0; j < n; ++j) {
    for (int64_t i = 0; i < m; ++i) {
      double s = 0;
      for (int64_t p = 0; p < k; ++p) s += double(a(i + p * m)) * double(b(p + j * k));
      c[i + j * m] = alpha * s;
    }
  }
  return c;
}

// Empty when every got(i) is within `rel` of want[i].
std::string Near(const std::vector<double>& want, const std::function<float(int64_t)>& got, double rel) {
  for (size_t i = 0; i < want.size(); ++i) {
    double g = got(static_cast<int64_t>(i));
    if (!(std::fabs(g - want[i]) <= rel * std::fabs(want[i]) + 1e-6)) {
      return "element " + std::to_string(i) + ": GPU " + std::to_string(g) + ", CPU " + std::to_string(want[i]);
    }
  }
  return {};
}

// The first byte where two buffers differ, or -1.
int64_t FirstDiff(const Bytes& a, const Bytes& b) {
  if (a.size() != b.size()) return 0;
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i] != b[i]) return static_cast<int64_t>(i);
  }
  return -1;
}

// (a) cublasSgemm, FP32, alpha and beta from the host.
Case SgemmCase() {
  constexpr int64_t m = 128, n = 128, k = 128;
  constexpr float kAlpha = 1.5f;
  Case c;
  c.name = "sgemm";
  c.inputs = {{DType::kFloat32, m * k}, {DType::kFloat32, k * n}};
  c.outputs = {{DType::kFloat32, m * n}};
  c.body = [](const std::vector<const void*>& in, const std::vector<void*>& out, cudaStream_t s) -> Status {
    ENCORE_RETURN_IF_ERROR(UseStream(s));
    const float alpha = kAlpha, beta = 0.0f;
    ENCORE_CUBLAS_RETURN(cublasSgemm(blas->handle, CUBLAS_OP_N, CUBLAS_OP_N, m, n, k, &alpha,
                                     static_cast<const float*>(in[0]), m, static_cast<const float*>(in[1]), k,
                                     &beta, static_cast<float*>(out[0]), m));
    return OkStatus();
  };
  c.input = [](int set, int i) { return Floats(set, i, i == 0 ? m * k : k * n); };
  c.check = [](const std::vector<Bytes>& in, const std::vector<Bytes>& out) {
    auto want = CpuGemm(m, n, k, [&](int64_t i) { return F32At(in[0], i); },
                        [&](int64_t i) { return F32At(in[1], i); }, kAlpha);
    return Near(want, [&](int64_t i) { return F32At(out[0], i); }, 1e-6);
  };
  return c;
}

// (a) cublasGemmEx on BF16 tensors with FP32 accumulation: tensor-core kernels.
Case GemmExBf16Case() {
  constexpr int64_t m = 256, n = 256, k = 256;
  Case c;
  c.name = "gemmex_bf16";
  c.inputs = {{DType::kBFloat16, m * k}, {DType::kBFloat16, k * n}};
  c.outputs = {{DType::kBFloat16, m * n}};
  c.body = [](const std::vector<const void*>& in, const std::vector<void*>& out, cudaStream_t s) -> Status {
    ENCORE_RETURN_IF_ERROR(UseStream(s));
    const float alpha = 1.0f, beta = 0.0f;
    ENCORE_CUBLAS_RETURN(cublasGemmEx(blas->handle, CUBLAS_OP_N, CUBLAS_OP_N, m, n, k, &alpha, in[0], CUDA_R_16BF,
                                      m, in[1], CUDA_R_16BF, k, &beta, out[0], CUDA_R_16BF, m, CUBLAS_COMPUTE_32F,
                                      CUBLAS_GEMM_DEFAULT));
    return OkStatus();
  };
  c.input = [](int set, int i) { return Bf16s(set, i, i == 0 ? m * k : k * n); };
  c.check = [](const std::vector<Bytes>& in, const std::vector<Bytes>& out) {
    auto want = CpuGemm(m, n, k, [&](int64_t i) { return Bf16At(in[0], i); },
                        [&](int64_t i) { return Bf16At(in[1], i); }, 1.0);
    return Near(want, [&](int64_t i) { return Bf16At(out[0], i); }, 1.0 / 128);
  };
  return c;
}

// (b) cublasLtMatmul, BF16, D = W * X + bias: W (the weights) a listed
// constant, X and the bias inputs, the algorithm from the heuristic.
struct LtPlan {
  static constexpr int64_t m = 256, n = 64, k = 128;  // out features, batch, in features
  cublasLtMatmulDesc_t op = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, d = nullptr;
  cublasLtMatmulHeuristicResult_t algo{};
  std::unique_ptr<DeviceBuffer<uint16_t>> weights;
  Bytes weights_host;
  std::string error;  // why the plan could not be made
  ~LtPlan() {
    if (op) cublasLtMatmulDescDestroy(op);
    for (auto l : {a, b, d}) {
      if (l) cublasLtMatrixLayoutDestroy(l);
    }
  }
};

std::unique_ptr<LtPlan> MakeLtPlan() {
  auto p = std::make_unique<LtPlan>();
  auto fail = [&](const char* what, cublasStatus_t st) {
    p->error = std::string(what) + ": " + cublasGetStatusName(st);
    return std::move(p);
  };
  constexpr int64_t m = LtPlan::m, n = LtPlan::n, k = LtPlan::k;
  cublasStatus_t st = cublasLtMatmulDescCreate(&p->op, CUBLAS_COMPUTE_32F, CUDA_R_32F);
  if (st != CUBLAS_STATUS_SUCCESS) return fail("cublasLtMatmulDescCreate", st);
  cublasLtEpilogue_t epilogue = CUBLASLT_EPILOGUE_BIAS;
  st = cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_EPILOGUE, &epilogue, sizeof(epilogue));
  if (st != CUBLAS_STATUS_SUCCESS) return fail("CUBLASLT_MATMUL_DESC_EPILOGUE", st);
  if ((st = cublasLtMatrixLayoutCreate(&p->a, CUDA_R_16BF, m, k, m)) != CUBLAS_STATUS_SUCCESS ||
      (st = cublasLtMatrixLayoutCreate(&p->b, CUDA_R_16BF, k, n, k)) != CUBLAS_STATUS_SUCCESS ||
      (st = cublasLtMatrixLayoutCreate(&p->d, CUDA_R_16BF, m, n, m)) != CUBLAS_STATUS_SUCCESS) {
    return fail("cublasLtMatrixLayoutCreate", st);
  }
  cublasLtMatmulPreference_t pref = nullptr;
  if ((st = cublasLtMatmulPreferenceCreate(&pref)) != CUBLAS_STATUS_SUCCESS) {
    return fail("cublasLtMatmulPreferenceCreate", st);
  }
  uint64_t ws = kWorkspaceBytes;
  st = cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof(ws));
  int found = 0;
  if (st == CUBLAS_STATUS_SUCCESS) {
    st = cublasLtMatmulAlgoGetHeuristic(blas->lt, p->op, p->a, p->b, p->d, p->d, pref, 1, &p->algo, &found);
  }
  cublasLtMatmulPreferenceDestroy(pref);
  if (st != CUBLAS_STATUS_SUCCESS) return fail("cublasLtMatmulAlgoGetHeuristic", st);
  if (found == 0) return fail("cublasLtMatmulAlgoGetHeuristic found no algorithm", CUBLAS_STATUS_NOT_SUPPORTED);
  p->weights_host = Bf16s(7, 9, m * k);
  p->weights = std::make_unique<DeviceBuffer<uint16_t>>(m * k);
  std::vector<uint16_t> w(m * k);
  std::memcpy(w.data(), p->weights_host.data(), p->weights_host.size());
  p->weights->Upload(w);
  return p;
}

Case LtBiasCase(LtPlan* plan) {
  constexpr int64_t m = LtPlan::m, n = LtPlan::n, k = LtPlan::k;
  Case c;
  c.name = "lt_bf16_bias";
  c.inputs = {{DType::kBFloat16, k * n}, {DType::kBFloat16, m}};
  c.outputs = {{DType::kBFloat16, m * n}};
  c.constants = {Constant{"weights", plan->weights->get(), size_t(m * k) * 2}};
  c.body = [plan](const std::vector<const void*>& in, const std::vector<void*>& out, cudaStream_t s) -> Status {
    // The descriptor is host state read at the call: the bias of this call.
    const void* bias = in[1];
    ENCORE_CUBLAS_RETURN(
        cublasLtMatmulDescSetAttribute(plan->op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof(bias)));
    const float alpha = 1.0f, beta = 0.0f;
    ENCORE_CUBLAS_RETURN(cublasLtMatmul(blas->lt, plan->op, &alpha, plan->weights->get(), plan->a, in[0], plan->b,
                                        &beta, out[0], plan->d, out[0], plan->d, &plan->algo.algo,
                                        blas->lt_workspace, kWorkspaceBytes, s));
    return OkStatus();
  };
  c.input = [](int set, int i) { return Bf16s(set, i, i == 0 ? k * n : m); };
  c.check = [plan](const std::vector<Bytes>& in, const std::vector<Bytes>& out) {
    auto want = CpuGemm(m, n, k, [&](int64_t i) { return Bf16At(plan->weights_host, i); },
                        [&](int64_t i) { return Bf16At(in[0], i); }, 1.0);
    for (int64_t j = 0; j < n; ++j) {
      for (int64_t i = 0; i < m; ++i) want[i + j * m] += Bf16At(in[1], i);
    }
    return Near(want, [&](int64_t i) { return Bf16At(out[0], i); }, 1.0 / 128);
  };
  return c;
}

// (c) cublasSgemv: y = A x.
Case SgemvCase() {
  constexpr int64_t m = 512, n = 256;
  Case c;
  c.name = "sgemv";
  c.inputs = {{DType::kFloat32, m * n}, {DType::kFloat32, n}};
  c.outputs = {{DType::kFloat32, m}};
  c.body = [](const std::vector<const void*>& in, const std::vector<void*>& out, cudaStream_t s) -> Status {
    ENCORE_RETURN_IF_ERROR(UseStream(s));
    const float alpha = 1.0f, beta = 0.0f;
    ENCORE_CUBLAS_RETURN(cublasSgemv(blas->handle, CUBLAS_OP_N, m, n, &alpha, static_cast<const float*>(in[0]), m,
                                     static_cast<const float*>(in[1]), 1, &beta, static_cast<float*>(out[0]), 1));
    return OkStatus();
  };
  c.input = [](int set, int i) { return Floats(set, i, i == 0 ? m * n : n); };
  c.check = [](const std::vector<Bytes>& in, const std::vector<Bytes>& out) {
    auto want = CpuGemm(m, 1, n, [&](int64_t i) { return F32At(in[0], i); },
                        [&](int64_t i) { return F32At(in[1], i); }, 1.0);
    return Near(want, [&](int64_t i) { return F32At(out[0], i); }, 1e-6);
  };
  return c;
}

// (d) cublasSgemm with CUBLAS_POINTER_MODE_DEVICE: alpha and beta are read
// at run time from input 3 (a new pair each set), and C starts as a copy of
// input 2: D = alpha * A * B + beta * C.
Case DeviceScalarsCase() {
  constexpr int64_t m = 64, n = 96, k = 128;
  Case c;
  c.name = "sgemm_device_scalars";
  c.inputs = {{DType::kFloat32, m * k}, {DType::kFloat32, k * n}, {DType::kFloat32, m * n}, {DType::kFloat32, 2}};
  c.outputs = {{DType::kFloat32, m * n}};
  c.body = [](const std::vector<const void*>& in, const std::vector<void*>& out, cudaStream_t s) -> Status {
    ENCORE_RETURN_IF_ERROR(UseStream(s));
    if (cudaError_t e = cudaMemcpyAsync(out[0], in[2], m * n * sizeof(float), cudaMemcpyDeviceToDevice, s);
        e != cudaSuccess) {
      return InternalError(std::string("cudaMemcpyAsync: ") + cudaGetErrorName(e));
    }
    const float* scalars = static_cast<const float*>(in[3]);
    ENCORE_CUBLAS_RETURN(cublasSetPointerMode(blas->handle, CUBLAS_POINTER_MODE_DEVICE));
    cublasStatus_t st = cublasSgemm(blas->handle, CUBLAS_OP_N, CUBLAS_OP_N, m, n, k, scalars,
                                    static_cast<const float*>(in[0]), m, static_cast<const float*>(in[1]), k,
                                    scalars + 1, static_cast<float*>(out[0]), m);
    ENCORE_CUBLAS_RETURN(cublasSetPointerMode(blas->handle, CUBLAS_POINTER_MODE_HOST));
    ENCORE_CUBLAS_RETURN(st);
    return OkStatus();
  };
  c.input = [](int set, int i) {
    if (i < 3) return Floats(set, i, i == 0 ? m * k : i == 1 ? k * n : m * n);
    float ab[2] = {0.5f * float(set + 1), 0.25f * float(set + 1) - 0.5f};  // beta -0.25, 0, 0.25
    Bytes b(sizeof(ab));
    std::memcpy(b.data(), ab, sizeof(ab));
    return b;
  };
  c.check = [](const std::vector<Bytes>& in, const std::vector<Bytes>& out) {
    const double alpha = F32At(in[3], 0), beta = F32At(in[3], 1);
    auto want = CpuGemm(m, n, k, [&](int64_t i) { return F32At(in[0], i); },
                        [&](int64_t i) { return F32At(in[1], i); }, alpha);
    for (int64_t i = 0; i < m * n; ++i) want[i] += beta * F32At(in[2], i);
    return Near(want, [&](int64_t i) { return F32At(out[0], i); }, 1e-6);
  };
  return c;
}

// The device buffers of one call.
struct BufferSet {
  std::vector<std::unique_ptr<DeviceBuffer<std::byte>>> in, out;
  std::vector<const void*> in_ptrs() const {
    std::vector<const void*> p;
    for (auto& b : in) p.push_back(b->get());
    return p;
  }
  std::vector<void*> out_ptrs() const {
    std::vector<void*> p;
    for (auto& b : out) p.push_back(b->get());
    return p;
  }
};

// Whether a kernel of `c`'s body takes its parameters as one packed buffer
// (the launch's `extra`) instead of an array of pointers: the body captured
// alone, outside encore, and its kernel nodes read with the driver call the
// scan uses.
StatusOr<bool> LaunchesWithExtra(const Case& c, const BufferSet& b, cudaStream_t s) {
  if (cudaError_t e = cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal); e != cudaSuccess) {
    return InternalError(std::string("cudaStreamBeginCapture: ") + cudaGetErrorName(e));
  }
  Status body = c.body(b.in_ptrs(), b.out_ptrs(), s);
  cudaGraph_t g = nullptr;
  cudaError_t e = cudaStreamEndCapture(s, &g);
  ENCORE_RETURN_IF_ERROR(body);
  if (e != cudaSuccess) return InternalError(std::string("cudaStreamEndCapture: ") + cudaGetErrorName(e));
  size_t n = 0;
  e = cudaGraphGetNodes(g, nullptr, &n);
  std::vector<cudaGraphNode_t> nodes(n);
  if (e == cudaSuccess) e = cudaGraphGetNodes(g, nodes.data(), &n);
  bool extra = false;
  for (size_t i = 0; e == cudaSuccess && i < n; ++i) {
    cudaGraphNodeType type{};
    e = cudaGraphNodeGetType(nodes[i], &type);
    if (e != cudaSuccess || type != cudaGraphNodeTypeKernel) continue;
    CUDA_KERNEL_NODE_PARAMS params{};
    e = encore_cuGraphKernelNodeGetParams(nodes[i], &params);
    if (e == cudaSuccess && params.extra != nullptr) extra = true;
  }
  cudaGraphDestroy(g);
  if (e != cudaSuccess) return InternalError(std::string("reading the body's graph: ") + cudaGetErrorName(e));
  return extra;
}

class CublasBindingGpuTest : public ::testing::TestWithParam<Binding> {
 protected:
  void SetUp() override {
    ENCORE_REQUIRE_GPU();
    if (blas == nullptr) {
      auto b = std::make_unique<Blas>();
      ASSERT_EQ(cublasCreate(&b->handle), CUBLAS_STATUS_SUCCESS);
      ASSERT_EQ(cublasLtCreate(&b->lt), CUBLAS_STATUS_SUCCESS);
      ENCORE_CUDA_ASSERT(cudaMalloc(&b->workspace, kWorkspaceBytes));
      ENCORE_CUDA_ASSERT(cudaMalloc(&b->lt_workspace, kWorkspaceBytes));
      blas = b.release();  // for the process: handles outlive every test
    }
    ManagerOptions o;
    o.logger = logs_.logger();
    mgr_ = *Manager::Create(std::move(o));
    ENCORE_CUDA_ASSERT(cudaStreamCreateWithFlags(&s_, cudaStreamNonBlocking));
  }
  void TearDown() override {
    mgr_.reset();
    if (s_) cudaStreamDestroy(s_);
  }

  Method* Register(const Case& c) {
    MethodSpec spec;
    spec.name = c.name + "_" + std::string(BindingName(GetParam()));
    spec.constants = c.constants;
    MethodFlags f;
    f.warmup_calls = kWarmups;
    f.binding = GetParam();
    f.verify_every = 1;  // every replay checked against an eager re-run
    spec.flags = f;
    Body body = c.body;
    spec.fn = [body](Call& call) -> Status {
      std::vector<const void*> in;
      std::vector<void*> out;
      for (size_t i = 0; i < call.num_inputs(); ++i) in.push_back(call.input(i).data);
      for (size_t i = 0; i < call.num_outputs(); ++i) out.push_back(call.output(i).data);
      return body(in, out, call.stream());
    };
    StatusOr<Method*> m = mgr_->Register(std::move(spec));
    EXPECT_TRUE(m.ok()) << m.status();
    return m.ok() ? *m : nullptr;
  }

  static std::vector<TensorRef> Refs(const std::vector<Tensor>& t,
                                     const std::vector<std::unique_ptr<DeviceBuffer<std::byte>>>& b) {
    std::vector<TensorRef> r;
    for (size_t i = 0; i < t.size(); ++i) r.push_back(TensorRef{b[i]->get(), t[i].dtype, {t[i].numel}, {}});
    return r;
  }

  BufferSet NewSet(const Case& c, int set) {
    BufferSet b;
    for (size_t i = 0; i < c.inputs.size(); ++i) {
      b.in.push_back(std::make_unique<DeviceBuffer<std::byte>>(c.inputs[i].bytes()));
      b.in.back()->Upload(c.input(set, static_cast<int>(i)));
    }
    for (const Tensor& t : c.outputs) b.out.push_back(std::make_unique<DeviceBuffer<std::byte>>(t.bytes()));
    return b;
  }

  // Runs `c` on kSets buffer sets, kRounds times round, then on new buffers
  // for each set; each result must be bit-equal to the body run eagerly,
  // outside encore, on that set's inputs (itself checked against the CPU).
  void RunRotating(Method* m, const Case& c) {
    ASSERT_NE(m, nullptr);
    std::vector<BufferSet> sets;
    std::vector<std::vector<Bytes>> want(kSets);
    for (int p = 0; p < kSets; ++p) {
      sets.push_back(NewSet(c, p));
      BufferSet ref = NewSet(c, p);
      Status s = c.body(ref.in_ptrs(), ref.out_ptrs(), s_);
      ASSERT_TRUE(s.ok()) << "eager reference: " << s;
      ENCORE_CUDA_ASSERT(cudaStreamSynchronize(s_));
      std::vector<Bytes> in_host;
      for (auto& b : ref.in) in_host.push_back(b->Download());
      for (auto& b : ref.out) want[p].push_back(b->Download());
      std::string bad = c.check(in_host, want[p]);
      ASSERT_TRUE(bad.empty()) << c.name << " eager result disagrees with the CPU, set " << p << ": " << bad;
    }
    std::vector<BufferSet> fresh;  // kept alive, so each new set's addresses are new
    for (int call = 0; call < kCalls; ++call) {
      const int p = call % kSets;
      BufferSet* b = &sets[p];
      if (call >= kRounds * kSets) {
        fresh.push_back(NewSet(c, p));
        b = &fresh.back();
      }
      for (auto& o : b->out) ENCORE_CUDA_ASSERT(cudaMemset(o->get(), 0xA5, o->size()));
      ENCORE_CUDA_ASSERT(cudaDeviceSynchronize());
      std::vector<TensorRef> in = Refs(c.inputs, b->in), out = Refs(c.outputs, b->out);
      Status s = m->Run(in, out, s_);
      ASSERT_TRUE(s.ok()) << "call " << call << ": " << s;
      ENCORE_CUDA_ASSERT(cudaStreamSynchronize(s_));
      for (size_t o = 0; o < b->out.size(); ++o) {
        int64_t at = FirstDiff(b->out[o]->Download(), want[p][o]);
        EXPECT_EQ(at, -1) << c.name << " call " << call << " (set " << p << (call >= kRounds * kSets ? ", new" : "")
                          << " addresses) output " << o << " differs from the eager run at byte " << at;
      }
    }
  }

  // What the GPU run showed, for the log a reader of the results has.
  static void Print(const MethodReport& r) {
    std::cout << "[cublas_binding] " << r.name << ": binding=" << BindingName(r.binding)
              << " graph_nodes=" << r.graph_nodes << " rebind_sites=" << r.rebind_sites
              << " exec_variants=" << r.exec_variants << " captures=" << r.captures << " replays=" << r.replays
              << " verified=" << r.verified_launches << " verify_failures=" << r.verify_failures
              << " reason='" << r.binding_reason << "' graphs_off='" << r.graphs_off_reason << "'" << std::endl;
  }

  // Runs `c` (RunRotating, every result bit-equal to the eager run) and
  // checks its binding: the outcome direct binding is for, bound directly with
  // the probe passed, whether or not a kernel takes a packed buffer (on the
  // H200, cuBLAS 13.1's nvJet tensor-core kernels for BF16 do). Every replay
  // is verified equal to an eager re-run.
  void RunAndExpectBinding(const Case& c) {
    Method* m = Register(c);
    RunRotating(m, c);
    if (HasFatalFailure()) return;
    // After the method's calls, so that cuBLAS's first call on these shapes
    // (which may load kernels) ran eagerly, as it does for the method.
    bool extra = false;
    {
      BufferSet b = NewSet(c, 0);
      StatusOr<bool> x = LaunchesWithExtra(c, b, s_);
      ASSERT_TRUE(x.ok()) << x.status();
      extra = *x;
    }
    MethodReport r = m->Report();
    std::cout << "[cublas_binding] " << c.name << ": a kernel launched with 'extra': " << (extra ? "yes" : "no")
              << std::endl;
    Print(r);
    EXPECT_TRUE(r.graphs_off_reason.empty()) << r.graphs_off_reason;
    EXPECT_EQ(r.captures, 1);
    EXPECT_EQ(r.recaptures, 0);
    EXPECT_EQ(r.replays, kCalls - kWarmups - 1);
    EXPECT_EQ(r.verified_launches, r.replays);
    EXPECT_EQ(r.verify_failures, 0);
    EXPECT_EQ(logs_.Count("binding_probe"), 0);  // logged only when the probe stages
    const std::string flag = "binding=" + std::string(BindingName(GetParam())) + ": ";
    EXPECT_EQ(r.binding, Binding::kDirect) << r.binding_reason;
    EXPECT_EQ(r.binding_reason, flag + "direct: every reference found, rewritten and proven by the probe");
    // Every tensor (constants aside) is named by at least one parameter
    // word or endpoint.
    EXPECT_GE(r.rebind_sites, static_cast<int64_t>(c.inputs.size() + c.outputs.size()));
    EXPECT_GT(r.exec_variants, 0);  // recurring sets earned executables
  }

  LogCapture logs_;
  std::unique_ptr<Manager> mgr_;
  cudaStream_t s_ = nullptr;
};

TEST_P(CublasBindingGpuTest, Sgemm) { RunAndExpectBinding(SgemmCase()); }

TEST_P(CublasBindingGpuTest, GemmExBf16TensorCores) { RunAndExpectBinding(GemmExBf16Case()); }

TEST_P(CublasBindingGpuTest, LtMatmulBf16WithBiasEpilogue) {
  std::unique_ptr<LtPlan> plan = MakeLtPlan();
  ASSERT_TRUE(plan->error.empty()) << plan->error;
  RunAndExpectBinding(LtBiasCase(plan.get()));
}

TEST_P(CublasBindingGpuTest, SgemvOneStructArgument) { RunAndExpectBinding(SgemvCase()); }

TEST_P(CublasBindingGpuTest, SgemmScalarsInDeviceMemory) { RunAndExpectBinding(DeviceScalarsCase()); }

INSTANTIATE_TEST_SUITE_P(Bindings, CublasBindingGpuTest, ::testing::Values(Binding::kDirect, Binding::kAuto),
                         [](const ::testing::TestParamInfo<Binding>& i) { return std::string(BindingName(i.param)); });

}  // namespace
}  // namespace encore
