// SPDX-License-Identifier: Apache-2.0
// A direct form's memcpy and memset nodes bound to the caller's buffers, on
// a CPU machine: the CUDA seam's table is swapped for a fake graph API that
// keeps graphs, nodes and executables on the host and holds an executable's
// memcpy and memset nodes to CUDA's rule for rewriting them in place
// (cudaGraphExecMemcpyNodeSetParams, cudaGraphExecMemsetNodeSetParams) as
// CUDA documents it: the new memory must be owned as the memory the
// executable was instantiated with, else cudaErrorInvalidValue. The graph
// arena's slabs are mapped memory (SlabMemory); callers' tensors and the
// probe's snapshots come from cudaMalloc. What the tests pin is encore's
// side of Note [Memcpy nodes keep their memory's owner] (direct_form.cc):
// the first executable is instantiated again, never rewritten; whether the
// driver's refusal is exactly this rule the note leaves open.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <memory>
#include <vector>

#include "encore/core/internal/cuda_api.h"
#include "encore/graph/binding/internal/direct_form.h"

namespace encore {
namespace {

constexpr uintptr_t kArena = 0x7f0000000000;  // the arena's mapped slab
constexpr uintptr_t kArenaEnd = kArena + (uintptr_t{2} << 20);
constexpr size_t kBytes = 256;

// Who owns the memory at `p`, as the driver would say: mapped (0) or the
// primary context's cudaMalloc (1).
int Owner(const void* p) {
  const auto a = reinterpret_cast<uintptr_t>(p);
  return a >= kArena && a < kArenaEnd ? 0 : 1;
}

struct FakeNode {
  bool memset = false;
  cudaMemcpy3DParms copy{};
  cudaMemsetParams set{};
  const FakeNode* origin = nullptr;  // the node it was cloned from
};

struct FakeGraph {
  std::vector<std::unique_ptr<FakeNode>> nodes;
};

// An executable's node: its parameters now and the owners of its memory
// when it was instantiated.
struct ExecNode {
  FakeNode params;
  int src_owner = -1, dst_owner = -1;
};

struct FakeExec {
  std::map<const FakeNode*, ExecNode> nodes;
};

struct FakeGraphApi {
  std::vector<std::unique_ptr<FakeGraph>> graphs;
  std::vector<std::unique_ptr<FakeExec>> execs;
  int exec_memcpy_sets = 0, exec_memset_sets = 0, refused = 0, instantiations = 0, live_execs = 0;
};
FakeGraphApi* g = nullptr;

FakeGraph* G(cudaGraph_t h) { return reinterpret_cast<FakeGraph*>(h); }
FakeNode* N(cudaGraphNode_t h) { return reinterpret_cast<FakeNode*>(h); }
FakeExec* E(cudaGraphExec_t h) { return reinterpret_cast<FakeExec*>(h); }

cudaError_t GetLastError() { return cudaSuccess; }
cudaError_t GraphDestroy(cudaGraph_t) { return cudaSuccess; }  // kept until the fake goes
cudaError_t GraphExecDestroy(cudaGraphExec_t) {
  --g->live_execs;
  return cudaSuccess;
}
cudaError_t GraphGetNodes(cudaGraph_t h, cudaGraphNode_t* nodes, size_t* n) {
  const FakeGraph* graph = G(h);
  if (nodes != nullptr) {
    for (size_t i = 0; i < *n && i < graph->nodes.size(); ++i) nodes[i] = reinterpret_cast<cudaGraphNode_t>(graph->nodes[i].get());
  }
  *n = graph->nodes.size();
  return cudaSuccess;
}
cudaError_t GraphClone(cudaGraph_t* clone, cudaGraph_t h) {
  auto c = std::make_unique<FakeGraph>();
  for (const auto& n : G(h)->nodes) {
    c->nodes.push_back(std::make_unique<FakeNode>(*n));
    c->nodes.back()->origin = n.get();
  }
  *clone = reinterpret_cast<cudaGraph_t>(c.get());
  g->graphs.push_back(std::move(c));
  return cudaSuccess;
}
cudaError_t GraphNodeFindInClone(cudaGraphNode_t* out, cudaGraphNode_t original, cudaGraph_t clone) {
  for (const auto& n : G(clone)->nodes) {
    if (n->origin == N(original)) {
      *out = reinterpret_cast<cudaGraphNode_t>(n.get());
      return cudaSuccess;
    }
  }
  return cudaErrorInvalidValue;
}
cudaError_t GraphInstantiate(cudaGraphExec_t* out, cudaGraph_t h, unsigned long long) {
  auto e = std::make_unique<FakeExec>();
  for (const auto& n : G(h)->nodes) {
    ExecNode x;
    x.params = *n;
    x.src_owner = n->memset ? -1 : Owner(n->copy.srcPtr.ptr);
    x.dst_owner = Owner(n->memset ? n->set.dst : n->copy.dstPtr.ptr);
    e->nodes[n.get()] = x;
  }
  *out = reinterpret_cast<cudaGraphExec_t>(e.get());
  g->execs.push_back(std::move(e));
  ++g->instantiations;
  ++g->live_execs;
  return cudaSuccess;
}
cudaError_t GraphMemcpyNodeSetParams(cudaGraphNode_t n, const cudaMemcpy3DParms* p) {
  N(n)->copy = *p;  // a graph's node takes any memory
  return cudaSuccess;
}
cudaError_t GraphMemsetNodeSetParams(cudaGraphNode_t n, const cudaMemsetParams* p) {
  N(n)->set = *p;
  return cudaSuccess;
}
cudaError_t GraphExecMemcpyNodeSetParams(cudaGraphExec_t e, cudaGraphNode_t n, const cudaMemcpy3DParms* p) {
  ++g->exec_memcpy_sets;
  ExecNode& x = E(e)->nodes.at(N(n));
  if (Owner(p->srcPtr.ptr) != x.src_owner || Owner(p->dstPtr.ptr) != x.dst_owner) {
    ++g->refused;
    return cudaErrorInvalidValue;  // "the memory operands' mappings changed"
  }
  x.params.copy = *p;
  return cudaSuccess;
}
cudaError_t GraphExecMemsetNodeSetParams(cudaGraphExec_t e, cudaGraphNode_t n, const cudaMemsetParams* p) {
  ++g->exec_memset_sets;
  ExecNode& x = E(e)->nodes.at(N(n));
  if (Owner(p->dst) != x.dst_owner) {
    ++g->refused;
    return cudaErrorInvalidValue;
  }
  x.params.set = *p;
  return cudaSuccess;
}

class MemcpyBindingTest : public ::testing::Test {
 protected:
  void SetUp() override {
    g = &api_;
    table_ = RealCudaApi();
    table_.GetLastError = &GetLastError;
    table_.GraphDestroy = &GraphDestroy;
    table_.GraphExecDestroy = &GraphExecDestroy;
    table_.GraphGetNodes = &GraphGetNodes;
    table_.GraphClone = &GraphClone;
    table_.GraphNodeFindInClone = &GraphNodeFindInClone;
    table_.GraphInstantiate = &GraphInstantiate;
    table_.GraphMemcpyNodeSetParams = &GraphMemcpyNodeSetParams;
    table_.GraphMemsetNodeSetParams = &GraphMemsetNodeSetParams;
    table_.GraphExecMemcpyNodeSetParams = &GraphExecMemcpyNodeSetParams;
    table_.GraphExecMemsetNodeSetParams = &GraphExecMemsetNodeSetParams;
    previous_ = internal::g_cuda_api.exchange(&table_);
  }
  void TearDown() override {
    direct_.reset();
    staged_ = Graph();
    internal::g_cuda_api.store(previous_);
    g = nullptr;
  }

