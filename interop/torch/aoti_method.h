// SPDX-License-Identifier: Apache-2.0
// AotiMethod: an AOTInductor package (.pt2, made by
// torch._inductor.aoti_compile_and_package) as an encore method.
#ifndef ENCORE_INTEROP_TORCH_AOTI_METHOD_H_
#define ENCORE_INTEROP_TORCH_AOTI_METHOD_H_

#include <optional>
#include <string>

#include "encore/core/status.h"
#include "encore/graph/method.h"
#include "encore/policy/method_flags.h"

namespace encore::torch {

struct AotiOptions {
  // The model inside the package (aoti_compile_and_package's default).
  std::string model_name = "model";
  // nullopt: the manager's defaults, overridden by the flags text.
  std::optional<MethodFlags> flags;
};

// Loads the package now, on the current CUDA device, with PyTorch's
// single-threaded runner (AOTIModelPackageLoader with run_single_threaded:
// it records, queries and waits on no event per call, which a capture would
// not allow). The method's body runs the package under a Scope on the call's
// stream, on views of the call's inputs (in the package's input order), and
// copies its results into the call's outputs, which must match them in
// number, shape and dtype. The package's weights, as the runner's constants
// map gives them, are listed as read-only constants (a package that writes
// its own buffers breaks that promise, which verification reports).
//
// Errors: NotFound for a missing file; InvalidArgument for one that is not a
// package, that PyTorch cannot read or load (its message quoted; a package
// without that model among them), that was compiled for another device than
// CUDA, or with AOTInductor's own CUDA-graph mode (encore captures the graph
// itself); FailedPrecondition without a CUDA device. Every message names the
// path.
StatusOr<MethodSpec> AotiMethod(std::string name, std::string package_path, AotiOptions options = {});

}  // namespace encore::torch

#endif  // ENCORE_INTEROP_TORCH_AOTI_METHOD_H_
