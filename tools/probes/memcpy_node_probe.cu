// SPDX-License-Identifier: Apache-2.0
// Which cudaGraphExecMemcpyNodeSetParams / cudaGraphExecMemcpyNodeSetParams1D
// / cudaGraphExecMemsetNodeSetParams rewrites the driver accepts for a node
// captured from cudaMemcpyAsync / cudaMemsetAsync, by the kind of memory
// before and after. Standalone: nvcc -o memcpy_node_probe memcpy_node_probe.cu
#include <cuda_runtime.h>

#include <cstdio>

static const char* E(cudaError_t e) { return cudaGetErrorName(e); }

int main() {
  cudaStream_t s;
  cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
  const size_t n = 4096;
  void *d0, *d1, *d2, *h_pinned, *managed;
  cudaMalloc(&d0, n);
  cudaMalloc(&d1, n);
  cudaMalloc(&d2, n);
  cudaMallocHost(&h_pinned, n);
  cudaMallocManaged(&managed, n);
  struct Case {
    const char* name;
    void* cap_src;
    void* cap_dst;
    cudaMemcpyKind cap_kind;
  } cases[] = {
      {"captured d2d", d0, d1, cudaMemcpyDeviceToDevice},
      {"captured d2d kind=default", d0, d1, cudaMemcpyDefault},
      {"captured pinned->dev", h_pinned, d1, cudaMemcpyHostToDevice},
      {"captured pinned->dev kind=default", h_pinned, d1, cudaMemcpyDefault},
      {"captured managed->dev", managed, d1, cudaMemcpyDefault},
  };
  struct To {
    const char* name;
    void* src;
    void* dst;
  } tos[] = {{"dev->dev2", d2, d1}, {"dev->dev(dst d2)", d0, d2}, {"pinned->dev", h_pinned, d1},
             {"managed->dev", managed, d1}};
  for (const Case& c : cases) {
    cudaGraph_t g;
    cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal);
    cudaMemcpyAsync(c.cap_dst, c.cap_src, n, c.cap_kind, s);
    cudaError_t ec = cudaStreamEndCapture(s, &g);
    cudaGraphExec_t x;
    cudaError_t ei = cudaGraphInstantiate(&x, g, 0);
    size_t count = 0;
    cudaGraphGetNodes(g, nullptr, &count);
    cudaGraphNode_t node;
    count = 1;
    cudaGraphGetNodes(g, &node, &count);
    cudaGraphNodeType type;
    cudaGraphNodeGetType(node, &type);
    cudaMemcpy3DParms p{};
    cudaError_t eg = cudaGraphMemcpyNodeGetParams(node, &p);
    printf("%s: capture %s inst %s type %d get %s kind=%d extent=(%zu,%zu,%zu) srcpitch=%zu xsize=%zu ysize=%zu "
           "srcArray=%p\n",
           c.name, E(ec), E(ei), (int)type, E(eg), (int)p.kind, p.extent.width, p.extent.height, p.extent.depth,
           p.srcPtr.pitch, p.srcPtr.xsize, p.srcPtr.ysize, (void*)p.srcArray);
    for (const To& t : tos) {
      cudaMemcpy3DParms q = p;
      q.srcPtr.ptr = t.src;
      q.dstPtr.ptr = t.dst;
      cudaError_t e3 = cudaGraphExecMemcpyNodeSetParams(x, node, &q);
      cudaGetLastError();
      cudaMemcpy3DParms q2 = q;
      q2.kind = cudaMemcpyDefault;
      cudaError_t e3d = cudaGraphExecMemcpyNodeSetParams(x, node, &q2);
      cudaGetLastError();
      cudaError_t e1 = cudaGraphExecMemcpyNodeSetParams1D(x, node, t.dst, t.src, n, cudaMemcpyDefault);
      cudaGetLastError();
      cudaError_t eg3 = cudaGraphMemcpyNodeSetParams(node, &q);
      cudaGetLastError();
      printf("   -> %-18s exec3D(kind kept) %s  exec3D(kind=default) %s  exec1D(default) %s  graph3D %s\n", t.name,
             E(e3), E(e3d), E(e1), E(eg3));
    }
    cudaGraphExecDestroy(x);
    cudaGraphDestroy(g);
  }
  // memset
  {
    cudaGraph_t g;
    cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal);
    cudaMemsetAsync(d0, 0, n, s);
    cudaStreamEndCapture(s, &g);
    cudaGraphExec_t x;
    cudaGraphInstantiate(&x, g, 0);
    cudaGraphNode_t node;
    size_t count = 1;
    cudaGraphGetNodes(g, &node, &count);
    cudaMemsetParams m{};
    cudaError_t eg = cudaGraphMemsetNodeGetParams(node, &m);
    m.dst = d2;
    cudaError_t es = cudaGraphExecMemsetNodeSetParams(x, node, &m);
    cudaGetLastError();
    m.dst = managed;
    cudaError_t em = cudaGraphExecMemsetNodeSetParams(x, node, &m);
    cudaGetLastError();
    printf("memset: get %s elementSize=%u width=%zu height=%zu pitch=%zu -> dev %s -> managed %s\n", E(eg),
           m.elementSize, m.width, m.height, m.pitch, E(es), E(em));
  }
  return 0;
}
