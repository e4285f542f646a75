// The CUDA runtime under the emulated libkino_cuda.so (emulated-library.ts links it with every
// kernels/cuda/*.cu compiled for the CPU emulator): what the library's host code calls — device
// discovery and properties, memory, copies, streams, events, the driver entry point of the tensor-map
// encoder, versions — answered without a device, so that the real CudaBackend opens on it in a test
// process and runs the whole library there. Graph capture: library-graphs.h.
//
// Semantics: one device, an sm_90 GPU with two multiprocessors and an H100's shared memory and
// registers (as the conv harness's context: every kernel path, wgmma included, can be forced and grid-
// stride loops take several turns); device memory is host memory; every launch, copy and memset runs
// at once, on the calling thread, whatever its stream, so streams are names and events complete when
// recorded. A kernel fault stops the process (emulator.h `fail`).
#include "emulator.h"
#include "runtime-launch.h"
#include "tensor-map-encoder.h"
#include <chrono>
#include <unistd.h>

// Opaque to the library (driver_types.h declares them only).
struct CUstream_st {
  unsigned flags;
};
struct CUevent_st {
  bool recorded = false;
  double ms = 0;  // host time of the last record
};

namespace kc_emu {
constexpr int SM_COUNT = 2;
// Allocations, by address, for cudaMemGetInfo and to refuse frees of what cudaMalloc did not hand out.
inline std::unordered_map<void*, size_t> device_blocks;
inline size_t device_in_use = 0;
inline size_t device_total() { return (size_t)sysconf(_SC_PHYS_PAGES) * (size_t)sysconf(_SC_PAGESIZE); }
inline double now_ms() { return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now().time_since_epoch()).count(); }
}  // namespace kc_emu

#include "library-graphs.h"

// The number of a planted bug (KC_PLANTED) for the calls that follow, 0 for none: a test process loads
// the library once and plants bugs one case at a time.
extern "C" __attribute__((visibility("default"))) void kc_emu_plant(int n) { kc_emu::planted = n; }

// ---- device --------------------------------------------------------------------------------------

extern "C" cudaError_t cudaGetDeviceCount(int* count) {
  *count = 1;
  return cudaSuccess;
}
extern "C" cudaError_t cudaSetDevice(int device) { return device == 0 ? cudaSuccess : cudaErrorInvalidDevice; }
extern "C" cudaError_t cudaGetDeviceProperties(cudaDeviceProp* prop, int device) {
  if (device != 0) return cudaErrorInvalidDevice;
  memset(prop, 0, sizeof *prop);
  snprintf(prop->name, sizeof prop->name, "CPU emulator");
  prop->major = 9, prop->minor = 0;
  prop->multiProcessorCount = kc_emu::SM_COUNT;
  prop->totalGlobalMem = kc_emu::device_total();
  // H100's (CUDA programming guide, compute capability 9.0)
  prop->sharedMemPerBlock = kc_emu::SMEM_DEFAULT;
  prop->sharedMemPerBlockOptin = kc_emu::SMEM_OPTIN;
  prop->sharedMemPerMultiprocessor = 228 * 1024;
  prop->reservedSharedMemPerBlock = 1024;
  prop->regsPerMultiprocessor = prop->regsPerBlock = 65536;
  prop->maxThreadsPerMultiProcessor = 2048;
  prop->maxThreadsPerBlock = 1024;
  prop->warpSize = 32;
  return cudaSuccess;
}
extern "C" cudaError_t cudaDeviceGetPCIBusId(char* out, int len, int device) {
  if (device != 0) return cudaErrorInvalidDevice;
  snprintf(out, (size_t)len, "0000:00:00.0");
  return cudaSuccess;
}
extern "C" cudaError_t cudaDriverGetVersion(int* v) {
  *v = CUDART_VERSION;
  return cudaSuccess;
}
extern "C" cudaError_t cudaRuntimeGetVersion(int* v) {
  *v = CUDART_VERSION;
  return cudaSuccess;
}
// The driver's entry points: cuTensorMapEncodeTiled alone, emulated (tensor-map-encoder.h).
extern "C" cudaError_t cudaGetDriverEntryPointByVersion(const char* symbol, void** fn, unsigned int, unsigned long long,
                                                        cudaDriverEntryPointQueryResult* status) {
  const bool known = strcmp(symbol, "cuTensorMapEncodeTiled") == 0;
  *fn = known ? (void*)&kc_emu_encode_tiled : nullptr;
  if (status) *status = known ? cudaDriverEntryPointSuccess : cudaDriverEntryPointSymbolNotFound;
  return known ? cudaSuccess : cudaErrorSymbolNotFound;
}

// ---- memory --------------------------------------------------------------------------------------