  static void* Arena(size_t offset) { return reinterpret_cast<void*>(kArena + offset); }

  // The captured graph: out = in (memcpy), then out[32..) = 0 (memset), on
  // the static buffers in the arena; the scan's two sites, and the form.
  void Capture() {
    auto graph = std::make_unique<FakeGraph>();
    auto copy = std::make_unique<FakeNode>();
    copy->copy.srcPtr = cudaPitchedPtr{Arena(0), kBytes, kBytes, 1};
    copy->copy.dstPtr = cudaPitchedPtr{Arena(512), kBytes, kBytes, 1};
    copy->copy.extent = cudaExtent{kBytes, 1, 1};
    copy->copy.kind = cudaMemcpyDeviceToDevice;
    auto set = std::make_unique<FakeNode>();
    set->memset = true;
    set->set.dst = static_cast<char*>(Arena(512)) + 32;
    set->set.elementSize = 1;
    set->set.width = 16;
    set->set.height = 1;
    ScanResult scan;
    EndpointSite c;
    c.node = reinterpret_cast<cudaGraphNode_t>(copy.get());
    c.copy = copy->copy;
    c.tensor = {0, 1};
    EndpointSite s;
    s.node = reinterpret_cast<cudaGraphNode_t>(set.get());
    s.is_memset = true;
    s.set = set->set;
    s.tensor = {-1, 1};
    s.delta = {0, 32};
    scan.endpoints = {c, s};
    scan.referenced = {true, true};
    scan.sites = 3;
    graph->nodes.push_back(std::move(copy));
    graph->nodes.push_back(std::move(set));
    staged_ = Graph(reinterpret_cast<cudaGraph_t>(graph.get()));
    api_.graphs.push_back(std::move(graph));
    StatusOr<std::unique_ptr<DirectForm>> d =
        DirectForm::Build(staged_, StagedNodes{}, std::move(scan), {Arena(0), Arena(512)}, nullptr, {});
    ASSERT_TRUE(d.ok()) << d.status();
    direct_ = *std::move(d);
    ASSERT_TRUE(direct_->InstantiateFirst().ok());
  }

