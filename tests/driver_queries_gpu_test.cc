// SPDX-License-Identifier: Apache-2.0
// The driver queries behind a direct binding, on a real GPU: every driver
// entry point asked for at a version the driver has, and no query refused
// (Note [Asking the driver only what it has], core/internal/driver_entry.h);
// a kernel's parameter layout read with no failing call where the driver
// counts parameters (CUDA 13.2+), and with exactly the two reads past the
// last parameter per kernel function where it cannot (Note [A kernel's
// parameter count], graph/binding/reference_scan.cc). A binary of its own:
// entry points are looked up once per process, so the recording table is in
// place before encore's first capture.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <set>
#include <string>
#include <utility>
#include <vector>

#include "encore/core/internal/cuda_api.h"
#include "encore/core/internal/driver_entry.h"
#include "encore/graph/manager.h"
#include "encore/tests/affine_call.h"
#include "encore/tests/device_buffer.h"
#include "encore/tests/gpu_test_util.h"

namespace encore {
namespace {

using testing::DeviceBuffer;

constexpr int64_t kN = 256;

// The real calls, recorded.
struct Recorder {
  static inline std::vector<std::pair<std::string, unsigned>> asked;
  static inline std::vector<cudaError_t> answers;
  static inline std::set<const void*> functions;  // whose layout was read
  static inline int param_reads = 0;
  static inline int failed_param_reads = 0;

  static cudaError_t GetDriverEntryPoint(const char* symbol, void** fn, unsigned int version,
                                         cudaDriverEntryPointQueryResult* found) {
    const cudaError_t err = RealCudaApi().GetDriverEntryPoint(symbol, fn, version, found);
    asked.emplace_back(symbol, version);
    answers.push_back(err);
    return err;
  }
  static cudaError_t Note(const void* function, cudaError_t err) {
    functions.insert(function);
    ++param_reads;
    if (err != cudaSuccess) ++failed_param_reads;
    return err;
  }
  static cudaError_t FuncInfo(CUfunction f, size_t i, size_t* offset, size_t* size) {
    return Note(f, RealCudaApi().DriverFuncGetParamInfo(f, i, offset, size));
  }
  static cudaError_t KernelInfo(CUkernel k, size_t i, size_t* offset, size_t* size) {
    return Note(k, RealCudaApi().DriverKernelGetParamInfo(k, i, offset, size));
  }
};

TEST(DriverQueriesGpuTest, EntryPointsWithinTheDriverAndParameterReadsThatFailOnlyWithoutACount) {
  ENCORE_REQUIRE_GPU();
  int driver = 0;
  ENCORE_CUDA_ASSERT(cudaDriverGetVersion(&driver));
  CudaApi table = RealCudaApi();
  table.GetDriverEntryPoint = &Recorder::GetDriverEntryPoint;
  table.DriverFuncGetParamInfo = &Recorder::FuncInfo;
  table.DriverKernelGetParamInfo = &Recorder::KernelInfo;
  const CudaApi* previous = internal::g_cuda_api.exchange(&table);

  cudaStream_t s = nullptr;
  ENCORE_CUDA_ASSERT(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  MethodReport report;
  {
    std::unique_ptr<Manager> manager = *Manager::Create();
    MethodSpec spec;
    spec.name = "affine";
    spec.constants = std::vector<Constant>{};
    MethodFlags flags;
    flags.warmup_calls = 0;
    flags.binding = Binding::kAuto;
    spec.flags = flags;
    spec.fn = [](Call& c) { return testing::AffineCall(c, 2.0f, 1.0f); };
    Method* m = *manager->Register(std::move(spec));
    for (int call = 0; call < 4; ++call) {  // the capture, then replays on new buffers
      DeviceBuffer<float> x(kN), y(kN);
      x.Fill(float(call));
      TensorRef in{x.get(), DType::kFloat32, {kN}, {}}, out{y.get(), DType::kFloat32, {kN}, {}};
      ASSERT_TRUE(m->Run({&in, 1}, {&out, 1}, s).ok());
      ENCORE_CUDA_ASSERT(cudaStreamSynchronize(s));
      EXPECT_EQ(y.Download(), std::vector<float>(kN, 2.0f * float(call) + 1.0f)) << "call " << call;
    }
    report = m->Report();
  }
  internal::g_cuda_api.store(previous);
  ENCORE_CUDA_ASSERT(cudaStreamDestroy(s));

  EXPECT_EQ(report.binding, Binding::kDirect) << report.binding_reason;
  ASSERT_FALSE(Recorder::asked.empty());
  for (size_t i = 0; i < Recorder::asked.size(); ++i) {
    EXPECT_LE(static_cast<int>(Recorder::asked[i].second), driver) << Recorder::asked[i].first;
    EXPECT_EQ(Recorder::answers[i], cudaSuccess) << Recorder::asked[i].first << " at " << Recorder::asked[i].second;
  }
  ASSERT_FALSE(Recorder::functions.empty());
  if (EntryPointVersion(13020, driver, CUDART_VERSION, kEntryPointsByVersion) != 0) {
    EXPECT_EQ(Recorder::failed_param_reads, 0) << "driver " << driver << " counts parameters";
  } else {
    EXPECT_EQ(Recorder::failed_param_reads, 2 * static_cast<int>(Recorder::functions.size()))
        << "driver " << driver << ": one read past the last parameter, asked twice, per kernel function";
  }
}

}  // namespace
}  // namespace encore
