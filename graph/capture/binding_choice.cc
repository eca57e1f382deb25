// SPDX-License-Identifier: Apache-2.0
#include "encore/graph/capture/internal/binding_choice.h"

#include <chrono>
#include <vector>
#include <utility>

#include "encore/policy/internal/binding_policy.h"
#include "encore/graph/internal/lap.h"

namespace encore {
namespace {

// The first output no node names, as a reason. Inputs no node names are
// copied in by the direct form (Note [Inputs no node names],
// graph/binding/direct_form.cc); an output the body writes through device
// memory would need a copy out after it, which the staged graph's tails
// make.
std::string UnreferencedOutput(const ScanResult& scan, Args inputs, Args outputs) {
  for (size_t i = 0; i < outputs.size(); ++i) {
    const size_t t = inputs.size() + i;
    if (t >= scan.referenced.size() || scan.referenced[t] || outputs[i].span_bytes() == 0) continue;
    return "output " + std::to_string(i) +
           " is referenced by no kernel parameter, memcpy or memset (the body may write it through device memory, "
           "or not write it)";
  }
  return {};
}

// The inputs no node names, which the direct form copies in.
std::vector<CopiedInput> UnreferencedInputs(const ScanResult& scan, Args inputs) {
  std::vector<CopiedInput> copied;
  for (size_t t = 0; t < inputs.size() && t < scan.referenced.size(); ++t) {
    if (!scan.referenced[t] && inputs[t].span_bytes() > 0) {
      copied.push_back({static_cast<int>(t), inputs[t].span_bytes()});
    }
  }
  return copied;
}

// Why direct binding is out of the question before any scan, or empty.
std::string Precondition(const CaptureContext& c, const BindingInput& in) {
  if (!c.info.flags.copy_outputs) return "copy_outputs=false: the caller reads the graph's own output buffers";
  if (!c.constants.Listed()) {
    return "the method cannot list its constants, and the capture's probe runs the graph twice, which would apply "
           "its writes to them twice; list them (an empty list is fine) to bind directly";
  }
  if (c.info.flags.checks == CheckMode::kTrap && in.body_checks) {
    return "checks=trap and the body checks: a check in the capture's probe that read encore's poison (through a "
           "reference the scan missed) would trap and end the process's CUDA context";
  }
  return {};
}

}  // namespace

std::optional<BindingInput> ChoosePieceBinding(const CaptureContext& c, PieceGraph& piece, BindingInput in) {
  if (in.padded) {
    piece.binding = PaddedBinding();  // the caller's tensors hold only b rows
    return std::nullopt;
  }
  BindingFacts facts;
  facts.scan_available = true;
  if (c.info.flags.binding != Binding::kStaged) {
    facts.unsafe_reason = Precondition(c, in);
    if (facts.unsafe_reason.empty() && c.info.flags.binding == Binding::kAuto &&
        in.recaptures > kAutoMaxRecapturesForDirect) {
      facts.recaptures = in.recaptures;  // ChooseBinding stages it for the cost
    } else if (facts.unsafe_reason.empty()) {
      facts.unsafe_reason = in.scan.unsafe;
      // A piece of a longer method often leaves an output of the method to
      // another piece. The probe poisons encore's static buffers, and a
      // piece that writes one through device memory is caught by the
      // poison it overwrote (Probe::StaticsWritten), so such a piece is
      // left to the probe, as are inputs it never names (BuildDirect).
      if (facts.unsafe_reason.empty() && c.info.body.segments().size() == 1) {
        facts.unsafe_reason = UnreferencedOutput(in.scan, in.static_inputs, in.static_outputs);
      }
      facts.rewrite_nodes = static_cast<int64_t>(in.scan.kernels.size() + in.scan.endpoints.size());
      // Unknown until replays show it: assumed, and judged again then.
      facts.addresses_recur = true;
    }
  }
  piece.binding = ChooseBinding(c.info.flags.binding, facts);
  if (piece.binding.binding != Binding::kDirect) return std::nullopt;
  return in;
}

double BuildDirect(const CaptureContext& c, PieceGraph& piece, BindingInput in, int64_t index, CaptureCounts& counts) {
  // A piece of a longer method often leaves inputs of the method to other
  // pieces: it copies none (the probe's poison catches one it reads through
  // device memory), as it stages for no output it leaves.
  const std::vector<CopiedInput> copied = c.info.body.segments().size() == 1
                                              ? UnreferencedInputs(in.scan, in.static_inputs)
                                              : std::vector<CopiedInput>{};
  StatusOr<std::unique_ptr<DirectForm>> d =
      DirectForm::Build(*piece.staged.graph(), in.nodes, std::move(in.scan),
                        AddressesOf(in.static_inputs, in.static_outputs),
                        in.nodes.record != nullptr ? c.store.last_launch.event() : nullptr, copied);
  if (!d.ok()) {
    UseStagedBinding(c, piece, "the direct form could not be built (" + std::string(d.status().message()) + ")", index);
    return 0;
  }
  piece.direct = *std::move(d);
  piece.binding.rebind_sites = piece.direct->sites();
  // The direct form's own counts: the scan's sites and nodes and its input copies.
  piece.binding.auto_rejudge =
      c.info.flags.binding == Binding::kAuto && piece.direct->rewrite_nodes() > kAutoMaxRewriteNodes;
  auto t = std::chrono::steady_clock::now();
  Status s = piece.direct->InstantiateFirst();
  const double us = Lap(&t);
  if (!s.ok()) {
    UseStagedBinding(c, piece, "the direct form did not instantiate (" + std::string(s.message()) + ")", index);
    return us;
  }
  ++counts.instantiations;
  return us;
}

BindingChoice BackgroundBinding(Binding asked) {
  return {Binding::kStaged, "binding=" + std::string(BindingName(asked)) +
                                ": staged, because capture=background: the probe that proves a direct form runs "
                                "the graph, and a capture in the background runs nothing"};
}

void UseStagedBinding(const CaptureContext& c, PieceGraph& piece, const std::string& why, int64_t index) {
  piece.UseStagedBinding("binding=" + std::string(BindingName(c.info.flags.binding)) + ": staged, because " + why);
  c.info.log.Info("binding_probe", {{"method", c.info.name}, {"call", index}, {"result", "staged"}, {"reason", why}});
}

Status InstantiateStaged(PieceGraph& piece, CaptureCounts& counts) {
  if (!piece.staged.variants().empty()) return OkStatus();
  ENCORE_RETURN_IF_ERROR(piece.staged.InstantiateFirst());
  ++counts.instantiations;
  return OkStatus();
}

void RejudgeAutoBinding(const CaptureContext& c, PieceGraph& piece, int64_t index, CaptureCounts& counts) {
  if (piece.direct && piece.direct->binds() < kAutoRejudgeAfter) return;
  piece.binding.auto_rejudge = false;
  if (!piece.direct) return;
  BindingFacts facts;
  facts.scan_available = true;
  facts.rewrite_nodes = piece.direct->rewrite_nodes();
  facts.addresses_recur = AddressesRecur(piece.direct->binds(), piece.direct->rewrite_calls());
  BindingChoice choice = ChooseBinding(Binding::kAuto, facts);
  if (choice.binding == Binding::kDirect) return;
  // Without a staged executable (a direct-first capture made none) the
  // direct form stays: it answers every call it took so far.
  if (!InstantiateStaged(piece, counts).ok()) return;
  choice.reason += " (" + std::to_string(piece.direct->rewrite_calls()) + " of its first " +
              std::to_string(piece.direct->binds()) + " replays had to rewrite an executable)";
  piece.UseStagedBinding(std::move(choice.reason));
  c.info.log.Info("binding",
                  {{"method", c.info.name}, {"call", index}, {"binding", "staged"}, {"reason", piece.binding.reason}});
}

}  // namespace encore
