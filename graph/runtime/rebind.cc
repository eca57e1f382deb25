// SPDX-License-Identifier: Apache-2.0
// Method::RebindConstants on one device: every graph's references to the
// constants that moved rewritten in place (no warmup, no capture), else the
// graphs dropped as Release drops them, with the reason logged, so the
// method warms up and captures again on the new storage. Either way no
// launch after it reads the old storage.
#include <string>
#include <utility>
#include <vector>

#include "encore/core/internal/cuda_api.h"
#include "encore/core/cuda_error.h"
#include "encore/graph/runtime/internal/method_instance.h"

namespace encore {
namespace {

// Why a graph must not read a moved constant where it is now, or empty.
std::string HostMemory(const std::vector<ConstantMove>& moves) {
  for (const ConstantMove& m : moves) {
    cudaPointerAttributes attr{};
    if (cudaError_t err = cuda().PointerGetAttributes(&attr, m.to); err != cudaSuccess) {
      ClearCudaError();
      return "CUDA cannot say where constant '" + m.name + "' lies now (" + cudaGetErrorName(err) + ")";
    }
    if (attr.type == cudaMemoryTypeHost || attr.type == cudaMemoryTypeUnregistered) {
      return "constant '" + m.name + "' moved to host memory";
    }
  }
  return {};
}

}  // namespace

Status MethodInstance::RebindConstants(const ConstantRebind& rebind) {
  LogScope log_scope(&s_.info.log, s_.info.name);
  ENCORE_RETURN_IF_ERROR(s_.runner.RejectReentry("RebindConstants"));
  std::unique_lock<std::mutex> lock(mu_);
  // A capture being recorded in the background would keep the old
  // addresses: the worker's jobs go first (a later call queues them again).
  QuiesceBackground(lock);
  held_ = HeldReplay{};  // after the wait, which releases mu_
  // A capture checks the listed constants for host memory again.
  s_.ledger.constants_checked = false;
  // Nothing captured (or nothing that replays): the next capture records
  // the constants where they are now.
  if (rebind.moves.empty() || s_.store.cache.empty() || !s_.ledger.graphs.on()) return OkStatus();
  std::vector<PieceRebind> found;
  int64_t references = 0;
  std::string why = MovesAmbiguity(rebind);
  if (why.empty()) why = HostMemory(rebind.moves);
  if (why.empty()) why = FindConstants(rebind, &found, &references);
  // Every rank rewrites or every rank captures again: a rank that warms up
  // while another replays would cast its capture vote alone.
  if (s_.votes.several_ranks()) why = s_.votes.Vote(std::move(why), "constant rebind");
  if (why.empty()) {
    Status s = RewriteConstants(std::move(found), NewAddresses(rebind.moves));
    if (s.ok()) {
      ++s_.ledger.stats.rebinds;
      s_.info.log.Info("rebound", {{"method", s_.info.name},
                                   {"constants", rebind.moves.size()},
                                   {"references", references},
                                   {"graphs", s_.store.cache.size()}});
      return OkStatus();
    }
    // Some executables may hold new addresses and others old: all go.
    why = "a rewrite failed (" + std::string(s.message()) + ")";
  }
  s_.info.log.Info("rebind_recapture",
                   {{"method", s_.info.name},
                    {"constants", rebind.moves.size()},
                    {"reason", why},
                    {"detail", "the graphs are dropped; the method warms up and captures again"}});
  return ReleaseLocked(lock);
}

std::string MethodInstance::FindConstants(const ConstantRebind& rebind, std::vector<PieceRebind>* found,
                                          int64_t* references) const {
  const std::vector<TensorRef> old = OldStorage(rebind.moves);
  const std::vector<std::string> names = MovedNames(rebind.moves);
  const std::vector<TensorRef> staying = StayingStorage(rebind);
  std::string why;
  for (const auto& entry : s_.store.cache.entries()) {
    for (const PieceGraph& piece : entry->pieces) {
      found->push_back(piece.FindConstants(old, names, staying, &why));
      if (!why.empty()) return why;
      *references += found->back().direct.sites + found->back().staged.sites;
    }
  }
  return why;
}

Status MethodInstance::RewriteConstants(std::vector<PieceRebind> found, const Addresses& to) {
  size_t next = 0;
  for (const auto& entry : s_.store.cache.entries()) {
    for (PieceGraph& piece : entry->pieces) {
      ENCORE_RETURN_IF_ERROR(piece.RebindConstants(std::move(found[next++]), to));
    }
  }
  return OkStatus();
}

}  // namespace encore
