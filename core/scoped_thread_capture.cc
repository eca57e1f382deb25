// SPDX-License-Identifier: Apache-2.0
#include "encore/core/internal/scoped_thread_capture.h"

namespace encore {
namespace {
// A depth, not a flag: captures on several streams of one thread may nest.
thread_local int t_depth = 0;
}  // namespace

ScopedThreadCapture::ScopedThreadCapture() { ++t_depth; }
ScopedThreadCapture::~ScopedThreadCapture() { --t_depth; }
bool ScopedThreadCapture::Active() { return t_depth > 0; }

}  // namespace encore
