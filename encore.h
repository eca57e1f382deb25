// SPDX-License-Identifier: Apache-2.0
// encore: CUDA graph capture and replay for the methods of an application.
// This umbrella header brings in the whole public surface.
#ifndef ENCORE_ENCORE_H_
#define ENCORE_ENCORE_H_

#include "encore/core/cuda_error.h"
#include "encore/core/status.h"
#include "encore/core/tensor.h"
#include "encore/graph/call.h"
#include "encore/graph/manager.h"
#include "encore/graph/method.h"
#include "encore/graph/method_report.h"
#include "encore/policy/method_flags.h"
#include "encore/policy/method_flags_text.h"
#include "encore/shims/masked_copy.h"
#include "encore/shims/philox.h"
#include "encore/shims/read_scalar.h"

#endif  // ENCORE_ENCORE_H_
