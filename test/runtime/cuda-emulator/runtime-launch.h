// The CUDA runtime calls around a kernel launch, emulated, for every build on the CPU emulator (the
// harnesses: host-runtime.h; the emulated library: library-runtime.cpp): the error of the last launch
// the device would refuse, the messages and names of the error codes the library can meet, and the
// shared-memory opt-in. Included by one translation unit of each.
#pragma once
#include "emulator.h"

// A launch the device would refuse (emulator.h) reports here, once, as the runtime's does.
extern "C" cudaError_t cudaGetLastError(void) {
  const cudaError_t e = kc_emu::launch_error;
  kc_emu::launch_error = cudaSuccess;
  return e;
}

namespace kc_emu {
// The codes an emulated call can answer, and those kino's own code names (context_lost.cuh, the
// "no device" codes of kc_create), with the runtime's messages (cudaGetErrorString) and enum names.
struct ErrorText {
  cudaError_t code;
  const char* name;
  const char* message;
};
inline constexpr ErrorText ERROR_TEXTS[] = {
    {cudaSuccess, "cudaSuccess", "no error"},
    {cudaErrorInvalidValue, "cudaErrorInvalidValue", "invalid argument"},
    {cudaErrorMemoryAllocation, "cudaErrorMemoryAllocation", "out of memory"},
    {cudaErrorInsufficientDriver, "cudaErrorInsufficientDriver", "CUDA driver version is insufficient for CUDA runtime version"},
    {cudaErrorNoDevice, "cudaErrorNoDevice", "no CUDA-capable device is detected"},
    {cudaErrorInvalidDevice, "cudaErrorInvalidDevice", "invalid device ordinal"},
    {cudaErrorSymbolNotFound, "cudaErrorSymbolNotFound", "named symbol not found"},
    {cudaErrorInvalidResourceHandle, "cudaErrorInvalidResourceHandle", "invalid resource handle"},
    {cudaErrorNotReady, "cudaErrorNotReady", "device not ready"},
    {cudaErrorIllegalAddress, "cudaErrorIllegalAddress", "an illegal memory access was encountered"},
    {cudaErrorLaunchFailure, "cudaErrorLaunchFailure", "unspecified launch failure"},
    {cudaErrorStreamCaptureUnsupported, "cudaErrorStreamCaptureUnsupported", "operation not permitted when stream is capturing"},
    {cudaErrorStreamCaptureInvalidated, "cudaErrorStreamCaptureInvalidated", "operation failed due to a previous error during capture"},
    {cudaErrorIllegalState, "cudaErrorIllegalState", "the operation cannot be performed in the present state"},
    {cudaErrorGraphExecUpdateFailure, "cudaErrorGraphExecUpdateFailure",
     "the graph update was not performed because it included changes which violated constraints specific to instantiated graph update"},
};
inline const ErrorText* error_text(cudaError_t e) {
  for (const ErrorText& t : ERROR_TEXTS)
    if (t.code == e) return &t;
  return nullptr;
}
}  // namespace kc_emu

extern "C" const char* cudaGetErrorString(cudaError_t e) {
  const kc_emu::ErrorText* t = kc_emu::error_text(e);
  return t ? t->message : "unrecognized error code";
}
extern "C" const char* cudaGetErrorName(cudaError_t e) {
  const kc_emu::ErrorText* t = kc_emu::error_text(e);
  return t ? t->name : "cudaErrorUnknown";
}

// The dynamic shared memory a kernel may launch with (emulator.h): up to 227 KiB less its static shared
// memory, else cudaErrorInvalidValue (CUDA runtime API, cudaFuncSetAttribute).
extern "C" cudaError_t cudaFuncSetAttribute(const void* kernel, enum cudaFuncAttribute attr, int value) {
  if (attr != cudaFuncAttributeMaxDynamicSharedMemorySize) return cudaSuccess;
  if (value < 0 || value > kc_emu::SMEM_OPTIN - kc_emu::STATIC_SMEM_MAX) {
    fprintf(stderr, "emulator: cudaFuncSetAttribute(MaxDynamicSharedMemorySize, %d): more than the %d bytes a block may have "
            "beside its static shared memory (cudaErrorInvalidValue)\n", value, kc_emu::SMEM_OPTIN - kc_emu::STATIC_SMEM_MAX);
    return cudaErrorInvalidValue;
  }
  kc_emu::smem_opted_in[kernel] = value;
  return cudaSuccess;
}