  // Binds the direct form to cudaMalloc'd buffers at `in` and `out`.
  StatusOr<const GraphExec*> Bind(uintptr_t in, uintptr_t out) {
    TensorRef i{reinterpret_cast<void*>(in), DType::kUInt8, {int64_t{kBytes}}, {}};
    TensorRef o{reinterpret_cast<void*>(out), DType::kUInt8, {int64_t{kBytes}}, {}};
    return direct_->Bind({&i, 1}, {&o, 1}, nullptr);
  }

  // What the executable's nodes point at now.
  static std::vector<const void*> Points(const GraphExec* exec) {
    std::vector<const void*> p;
    for (const auto& [node, x] : E(exec->get())->nodes) {
      if (x.params.memset) {
        p.push_back(x.params.set.dst);
      } else {
        p.push_back(x.params.copy.srcPtr.ptr);
        p.push_back(x.params.copy.dstPtr.ptr);
      }
    }
    return p;
  }

  FakeGraphApi api_;
  CudaApi table_{};
  const CudaApi* previous_ = nullptr;
  Graph staged_;
  std::unique_ptr<DirectForm> direct_;
};

TEST_F(MemcpyBindingTest, TheExecutableOnTheArenasMemoryIsInstantiatedAgainNotRewritten) {
  Capture();
  ASSERT_EQ(api_.instantiations, 1);
  // The probe's snapshots (or the first call's tensors), from cudaMalloc.
  StatusOr<const GraphExec*> bound = Bind(0x10000, 0x20000);
  ASSERT_TRUE(bound.ok()) << bound.status();
  ASSERT_NE(*bound, nullptr);
  EXPECT_EQ(api_.refused, 0);
  EXPECT_EQ(api_.exec_memcpy_sets + api_.exec_memset_sets, 0) << "no endpoint rewritten off the arena's memory";
  EXPECT_EQ(api_.instantiations, 2);
  EXPECT_EQ(api_.live_execs, 1) << "the new executable replaced the first";
  EXPECT_EQ(direct_->TakeReinstantiations(), 1);
  EXPECT_EQ(direct_->TakeReinstantiations(), 0);
  std::vector<const void*> want = {reinterpret_cast<void*>(0x10000), reinterpret_cast<void*>(0x20000),
                                   reinterpret_cast<void*>(0x20000 + 32)};
  std::vector<const void*> got = Points(*bound);
  std::sort(want.begin(), want.end());
  std::sort(got.begin(), got.end());
  EXPECT_EQ(got, want);
}

TEST_F(MemcpyBindingTest, LaterBuffersAreRewrittenInPlaceBetweenMemoryOfOneOwner) {
  Capture();
  ASSERT_TRUE(Bind(0x10000, 0x20000).ok());
  // A set seen once: the executable made for the first set is rewritten,
  // cudaMalloc to cudaMalloc, as CUDA allows.
  StatusOr<const GraphExec*> bound = Bind(0x30000, 0x40000);
  ASSERT_TRUE(bound.ok()) << bound.status();
  ASSERT_NE(*bound, nullptr);
  EXPECT_EQ(api_.refused, 0);
  EXPECT_EQ(api_.exec_memcpy_sets, 1);
  EXPECT_EQ(api_.exec_memset_sets, 1);
  EXPECT_EQ(api_.instantiations, 2);
  EXPECT_EQ(direct_->refused_rewrites(), 0);
  std::vector<const void*> want = {reinterpret_cast<void*>(0x30000), reinterpret_cast<void*>(0x40000),
                                   reinterpret_cast<void*>(0x40000 + 32)};
  std::vector<const void*> got = Points(*bound);
  std::sort(want.begin(), want.end());
  std::sort(got.begin(), got.end());
  EXPECT_EQ(got, want);
}

TEST_F(MemcpyBindingTest, MemoryOfAnotherOwnerIsStillRefusedAndRemembered) {
  Capture();
  ASSERT_TRUE(Bind(0x10000, 0x20000).ok());
  // An output in other mapped memory (as the arena's): CUDA refuses the
  // rewrite of an executable made on cudaMalloc'd memory, and the set is
  // left to the staged graph from then on.
  StatusOr<const GraphExec*> refused = Bind(0x30000, kArena + 4096);
  EXPECT_FALSE(refused.ok());
  EXPECT_EQ(api_.refused, 1);
  EXPECT_EQ(direct_->refused_rewrites(), 1);
  StatusOr<const GraphExec*> again = Bind(0x30000, kArena + 4096);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(*again, nullptr) << "staging answers it";
  EXPECT_EQ(api_.refused, 1) << "CUDA is not asked again";
}

}  // namespace
}  // namespace encore
