// The GPUs the kernels' host-side models (the mma.sync GEMM's, convolution's and attention's tiles) are
// written for, by the figures kc_create reads from cudaDeviceProp, for the tests that run the models on
// a machine without them.

/** SMs, compute capability, shared memory per SM / per block (opt-in) / reserved per block, registers and
 *  threads per SM. */
export type GpuFigures = readonly [number, number, number, number, number, number, number, number];

const KiB = 1024;
/** An A100 (108 SMs), an H100 or H200 (132), an L40S (142) and an A10 (72, sm_86). */
export const GPU_FIGURES = {
  A100: [108, 8, 0, 164 * KiB, 163 * KiB, KiB, 65536, 2048],
  H100: [132, 9, 0, 228 * KiB, 227 * KiB, KiB, 65536, 2048],
  L40S: [142, 8, 9, 100 * KiB, 99 * KiB, KiB, 65536, 1536],
  A10: [72, 8, 6, 100 * KiB, 99 * KiB, KiB, 65536, 1536],
} as const satisfies Record<string, GpuFigures>;
