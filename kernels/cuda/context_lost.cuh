// Which CUDA errors lose the context for good. After a kernel faults (an illegal or misaligned
// address, a trap or device assert, a bad instruction or program counter, a hardware stack error)
// the CUDA runtime leaves the process "in an inconsistent state": every later call returns the same
// error, and only a new process can use the GPU again (the cudaError enum's documentation in
// driver_types.h says so of each code below). kc_fail (context.cu) records the first such code on the
// context, so that the caller can tell a lost device from a failed call and replace the process.
//
// A pure function of the code, kept apart from context.cu so that a host test can check it against
// the installed CUDA headers without a GPU (test/runtime/cuda-context-lost.test.ts, through
// kc_error_loses_context).
#pragma once
#include <driver_types.h>

static inline bool kc_code_loses_context(int code) {
  switch (code) {
    case cudaErrorECCUncorrectable:     // 214: the driver's error containment ends the application
                                        // that touched the memory (NVIDIA's GPU memory error management)
    case cudaErrorContained:            // 226: an exception contained by the GPU's error containment
    case cudaErrorIllegalAddress:       // 700
    case cudaErrorLaunchTimeout:        // 702: a watchdog ended the kernel (display GPUs only)
    case cudaErrorAssert:               // 710: a device-side assert or trap
    case cudaErrorHardwareStackError:   // 714
    case cudaErrorIllegalInstruction:   // 715
    case cudaErrorMisalignedAddress:    // 716
    case cudaErrorInvalidAddressSpace:  // 717
    case cudaErrorInvalidPc:            // 718
    case cudaErrorLaunchFailure:        // 719: any other exception while a kernel ran
    case cudaErrorTensorMemoryLeak:     // 721: a kernel exited with tensor memory still allocated
    case cudaErrorMpsClientTerminated:  // 810: the MPS server ended this client
    case cudaErrorExternalDevice:       // 911: an external device signalled an error CUDA waited on
      return true;
    default:
      return false;
  }
}
