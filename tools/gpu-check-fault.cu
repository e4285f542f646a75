// A kernel fault on purpose, for tools/gpu-check-device-lost.ts (a step of tools/gpu-check.sh): a
// write to an address no allocation holds. It runs in the process whose CUDA backend the check then
// uses, on the same device's primary context, so it loses that context as a faulting kino kernel
// would. Built by the step with nvcc into its own library; never part of libkino_cuda.so.
#include <cuda_runtime.h>

__global__ void write_to_nowhere(int* p) { *p = 1; }

// The error the fault leaves: cudaErrorIllegalAddress (700) on every GPU kino runs on.
extern "C" int kino_check_fault_illegal_address() {
  write_to_nowhere<<<1, 1>>>(reinterpret_cast<int*>(0x8));
  return (int)cudaDeviceSynchronize();
}
