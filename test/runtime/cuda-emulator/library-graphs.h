// Stream capture and CUDA graphs under the emulated library (library-runtime.cpp), for graph.cu: while
// a stream captures, each kernel launch (emulator.h `recorder`), copy and memset enqueued on it becomes
// a node — the operation with the addresses and scalars it was given — instead of running; a graph is
// the nodes in stream order, and launching its executable form runs them again, in order, on the
// calling thread. An executable graph updates in place (cudaGraphExecUpdate) from a recording of the
// same nodes — the same kernel, copy or memset at each position — with other arguments; any other
// recording is refused as a changed topology, and graph.cu instantiates it anew.
//
// What the runtime forbids while a stream captures (relaxed mode: a wait on the capturing stream)
// breaks the capture as it does on a device: the call fails with cudaErrorStreamCaptureUnsupported,
// later work on the stream with cudaErrorStreamCaptureInvalidated, and so does the end of the capture.
// One capture at a time (the library has one).
#pragma once
#include "emulator.h"

namespace kc_emu {
struct GraphNode {
  const void* kind;  // the kernel, or the copy's or memset's tag
  std::function<void()> run;
};

struct Capture {
  bool open = false, broken = false;
  cudaStream_t stream = nullptr;
  std::vector<GraphNode> nodes;
};
inline Capture capture;

inline bool capturing(cudaStream_t s) { return capture.open && capture.stream == s; }
inline bool capture_broken(cudaStream_t s) { return capturing(s) && capture.broken; }
inline cudaError_t break_capture() {
  capture.broken = true;
  capture.nodes.clear();
  return cudaErrorStreamCaptureUnsupported;
}

// Records an operation on `s` while it captures (true), or leaves it to run now (false). A launch into
// a broken capture is dropped and fails as the runtime's does (cudaGetLastError).
inline bool record(cudaStream_t s, const void* kind, const std::function<void()>& run) {
  if (!capturing(s)) return false;
  if (capture.broken) launch_error = cudaErrorStreamCaptureInvalidated;
  else capture.nodes.push_back({kind, run});
  return true;
}
inline const bool recorder_installed = (recorder = &record, true);

// A copy or memset enqueued on `s` (library-runtime.cpp): recorded by its stream's capture, or run now.
inline cudaError_t enqueue(cudaStream_t s, const void* kind, const std::function<void()>& run) {
  if (capture_broken(s)) return cudaErrorStreamCaptureInvalidated;
  if (!record(s, kind, run)) run();
  return cudaSuccess;
}
}  // namespace kc_emu

struct CUgraph_st {
  std::vector<kc_emu::GraphNode> nodes;
};
struct CUgraphExec_st {
  std::vector<kc_emu::GraphNode> nodes;
};

extern "C" cudaError_t cudaStreamBeginCapture(cudaStream_t s, enum cudaStreamCaptureMode) {
  if (kc_emu::capture.open) return cudaErrorIllegalState;
  kc_emu::capture = kc_emu::Capture{true, false, s, {}};
  return cudaSuccess;
}
extern "C" cudaError_t cudaStreamEndCapture(cudaStream_t s, cudaGraph_t* graph) {
  *graph = nullptr;
  if (!kc_emu::capturing(s)) return cudaErrorIllegalState;
  kc_emu::Capture done = std::move(kc_emu::capture);
  kc_emu::capture = kc_emu::Capture{};
  if (done.broken) return cudaErrorStreamCaptureInvalidated;
  *graph = new CUgraph_st{std::move(done.nodes)};
  return cudaSuccess;
}
extern "C" cudaError_t cudaGraphDestroy(cudaGraph_t graph) {
  delete graph;
  return cudaSuccess;
}
extern "C" cudaError_t cudaGraphInstantiate(cudaGraphExec_t* exec, cudaGraph_t graph, unsigned long long) {
  if (!graph) return cudaErrorInvalidValue;
  *exec = new CUgraphExec_st{graph->nodes};
  return cudaSuccess;
}
extern "C" cudaError_t cudaGraphExecUpdate(cudaGraphExec_t exec, cudaGraph_t graph, cudaGraphExecUpdateResultInfo* info) {
  memset(info, 0, sizeof *info);
  if (!exec || !graph) {
    info->result = cudaGraphExecUpdateError;
    return cudaErrorInvalidValue;
  }
  if (exec->nodes.size() != graph->nodes.size()) {
    info->result = cudaGraphExecUpdateErrorTopologyChanged;
    return cudaErrorGraphExecUpdateFailure;
  }
  for (size_t i = 0; i < graph->nodes.size(); i++)
    if (exec->nodes[i].kind != graph->nodes[i].kind) {
      info->result = cudaGraphExecUpdateErrorNodeTypeChanged;
      return cudaErrorGraphExecUpdateFailure;
    }
  exec->nodes = graph->nodes;
  info->result = cudaGraphExecUpdateSuccess;
  return cudaSuccess;
}
extern "C" cudaError_t cudaGraphLaunch(cudaGraphExec_t exec, cudaStream_t s) {
  if (!exec) return cudaErrorInvalidValue;
  if (kc_emu::capture_broken(s)) return cudaErrorStreamCaptureInvalidated;
  for (const kc_emu::GraphNode& n : exec->nodes)
    if (!kc_emu::record(s, n.kind, n.run)) n.run();
  return cudaSuccess;
}
extern "C" cudaError_t cudaGraphExecDestroy(cudaGraphExec_t exec) {
  delete exec;
  return cudaSuccess;
}
