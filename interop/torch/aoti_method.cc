// SPDX-License-Identifier: Apache-2.0
#include "encore/interop/torch/aoti_method.h"

#include <ATen/core/Tensor.h>
#include <torch/csrc/inductor/aoti_package/model_package_loader.h>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cctype>
#include <exception>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "encore/interop/torch/scope.h"
#include "encore/interop/torch/tensor_ref.h"
#include "encore/interop/torch/internal/torch_status.h"  // private to interop/torch/

namespace encore::torch {
namespace {

using Loader = ::torch::inductor::AOTIModelPackageLoader;
using Metadata = std::unordered_map<std::string, std::string>;

// What the method's body holds: the loaded package and its weights.
struct Package {
  std::string what;  // "AOTInductor package '/x.pt2'"
  int device = 0;
  std::unique_ptr<Loader> loader;
  std::unordered_map<std::string, at::Tensor> constants;
};

Status CheckFile(const std::string& what, const std::string& path) {
  std::error_code ec;
  const std::filesystem::file_status st = std::filesystem::status(path, ec);
  if (ec || !std::filesystem::exists(st)) return NotFoundError(what + " does not exist");
  if (!std::filesystem::is_regular_file(st)) return InvalidArgumentError(what + " is not a regular file");
  std::ifstream in(path, std::ios::binary);
  char magic[4] = {};
  if (!in.read(magic, sizeof(magic))) return InvalidArgumentError(what + " cannot be read or is empty");
  // A .pt2 package is a zip archive.
  if (magic[0] != 'P' || magic[1] != 'K' || magic[2] != 3 || magic[3] != 4) {
    return InvalidArgumentError(what + " is not a .pt2 package (not a zip archive)");
  }
  return OkStatus();
}

std::string Lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}

// PyTorch 2.11's AOTInductor runtime has no CUDA-graph mode of its own (its
// aoti_runtime headers hold no graph code); a package whose metadata says
// it captures graphs itself would capture inside encore's capture, which
// CUDA refuses, so it is refused here with the key that says so.
Status CheckMetadata(const std::string& what, const Metadata& metadata) {
  auto device = metadata.find("AOTI_DEVICE_KEY");
  if (device != metadata.end() && device->second != "cuda") {
    return InvalidArgumentError(what + " is compiled for " + device->second + ", not CUDA");
  }
  for (const auto& [key, value] : metadata) {
    const std::string k = Lower(key);
    const std::string v = Lower(value);
    const bool graphs = k.find("cudagraph") != std::string::npos || k.find("cuda_graph") != std::string::npos;
    if (graphs && (v == "1" || v == "true" || v == "on")) {
      return InvalidArgumentError(what + " is compiled with AOTInductor's own CUDA-graph mode (" + key + "=" +
                                  value + "); encore captures the graph itself: compile it without that mode");
    }
  }
  return OkStatus();
}

// Called inside a catch block: the exception in flight, as a Status.
Status LoadError(const std::string& what, const std::string& model_name, const char* doing) {
  Status s = internal::StatusFromException(std::current_exception(), false, nullptr, what + " (" + doing + ")");
  return InvalidArgumentError(std::string(s.message()) + " (model '" + model_name + "')");
}

StatusOr<std::shared_ptr<Package>> Load(const std::string& what, const std::string& path,
                                        const std::string& model_name) {
  auto pkg = std::make_shared<Package>();
  pkg->what = what;
  // The metadata first: a package that is wrong says so on a machine
  // without a GPU too.
  try {
    ENCORE_RETURN_IF_ERROR(CheckMetadata(what, Loader::load_metadata_from_package(path, model_name)));
  } catch (...) {
    return LoadError(what, model_name, "reading its metadata");
  }
  if (cudaError_t err = cudaGetDevice(&pkg->device); err != cudaSuccess) {
    (void)cudaGetLastError();
    return FailedPreconditionError(what + ": no CUDA device to load it on (" + cudaGetErrorName(err) + ")");
  }
  try {
    pkg->loader = std::make_unique<Loader>(path, model_name, /*run_single_threaded=*/true, /*num_runners=*/1,
                                           static_cast<c10::DeviceIndex>(pkg->device));
    pkg->constants = pkg->loader->get_runner()->extract_constants_map(/*use_inactive=*/false);
  } catch (...) {
    return LoadError(what, model_name, "loading it");
  }
  return pkg;
}

std::vector<Constant> ReadOnlyConstants(const Package& pkg) {
  std::vector<Constant> out;
  for (const auto& [name, t] : pkg.constants) {
    if (!t.defined() || t.numel() == 0) continue;
    out.push_back(Constant{name, t.data_ptr(), t.nbytes(), /*read_only=*/true});
  }
  std::sort(out.begin(), out.end(), [](const Constant& a, const Constant& b) { return a.name < b.name; });
  return out;
}

// One call: the package on views of the inputs, its results copied into the
// outputs on the call's stream (PyTorch's current stream under the Scope).
Status RunPackage(Package& pkg, Call& call, int device) {
  if (device != pkg.device) {
    return FailedPreconditionError(pkg.what + " was loaded on device " + std::to_string(pkg.device) +
                                   " and is called on device " + std::to_string(device));
  }
  std::vector<at::Tensor> inputs;
  inputs.reserve(call.num_inputs());
  for (size_t i = 0; i < call.num_inputs(); ++i) {
    inputs.push_back(ToTensor(call.input(i), device));
    if (!inputs.back().defined()) return InvalidArgumentError(pkg.what + ": input " + std::to_string(i) + " is invalid");
  }
  std::vector<at::Tensor> results = pkg.loader->run(inputs, call.stream());
  if (results.size() != call.num_outputs()) {
    return InvalidArgumentError(pkg.what + " returns " + std::to_string(results.size()) + " outputs; the call has " +
                                std::to_string(call.num_outputs()));
  }
  for (size_t i = 0; i < results.size(); ++i) {
    at::Tensor out = ToTensor(call.output(i), device);
    if (!out.defined()) return InvalidArgumentError(pkg.what + ": output " + std::to_string(i) + " is invalid");
    if (out.sizes() != results[i].sizes() || out.scalar_type() != results[i].scalar_type()) {
      return InvalidArgumentError(pkg.what + ": output " + std::to_string(i) + " is " + c10::toString(out.scalar_type()) +
                                  " " + c10::str(out.sizes()) + ", the package returns " +
                                  c10::toString(results[i].scalar_type()) + " " + c10::str(results[i].sizes()));
    }
    out.copy_(results[i], /*non_blocking=*/true);
  }
  return OkStatus();
}

}  // namespace

StatusOr<MethodSpec> AotiMethod(std::string name, std::string package_path, AotiOptions options) {
  const std::string what = "AOTInductor package '" + package_path + "'";
  ENCORE_RETURN_IF_ERROR(CheckFile(what, package_path));
  ENCORE_ASSIGN_OR_RETURN(std::shared_ptr<Package> pkg, Load(what, package_path, options.model_name));
  MethodSpec spec;
  spec.name = std::move(name);
  spec.flags = options.flags;
  spec.constants = ReadOnlyConstants(*pkg);
  spec.fn = [pkg](Call& call) -> Status {
    ENCORE_ASSIGN_OR_RETURN(Scope scope, Scope::Enter(call));
    return scope.Run([&]() -> Status { return RunPackage(*pkg, call, scope.device()); });
  };
  return spec;
}

}  // namespace encore::torch
