// SPDX-License-Identifier: Apache-2.0
// MethodInfo: what a method instance is, fixed for its life: its name, body,
// flags, logger, device and where its graphs are dumped. Every step reads
// it; none changes it.
#ifndef ENCORE_GRAPH_BODY_INTERNAL_METHOD_INFO_H_
#define ENCORE_GRAPH_BODY_INTERNAL_METHOD_INFO_H_

#include <cstddef>
#include <string>
#include <utility>

#include "encore/core/internal/log.h"
#include "encore/core/internal/nvtx.h"
#include "encore/graph/body/internal/method_body.h"
#include "encore/policy/method_flags.h"

namespace encore {

struct MethodInfo {
  MethodInfo(std::string name_, MethodBody body_, const MethodFlags& flags_, EventLog log_, int device_,
             std::string graph_dump_dir_)
      : name(std::move(name_)),
        body(std::move(body_)),
        flags(flags_),
        log(std::move(log_)),
        device(device_),
        graph_dump_dir(std::move(graph_dump_dir_)) {}

  // Whether piece number `piece`'s graph ends in the completion record
  // node: the piece of the method's last segment, after which a call queues
  // nothing of the method's own. The other pieces, and a method ending in an
  // eager stage, leave it to LastLaunch::EndCall (one host record per
  // call; a node in the last piece spares that API call).
  bool PieceRecords(size_t piece) const {
    const Segment& last = body.segments().back();
    return last.piece && last.index == piece;
  }

  const std::string name;
  const MethodBody body;
  const MethodFlags flags;
  const EventLog log;
  const int device;
  const std::string graph_dump_dir;  // empty: no graph dumps
  const NvtxMethodRanges nvtx{name};
};

}  // namespace encore

#endif  // ENCORE_GRAPH_BODY_INTERNAL_METHOD_INFO_H_