// 256-byte aligned as the runtime's, and filled with 0xFF bytes (NaN in f32, bf16 and f16), so that a
// kernel that reads what nothing wrote shows it.
extern "C" cudaError_t cudaMalloc(void** p, size_t bytes) {
  *p = nullptr;
  if (kc_emu::device_in_use + bytes > kc_emu::device_total() || posix_memalign(p, 256, bytes ? bytes : 1)) return cudaErrorMemoryAllocation;
  memset(*p, 0xFF, bytes);
  kc_emu::device_blocks[*p] = bytes;
  kc_emu::device_in_use += bytes;
  return cudaSuccess;
}
extern "C" cudaError_t cudaFree(void* p) {
  if (!p) return cudaSuccess;
  auto it = kc_emu::device_blocks.find(p);
  if (it == kc_emu::device_blocks.end()) return cudaErrorInvalidValue;
  kc_emu::device_in_use -= it->second;
  kc_emu::device_blocks.erase(it);
  free(p);
  return cudaSuccess;
}
extern "C" cudaError_t cudaMemGetInfo(size_t* free_bytes, size_t* total) {
  *total = kc_emu::device_total();
  *free_bytes = *total - kc_emu::device_in_use;
  return cudaSuccess;
}
extern "C" cudaError_t cudaHostAlloc(void** p, size_t bytes, unsigned int) {
  *p = malloc(bytes ? bytes : 1);
  return *p ? cudaSuccess : cudaErrorMemoryAllocation;
}
extern "C" cudaError_t cudaFreeHost(void* p) {
  free(p);
  return cudaSuccess;
}

// Copies and memsets run at once, or are recorded by an open capture of their stream (library-graphs.h).
extern "C" cudaError_t cudaMemcpyAsync(void* dst, const void* src, size_t bytes, cudaMemcpyKind, cudaStream_t stream) {
  static const char copy_node = 0;
  return kc_emu::enqueue(stream, &copy_node, [=] { memmove(dst, src, bytes); });
}
extern "C" cudaError_t cudaMemsetAsync(void* p, int value, size_t bytes, cudaStream_t stream) {
  static const char memset_node = 0;
  return kc_emu::enqueue(stream, &memset_node, [=] { memset(p, value, bytes); });
}

// ---- streams and events --------------------------------------------------------------------------

extern "C" cudaError_t cudaStreamCreateWithFlags(cudaStream_t* s, unsigned int flags) {
  *s = new CUstream_st{flags};
  return cudaSuccess;
}
extern "C" cudaError_t cudaStreamDestroy(cudaStream_t s) {
  delete s;
  return cudaSuccess;
}
// Nothing is ever pending; a wait on a capturing stream breaks its capture, as the runtime's does.
extern "C" cudaError_t cudaStreamSynchronize(cudaStream_t s) {
  if (kc_emu::capturing(s)) return kc_emu::break_capture();
  return cudaSuccess;
}
extern "C" cudaError_t cudaStreamWaitEvent(cudaStream_t s, cudaEvent_t e, unsigned int) {
  if (!e) return cudaErrorInvalidResourceHandle;
  return kc_emu::capture_broken(s) ? cudaErrorStreamCaptureInvalidated : cudaSuccess;
}

extern "C" cudaError_t cudaEventCreate(cudaEvent_t* e) {
  *e = new CUevent_st();
  return cudaSuccess;
}
extern "C" cudaError_t cudaEventCreateWithFlags(cudaEvent_t* e, unsigned int) { return cudaEventCreate(e); }
extern "C" cudaError_t cudaEventDestroy(cudaEvent_t e) {
  delete e;
  return cudaSuccess;
}
// Everything enqueued before a record has run: the event completes as it is recorded. In a capture it
// is a node that orders nothing (one stream), left out of the graph, and the event stays unrecorded.
extern "C" cudaError_t cudaEventRecord(cudaEvent_t e, cudaStream_t s) {
  if (!e) return cudaErrorInvalidResourceHandle;
  if (kc_emu::capture_broken(s)) return cudaErrorStreamCaptureInvalidated;
  if (kc_emu::capturing(s)) return cudaSuccess;
  e->recorded = true;
  e->ms = kc_emu::now_ms();
  return cudaSuccess;
}
extern "C" cudaError_t cudaEventQuery(cudaEvent_t e) { return e ? cudaSuccess : cudaErrorInvalidResourceHandle; }
extern "C" cudaError_t cudaEventSynchronize(cudaEvent_t e) { return e ? cudaSuccess : cudaErrorInvalidResourceHandle; }
// The host time between the two records: how long the emulator took, nothing a GPU would.
extern "C" cudaError_t cudaEventElapsedTime(float* ms, cudaEvent_t start, cudaEvent_t end) {
  if (!start || !end || !start->recorded || !end->recorded) return cudaErrorInvalidResourceHandle;
  *ms = (float)(end->ms - start->ms);
  return cudaSuccess;
}
