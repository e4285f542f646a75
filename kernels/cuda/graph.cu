// CUDA graphs of the context's stream: the ops a caller enqueues between kc_capture_begin and
// kc_capture_end are recorded (stream capture), not run, and the graph made of them is launched as
// one unit afterwards, as often as the caller likes — a DiT forward's ~1500 kernels as one launch.
//
// A graph keeps the device addresses and scalar arguments it was recorded with. So:
// - everything allocated while recording comes from the graph's pool (alloc.cuh), and stays the
//   graph's: the intermediates, the kernels' scratch, the output; blocks freed while recording are
//   reused within the recording (the graph is one chain in stream order, like the stream);
// - inputs are read where they were when recorded: the caller copies new inputs into those tensors
//   before a launch (src/runtime/backends/cuda-graph.ts, src/models/dit-graph.ts);
// - a recording of the same op sequence with other addresses or scalars (a causal DiT's longer cache
//   while its window fills, a new conditioning) updates an existing executable graph in place
//   (cudaGraphExecUpdate), which costs far less than instantiating a new one; when the topology
//   changed it is instantiated anew;
// - a value that must change between launches without a recording is read from device memory by the
//   kernels (a causal DiT's RoPE frame offset: RopeOptions.frameOffsetAt, rope.cuh).
// Recording uses cudaStreamCaptureModeRelaxed (one thread drives the context); a synchronous call on
// the stream while recording (an upload, a download) invalidates the capture, and kc_capture_end then
// reports it. The TypeScript side refuses those calls before they reach the library.
#include "alloc.cuh"

KC_API int kc_capture_begin(KcContext* ctx, KcPool* pool) {
  KcAllocator* a = ctx->alloc;
  if (a->capturing) return kc_fail(ctx, KC_E_ARG, "kc_capture_begin", "a capture is already open");
  if (!pool) return kc_fail(ctx, KC_E_ARG, "kc_capture_begin", "a capture needs a pool");
  KC_TRY(kc_check(ctx, cudaStreamBeginCapture(ctx->stream, cudaStreamCaptureModeRelaxed), "cudaStreamBeginCapture"));
  a->capturing = true;
  a->active = pool;
  return 0;
}

// Ends the capture. *exec: an executable graph to update in place, or null; on return the executable
// graph of this recording (the same one, updated, or a new one: the old one is then destroyed).
// *how: 1 updated in place, 2 instantiated.
KC_API int kc_capture_end(KcContext* ctx, cudaGraphExec_t* exec, int32_t* how) {
  KcAllocator* a = ctx->alloc;
  if (!a->capturing) return kc_fail(ctx, KC_E_ARG, "kc_capture_end", "no capture is open");
  a->capturing = false;
  a->active = nullptr;
  cudaGraph_t graph = nullptr;
  KC_TRY(kc_check(ctx, cudaStreamEndCapture(ctx->stream, &graph), "cudaStreamEndCapture"));
  if (*exec) {
    cudaGraphExecUpdateResultInfo info;
    if (cudaGraphExecUpdate(*exec, graph, &info) == cudaSuccess) {
      cudaGraphDestroy(graph);
      *how = 1;
      return 0;
    }
    cudaGetLastError();  // a topology change is not an error: instantiate instead
    cudaGraphExecDestroy(*exec);
    *exec = nullptr;
  }
  cudaError_t e = cudaGraphInstantiate(exec, graph, 0);
  cudaGraphDestroy(graph);
  if (e != cudaSuccess) {
    *exec = nullptr;
    return kc_check(ctx, e, "cudaGraphInstantiate");
  }
  *how = 2;
  return 0;
}

// Ends an open capture and drops what it recorded (the caller's op failed midway).
KC_API int kc_capture_abort(KcContext* ctx) {
  KcAllocator* a = ctx->alloc;
  if (!a->capturing) return 0;
  a->capturing = false;
  a->active = nullptr;
  cudaGraph_t graph = nullptr;
  cudaStreamEndCapture(ctx->stream, &graph);
  if (graph) cudaGraphDestroy(graph);
  cudaGetLastError();
  return 0;
}

KC_API int kc_graph_launch(KcContext* ctx, cudaGraphExec_t exec) {
  if (ctx->alloc->capturing) return kc_fail(ctx, KC_E_ARG, "kc_graph_launch", "not while a graph is being recorded");
  return kc_check(ctx, cudaGraphLaunch(exec, ctx->stream), "cudaGraphLaunch");
}

// Launches already queued finish first: the driver frees an executable graph once it is idle.
KC_API void kc_graph_destroy(KcContext*, cudaGraphExec_t exec) {
  if (exec) cudaGraphExecDestroy(exec);
}
