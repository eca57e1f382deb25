// SPDX-License-Identifier: Apache-2.0
// DeviceBuffer: a typed device allocation for GPU tests, with upload and
// download helpers that assert on failure.
#ifndef ENCORE_TESTS_DEVICE_BUFFER_H_
#define ENCORE_TESTS_DEVICE_BUFFER_H_

#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <vector>

namespace encore::testing {

// `DeviceBuffer buf(bytes)` (T = std::byte) for raw bytes, or
// `DeviceBuffer<float> x(n)`. 16 spare bytes let tests read past the end
// without faulting. Check ok() before use.
template <typename T = std::byte>
class DeviceBuffer {
 public:
  explicit DeviceBuffer(size_t n) : n_(n) {
    if (cudaMalloc(reinterpret_cast<void**>(&p_), n * sizeof(T) + 16) != cudaSuccess) p_ = nullptr;
  }
  ~DeviceBuffer() {
    if (p_) cudaFree(p_);
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  bool ok() const { return p_ != nullptr; }
  T* get() const { return p_; }
  template <class U>
  U* as() const {
    return reinterpret_cast<U*>(p_);
  }
  size_t size() const { return n_; }
  void Upload(const std::vector<T>& v) {
    ASSERT_EQ(cudaMemcpy(p_, v.data(), v.size() * sizeof(T), cudaMemcpyHostToDevice), cudaSuccess);
    // A copy from pageable memory may return before the data lands, and the
    // legacy stream does not order work on the tests' non-blocking streams.
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  }
  void Fill(T v) { Upload(std::vector<T>(n_, v)); }
  // Ordered on `stream` alone, with no device-wide sync: for tests where
  // another thread may be capturing (CUDA refuses a cudaDeviceSynchronize
  // then, and it breaks that capture).
  void UploadOn(const std::vector<T>& v, cudaStream_t stream) {
    ASSERT_EQ(cudaMemcpyAsync(p_, v.data(), v.size() * sizeof(T), cudaMemcpyHostToDevice, stream), cudaSuccess);
    ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
  }
  void FillOn(T v, cudaStream_t stream) { UploadOn(std::vector<T>(n_, v), stream); }
  std::vector<T> DownloadOn(cudaStream_t stream) const {
    std::vector<T> v(n_);
    EXPECT_EQ(cudaMemcpyAsync(v.data(), p_, n_ * sizeof(T), cudaMemcpyDeviceToHost, stream), cudaSuccess);
    EXPECT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
    return v;
  }
  std::vector<T> Download() const {
    std::vector<T> v(n_);
    EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    EXPECT_EQ(cudaMemcpy(v.data(), p_, n_ * sizeof(T), cudaMemcpyDeviceToHost), cudaSuccess);
    return v;
  }

 private:
  T* p_ = nullptr;
  size_t n_;
};

}  // namespace encore::testing

#endif  // ENCORE_TESTS_DEVICE_BUFFER_H_
