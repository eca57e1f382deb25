// SPDX-License-Identifier: Apache-2.0
// Tells the shims that the calling thread is inside a stream capture, for
// reads on streams other than the captured one. CUDA cannot be asked whether
// a thread is capturing, only whether a stream is; yet while a thread holds a
// thread-local (or global) mode capture, CUDA rejects a sync of any stream
// from it and invalidates that capture (seen on an H200: cudaStreamSynchronize
// of an uncaptured stream returned cudaErrorStreamCaptureUnsupported). Whoever
// begins a capture (the manager) holds one of these until the capture ends,
// so a readback shim refuses instead of breaking the capture.
#ifndef ENCORE_CORE_INTERNAL_SCOPED_THREAD_CAPTURE_H_
#define ENCORE_CORE_INTERNAL_SCOPED_THREAD_CAPTURE_H_

namespace encore {

class ScopedThreadCapture {
 public:
  ScopedThreadCapture();
  ~ScopedThreadCapture();
  ScopedThreadCapture(const ScopedThreadCapture&) = delete;
  ScopedThreadCapture& operator=(const ScopedThreadCapture&) = delete;

  // True while any ScopedThreadCapture is alive on the calling thread.
  static bool Active();
};

}  // namespace encore

#endif  // ENCORE_CORE_INTERNAL_SCOPED_THREAD_CAPTURE_H_
