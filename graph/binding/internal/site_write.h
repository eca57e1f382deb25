// SPDX-License-Identifier: Apache-2.0
// Writing what a reference scan found: a kernel node's parameter buffer or a
// memcpy or memset node's endpoints with every site pointed at new
// addresses, into a graph's node (for executables made from it later) or
// into an executable (for its later launches: CUDA applies a rewrite to
// launches made after it, never to one in flight). The direct form binds
// the caller's tensors this way on every call that moved them; a rebind of
// the constants (Method::RebindConstants) points the graphs' references to
// the constants' old storage at the new, once.
#ifndef ENCORE_GRAPH_BINDING_INTERNAL_SITE_WRITE_H_
#define ENCORE_GRAPH_BINDING_INTERNAL_SITE_WRITE_H_

#include <cuda_runtime_api.h>

#include <span>

#include "encore/core/status.h"
#include "encore/graph/binding/internal/address_set.h"
#include "encore/graph/binding/internal/reference_scan.h"

namespace encore {

// Sets each site's word to to[ref.tensor] + ref.delta in `k.args` and writes
// the whole parameter buffer into the node of `exec` (null: of the graph).
Status WriteKernelSite(cudaGraphExec_t exec, KernelSite& k, const Addresses& to);
// Sets each endpoint that names a tensor to to[tensor] + delta and writes
// the node's parameters likewise.
Status WriteEndpointSite(cudaGraphExec_t exec, EndpointSite& e, const Addresses& to);
// Either, by the site's type.
inline Status WriteSite(cudaGraphExec_t exec, KernelSite& k, const Addresses& to) {
  return WriteKernelSite(exec, k, to);
}
inline Status WriteSite(cudaGraphExec_t exec, EndpointSite& e, const Addresses& to) {
  return WriteEndpointSite(exec, e, to);
}

// Writes every site of `found` (to[i]: where range i of its scan is now)
// into the graph's nodes and into each of `execs`, which were instantiated
// from that graph.
Status WriteFoundSites(ScanResult& found, const Addresses& to, std::span<const cudaGraphExec_t> execs);

}  // namespace encore

#endif  // ENCORE_GRAPH_BINDING_INTERNAL_SITE_WRITE_H_
