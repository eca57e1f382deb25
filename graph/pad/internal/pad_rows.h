// SPDX-License-Identifier: Apache-2.0
// PadRows: the host side of the ring that hands each launch of a padded
// method's graphs its batch b without a CUDA call (graph/binding/internal/staging.h). Before
// a launch the method writes b into the slot of that launch; the graph's
// heads read it, and its last tail counts the launch, so the host knows how
// far the device got. A slot is rewritten only after the launch that read
// it ran: when the host is kSlots launches ahead, it waits for the last
// launch first (never in practice: that many launches are not queued).
// Internal to graph/; the owner serializes every call (the method's mutex).
#ifndef ENCORE_GRAPH_PAD_INTERNAL_PAD_ROWS_H_
#define ENCORE_GRAPH_PAD_INTERNAL_PAD_ROWS_H_

#include <cstdint>
#include <memory>
#include <string>

#include "encore/core/internal/mapped_host.h"
#include "encore/core/status.h"
#include "encore/core/tensor.h"
#include "encore/graph/binding/internal/staging.h"

namespace encore {

class PadRows {
 public:
  PadRows() = default;
  PadRows(const PadRows&) = delete;
  PadRows& operator=(const PadRows&) = delete;

  // Makes the mapped ring, once; before a capture (not allowed inside one).
  Status Prepare(const std::string& method);
  // The ring as the device sees it; null before Prepare.
  PadRowsShared* device() const { return ring_.device(); }
  // Whether the next launch's slot may still be unread (kSlots launches
  // queued): the owner waits for its last launch before Set.
  bool behind() const;
  // Writes the next launch's batch into its slot.
  void Set(int64_t rows);
  // A padded graph was launched (cudaGraphLaunch returned success).
  void Launched() { ++launches_; }

 private:
  MappedHost<PadRowsShared> ring_;
  uint64_t launches_ = 0;
};

}  // namespace encore

#endif  // ENCORE_GRAPH_PAD_INTERNAL_PAD_ROWS_H_
