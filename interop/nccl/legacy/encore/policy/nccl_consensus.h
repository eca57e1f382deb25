// SPDX-License-Identifier: Apache-2.0
// NcclConsensus's header before it moved to encore/interop/nccl/: kept so
// that code written against encore 0.2 still builds. New code includes
// encore/interop/nccl/nccl_consensus.h. This file lives in interop/nccl/
// (the folder spells the include path) so that policy/ holds no NCCL code.
#ifndef ENCORE_POLICY_NCCL_CONSENSUS_H_
#define ENCORE_POLICY_NCCL_CONSENSUS_H_

#include "encore/interop/nccl/nccl_consensus.h"

#endif  // ENCORE_POLICY_NCCL_CONSENSUS_H_
