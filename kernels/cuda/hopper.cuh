// Hopper (sm_90a) building blocks shared by the warp-specialized kernels (gemm_wgmma.cu,
// gemm_wgmma_persistent.cu, gemm_wgmma_pingpong.cu, attention_wgmma.cu, conv_wgmma.cu): mbarriers, TMA bulk-tensor
// loads and stores (with the proxy fence a store of staged data needs), wgmma shared-memory descriptors
// and the wgmma instructions themselves, named barriers and register reallocation.
//
// Everything here exists only where KC_HAS_WGMMA is defined: the sm_90a pass of nvcc. The sm_80 and
// compute_80 passes see kernels with empty bodies, so the host must launch them only on sm_90 (the
// launchers check ctx->sm_major == 9; an sm_90a cubin does not load on later chips either).
// The CPU emulator (test/runtime/cuda-emulator, KC_EMULATE) defines KC_HAS_WGMMA too and supplies the
// primitives below itself (hopper-sync.h, hopper-tma.h, hopper-tma-store.h, hopper-wgmma.h there), all
// but the descriptor encoders, which it decodes as the PTX ISA defines them.
//
// Conventions the kernels rely on:
//   - TMA writes tiles with the 128-byte swizzle (CU_TENSOR_MAP_SWIZZLE_128B): rows of 128 bytes
//     (64 16-bit elements), and inside each 1024-byte atom of 8 rows the 16-byte chunk c of row r sits
//     at chunk c ^ (r % 8). Tile bases are 1024-byte aligned, so the descriptors' base offset is 0. The
//     global tensors must start 128-byte aligned (the CUDA programming guide's requirement for a TMA
//     swizzle; the driver's encoder accepts 16): the launchers' callers check it.
//   - The wgmma descriptors name the same swizzle (mode 1), so neither side has bank conflicts and no
//     thread ever touches operand data.
//   - An mbarrier is "full" when the TMA byte count it expects has landed, "empty" when every consumer
//     thread has arrived; waits are on the phase parity, which flips each time a phase completes.
//
// Constraints the driver and hardware impose, and where each is checked. E: the CPU emulator stops, or
// answers with the driver's error, in every emulated case (test/runtime/cuda-emulator); P:
// test/runtime/cuda-ptx.test.ts on the build; B: nvcc/ptxas refuse it at build time; S: a static_assert;
// H: a host check before the launch (a failed one falls back or fails the op with the reason).
//   cuTensorMapEncodeTiled (driver API, cuda.h): tensorMap 64-byte aligned (CUtensorMap is alignas(64));
//     rank 1..5; globalAddress 16-byte aligned; globalDim 1..2^32; globalStrides multiples of 16 below
//     2^40; boxDim 1..256; boxDim[0] · element size a multiple of 16 bytes; elementStrides 1..8; with the
//     128-byte swizzle box rows of at most 128 bytes. E (tensor-map.cpp: each rule refused, each edge
//     accepted). What keeps the kernels' maps legal: K % 8 == 0, M, N, K > 0 (gemm.cu); D 64 or 128,
//     B, Lq, H > 0, kv_len 1..Lk (attention.cu: kv_len 0 never reaches a map; backends/cuda.ts checks
//     kv_len too); Cout ≥ 32 and K = taps · CP, CP a multiple of 32 (conv.cu, conv_pack.cu); output
//     rows of a multiple of 16 bytes (kc_gemm_wgmma_tma_out_fits). H. Boxes: 64 × 1 × BQ|BKV (≤ 176),
//     64 × 128|BN (≤ 256), the store's 128 B × 64 and 64 B × 64 tail. S (Layout, Tile).
//   TMA with a swizzle: global memory 128-byte aligned (CUDA programming guide, "The Swizzle Modes",
//     table of requirements for compute capability 9; the encoder itself asks for 16). E; H
//     (kc_attention_wgmma_aligned, gemm.cu aligned128, kc_gemm_wgmma_tma_out_fits, conv_wgmma.cu's wp
//     check). A view elsewhere falls back to mma.sync, or fails a forced wgmma attention with the reason.
//   cp.async.bulk.tensor (PTX ISA): shared box 128-byte aligned, E; the swizzle pattern repeats every
//     1024 bytes and follows the shared address, so every box starts on a 1024-byte atom (the +1024
//     slack; box and stage sizes multiples of 1024: S), which the descriptors' base offset 0 relies on
//     (E, below).
//     Coordinates are signed 32-bit; loads zero-fill outside the tensor, stores skip it. E.
//   mbarrier: 8-byte aligned, arrival count 1..2^20 - 1, pending transaction bytes of a phase at most
//     2^20 - 1 (the kernels expect ≤ 48 KiB a phase), no arrival beyond the count, fence.mbarrier_init
//     before TMA completes on it, initialised once. E.
//   wgmma.mma_async: m64nNk16 with N a multiple of 8 in 8..256 for bf16/f16 with f32 accumulators. B, S
//     (kc_wgmma_ss, kc_wgmma_rs_tb), E. Descriptors: start address 16-byte aligned, below 256 KiB (14
//     bits of addr >> 4), swizzle mode 1, base offset 0: the operand starts in the first row of a
//     1024-byte aligned atom. E. wgmma.fence before a wgmma whose registers ordinary code touched; all 128
//     threads issue the same instructions; accumulators untouched until the wait_group that retires them.
//     E; P (no "serialized" warning: no wgmma on a divergent path).
//   setmaxnreg: counts multiples of 8 in 24..256; every warp of the warpgroup executes the same one; .dec
//     never above the current count, .inc never below; the final counts within the registers the block
//     was launched with, or an .inc waits forever. E. The kernels are compiled under
//     __launch_bounds__(384, 1) to 168 registers a thread (P), a pool of 168 × 384 = 64512, and every one
//     splits it exactly: 24 + 2 × 240 (attention), 40 + 2 × 232 (GEMMs), 56 + 2 × 224 (conv), × 128.
//   Named barriers (bar.sync / bar.arrive, .aligned): ids 1..15 (0 is __syncthreads'), thread counts
//     multiples of 32, whole warps, none left half-arrived at exit. E.
//   Proxies: fence.proxy.async by each thread after its st.shared or cp.async writes that TMA or wgmma
//     then read. E. TMA stores: source 128-byte aligned, not rewritten before wait_group.read retires
//     the store, waited for before the thread exits. E.
//   cp.async of 16 bytes: global and shared address 16-byte aligned. E.
//   Dynamic shared memory: above 48 KiB only after cudaFuncSetAttribute(MaxDynamicSharedMemorySize),
//     which refuses more than 227 KiB less the static shared memory. E (the launch or the attribute is
//     refused with cudaErrorInvalidValue); S (each kernel's dynamic shared memory ≤ 227 KiB; the
//     persistent and ping-pong rings take what is left of it less 256 bytes); P (static shared memory ≤
//     256 bytes: the mbarriers, 128 bytes as built).
//   Launch: 384 threads × 168 registers ≤ 64 Ki (P); grid.x ≤ 2^31 - 1 (H); kernel parameters (three or
//     four 128-byte tensor maps) within 4 KiB (B).
#pragma once
#include "common.cuh"
#include <cuda.h>

#if defined(KC_EMULATE) || (defined(__CUDA_ARCH__) && defined(__CUDA_ARCH_FEAT_SM90_ALL))
#define KC_HAS_WGMMA 1
#endif

#if defined(KC_HAS_WGMMA) && !defined(KC_EMULATE)
// ---- mbarriers ---------------------------------------------------------------------------------------
__device__ __forceinline__ void kc_mbar_init(uint32_t bar, uint32_t count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(bar), "r"(count));
}
// Makes the initialized barriers visible to the async proxy (TMA) before anyone uses them.
__device__ __forceinline__ void kc_fence_mbar_init() {
  asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
}
// Returns once the phase with parity `parity` has completed. A fresh barrier is in phase 0, so waiting
// on parity 1 passes at once: producers wait on "empty" with the flipped parity for the first round.
__device__ __forceinline__ void kc_mbar_wait(uint32_t bar, uint32_t parity) {
  uint32_t done;
  do {
    asm volatile(
        "{\n .reg .pred p;\n mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n selp.u32 %0, 1, 0, p;\n}\n"
        : "=r"(done)
        : "r"(bar), "r"(parity)
        : "memory");
  } while (!done);
}
__device__ __forceinline__ void kc_mbar_arrive(uint32_t bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(bar) : "memory");
}
// The producer's arrival: the phase completes once `bytes` of TMA data have also landed.
__device__ __forceinline__ void kc_mbar_expect_tx(uint32_t bar, uint32_t bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(bar), "r"(bytes) : "memory");
}

// ---- TMA ---------------------------------------------------------------------------------------------
// Tile copies global → shared that complete on `bar`; coordinates innermost first. Elements outside
// the tensor map's dimensions arrive as zeros and still count toward the expected bytes.
__device__ __forceinline__ void kc_tma_load_2d(uint32_t dst, const CUtensorMap* map, uint32_t bar, int c0, int c1) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%3, %4}], [%2];\n" ::"r"(
          dst),
      "l"(map), "r"(bar), "r"(c0), "r"(c1)
      : "memory");
}
__device__ __forceinline__ void kc_tma_load_4d(uint32_t dst, const CUtensorMap* map, uint32_t bar, int c0, int c1,
                                               int c2, int c3) {
  asm volatile(
      "cp.async.bulk.tensor.4d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%3, %4, %5, %6}], "
      "[%2];\n" ::"r"(dst),
      "l"(map), "r"(bar), "r"(c0), "r"(c1), "r"(c2), "r"(c3)
      : "memory");
}

// ---- TMA stores ----------------------------------------------------------------------------------------
// Tile copies shared → global (cp.async.bulk.tensor ... .bulk_group), coordinates innermost first: the
// box at `src` (laid out as a load with the same map would write it) goes to the tensor; elements outside
// the tensor map's dimensions, on either side (coordinates may be negative), are not written. A store
// belongs to the thread that issued it: kc_bulk_commit closes that thread's stores since its last commit
// into a bulk async-group, kc_bulk_wait_read<N> returns once all but its N newest groups have read their
// shared memory (which may then be rewritten), kc_bulk_wait<N> once they have also written it.
__device__ __forceinline__ void kc_tma_store_2d(const CUtensorMap* map, uint32_t src, int c0, int c1) {
  asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%0, {%2, %3}], [%1];\n" ::"l"(map), "r"(src), "r"(c0),
               "r"(c1)
               : "memory");
}
__device__ __forceinline__ void kc_tma_store_3d(const CUtensorMap* map, uint32_t src, int c0, int c1, int c2) {
  asm volatile("cp.async.bulk.tensor.3d.global.shared::cta.bulk_group [%0, {%2, %3, %4}], [%1];\n" ::"l"(map), "r"(src),
               "r"(c0), "r"(c1), "r"(c2)
               : "memory");
}
__device__ __forceinline__ void kc_bulk_commit() { asm volatile("cp.async.bulk.commit_group;\n" ::: "memory"); }
template <int N>
__device__ __forceinline__ void kc_bulk_wait_read() {
  asm volatile("cp.async.bulk.wait_group.read %0;\n" ::"n"(N) : "memory");
}
template <int N>
__device__ __forceinline__ void kc_bulk_wait() {
  asm volatile("cp.async.bulk.wait_group %0;\n" ::"n"(N) : "memory");
}
// Orders this thread's earlier shared-memory writes (generic proxy) before later TMA accesses (async
// proxy): each thread that staged data for a TMA store executes it after its writes, before the barrier
// after which one thread issues the store.
__device__ __forceinline__ void kc_fence_proxy_async() { asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory"); }
// Shared-memory stores by address, for staging a TMA store's box (the emulator tracks these for the
// fence and buffer-reuse checks).
__device__ __forceinline__ void kc_st_shared_v2_f32(uint32_t addr, float a, float b) {
  asm volatile("st.shared.v2.f32 [%0], {%1, %2};\n" ::"r"(addr), "f"(a), "f"(b) : "memory");
}
__device__ __forceinline__ void kc_st_shared_b32(uint32_t addr, uint32_t v) {
  asm volatile("st.shared.b32 [%0], %1;\n" ::"r"(addr), "r"(v) : "memory");
}

// ---- warpgroup control ---------------------------------------------------------------------------------
// Register reallocation between warpgroups; the kernel must be compiled with a register cap
// (__launch_bounds__(threads, 1)) and each role must be one branch of a single if/else.
template <int REGS>
__device__ __forceinline__ void kc_setmaxnreg_dec() {
  asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(REGS));
}
template <int REGS>
__device__ __forceinline__ void kc_setmaxnreg_inc() {
  asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(REGS));
}
// Named barriers (id 0 is __syncthreads). bar.sync waits; bar.arrive counts toward `threads` and goes on.
__device__ __forceinline__ void kc_bar_sync(int id, int threads) {
  asm volatile("bar.sync %0, %1;\n" ::"r"(id), "r"(threads) : "memory");
}
__device__ __forceinline__ void kc_bar_arrive(int id, int threads) {
  asm volatile("bar.arrive %0, %1;\n" ::"r"(id), "r"(threads) : "memory");
}
#endif  // KC_HAS_WGMMA && !KC_EMULATE

#ifdef KC_HAS_WGMMA
// ---- wgmma ---------------------------------------------------------------------------------------------
// Shared-memory matrix descriptors for 128-byte-swizzled tiles (start address, leading byte offset,
// stride byte offset = 1024 between 8-row groups, swizzle mode 1).
//   K-major (rows of K contiguous, e.g. q, k, GEMM operands): the leading offset is unused (1 by the
//     ISA's convention); a K step of 16 elements inside a 64-element row moves the start by 32 bytes.
//   MN-major (rows of N contiguous, e.g. v as the B of P·V, read with imm-trans-b = 1): the leading
//     offset is the distance between 64-element column blocks of N (one TMA box each).
__device__ __forceinline__ uint64_t kc_desc_sw128(uint32_t addr, uint32_t leading_bytes) {
  return (uint64_t)((addr & 0x3FFFF) >> 4) | ((uint64_t)((leading_bytes >> 4) & 0x3FFF) << 16) |
         ((uint64_t)(1024 >> 4) << 32) | ((uint64_t)1 << 62);
}
__device__ __forceinline__ uint64_t kc_desc_kmajor_sw128(uint32_t addr) { return kc_desc_sw128(addr, 16); }
#endif  // KC_HAS_WGMMA

#if defined(KC_HAS_WGMMA) && !defined(KC_EMULATE)

__device__ __forceinline__ void kc_wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void kc_wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }
template <int N>
__device__ __forceinline__ void kc_wgmma_wait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory");
}
// Keeps the compiler from moving reads or writes of wgmma registers across a wait: the wgmma asm
// statements "produce" their accumulators at issue time as far as the compiler knows.
// (No instruction is emitted: ptxas itself tracks registers a wgmma still reads or writes, and
// serializes the wgmma pipeline with a C75xx warning where ordinary code touches them too early.)
template <int N>
__device__ __forceinline__ void kc_fence_regs(float (&d)[N]) {
#pragma unroll
  for (int i = 0; i < N; i++) asm volatile("" : "+f"(d[i])::"memory");
}

#define KC_ACC8(i) \
  "+f"(d[i]), "+f"(d[i + 1]), "+f"(d[i + 2]), "+f"(d[i + 3]), "+f"(d[i + 4]), "+f"(d[i + 5]), "+f"(d[i + 6]), "+f"(d[i + 7])
#define KC_ACC32(i) KC_ACC8(i), KC_ACC8(i + 8), KC_ACC8(i + 16), KC_ACC8(i + 24)
#define KC_WGMMA_D32                                                                                  \
  "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, " \
  "%21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}"
#define KC_WGMMA_D64                                                                                           \
  "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, "          \
  "%21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, " \
  "%42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, " \
  "%63}"
#define KC_WGMMA_D56                                                                                           \
  "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, "          \
  "%21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, " \
  "%42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55}"
#define KC_WGMMA_D112 \
  "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, " \
  "%22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, " \
  "%43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, " \
  "%64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, %80, %81, %82, %83, %84, " \
  "%85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, %96, %97, %98, %99, %100, %101, %102, %103, %104, " \
  "%105, %106, %107, %108, %109, %110, %111}"
#define KC_WGMMA_D128 \
  "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, " \
  "%22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, " \
  "%43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, " \
  "%64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, %80, %81, %82, %83, %84, " \
  "%85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, %96, %97, %98, %99, %100, %101, %102, %103, %104, " \
  "%105, %106, %107, %108, %109, %110, %111, %112, %113, %114, %115, %116, %117, %118, %119, %120, %121, " \
  "%122, %123, %124, %125, %126, %127}"
#define KC_WGMMA_D48 \
  "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, " \
  "%22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, " \
  "%42, %43, %44, %45, %46, %47}"
#define KC_WGMMA_D96 \
  "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, " \
  "%22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, " \
  "%42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, " \
  "%62, %63, %64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, %80, %81, " \
  "%82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95}"
#define KC_WGMMA_D88 \
  "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, " \
  "%22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, " \
  "%42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, " \
  "%62, %63, %64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, %80, %81, " \
  "%82, %83, %84, %85, %86, %87}"
// The accumulator operands of an m64nNk16 with N/2 registers (N = 96: 48, N = 112: 56, N = 176: 88, N = 192: 96, N = 224: 112, N = 256: 128).
#define KC_ACC16(i) KC_ACC8(i), KC_ACC8(i + 8)
#define KC_ACC48 KC_ACC32(0), KC_ACC16(32)
#define KC_ACC56 KC_ACC32(0), KC_ACC16(32), KC_ACC8(48)
#define KC_ACC88 KC_ACC32(0), KC_ACC32(32), KC_ACC16(64), KC_ACC8(80)
#define KC_ACC96 KC_ACC32(0), KC_ACC32(32), KC_ACC32(64)
#define KC_ACC112 KC_ACC32(0), KC_ACC32(32), KC_ACC32(64), KC_ACC16(96)
#define KC_ACC128 KC_ACC32(0), KC_ACC32(32), KC_ACC32(64), KC_ACC32(96)
// One wgmma.mma_async with A and B from shared memory: SHAPE "m64nNk16", T "bf16"/"f16", D the
// accumulator list, IA/IB/IC the operand numbers of desc_a, desc_b and accumulate, the rest the
// accumulator operands.
#define KC_WGMMA_SS_ASM(SHAPE, T, D, IA, IB, IC, ...)                                                         \
  asm volatile("{\n .reg .pred p;\n setp.ne.b32 p, %" IC ", 0;\n"                                           \
               "wgmma.mma_async.sync.aligned." SHAPE ".f32." T "." T " " D ", %" IA ", %" IB ", p, 1, 1, 0, 0;\n}\n" \
               : __VA_ARGS__                                                                                  \
               : "l"(desc_a), "l"(desc_b), "r"(accumulate))

// Accumulator layout of every m64nNk16 below (f32, N/2 registers per thread): warp w of the warpgroup
// owns rows 16w .. 16w+15; with r = 16w + lane/4 and q = lane%4, d[4j + 0..3] hold
// (r, 8j + 2q), (r, 8j + 2q + 1), (r + 8, 8j + 2q), (r + 8, 8j + 2q + 1).

// d[64×N] (+)= A(64×16) · B(N×16)ᵀ with both operands K-major in shared memory; accumulate = 0
// overwrites d (the first K step of a fresh product).
template <int N, bool F16 = false>
__device__ __forceinline__ void kc_wgmma_ss(float* d, uint64_t desc_a, uint64_t desc_b, int accumulate) {
  static_assert(N == 96 || N == 112 || N == 128 || N == 176 || N == 192 || N == 224 || N == 256,
                "instantiated shapes: m64n96k16, m64n112k16, m64n128k16, m64n176k16, m64n192k16, m64n224k16, m64n256k16");
  if constexpr (N == 96) {
    if constexpr (F16) KC_WGMMA_SS_ASM("m64n96k16", "f16", KC_WGMMA_D48, "48", "49", "50", KC_ACC48);
    else KC_WGMMA_SS_ASM("m64n96k16", "bf16", KC_WGMMA_D48, "48", "49", "50", KC_ACC48);
  } else if constexpr (N == 192) {
    if constexpr (F16) KC_WGMMA_SS_ASM("m64n192k16", "f16", KC_WGMMA_D96, "96", "97", "98", KC_ACC96);
    else KC_WGMMA_SS_ASM("m64n192k16", "bf16", KC_WGMMA_D96, "96", "97", "98", KC_ACC96);
  } else if constexpr (N == 112) {
    if constexpr (F16) KC_WGMMA_SS_ASM("m64n112k16", "f16", KC_WGMMA_D56, "56", "57", "58", KC_ACC56);
    else KC_WGMMA_SS_ASM("m64n112k16", "bf16", KC_WGMMA_D56, "56", "57", "58", KC_ACC56);
  } else if constexpr (N == 128) {
    if constexpr (F16) KC_WGMMA_SS_ASM("m64n128k16", "f16", KC_WGMMA_D64, "64", "65", "66", KC_ACC32(0), KC_ACC32(32));
    else KC_WGMMA_SS_ASM("m64n128k16", "bf16", KC_WGMMA_D64, "64", "65", "66", KC_ACC32(0), KC_ACC32(32));
  } else if constexpr (N == 176) {
    if constexpr (F16) KC_WGMMA_SS_ASM("m64n176k16", "f16", KC_WGMMA_D88, "88", "89", "90", KC_ACC88);
    else KC_WGMMA_SS_ASM("m64n176k16", "bf16", KC_WGMMA_D88, "88", "89", "90", KC_ACC88);
  } else if constexpr (N == 224) {
    if constexpr (F16) KC_WGMMA_SS_ASM("m64n224k16", "f16", KC_WGMMA_D112, "112", "113", "114", KC_ACC112);
    else KC_WGMMA_SS_ASM("m64n224k16", "bf16", KC_WGMMA_D112, "112", "113", "114", KC_ACC112);
  } else {
    if constexpr (F16) KC_WGMMA_SS_ASM("m64n256k16", "f16", KC_WGMMA_D128, "128", "129", "130", KC_ACC128);
    else KC_WGMMA_SS_ASM("m64n256k16", "bf16", KC_WGMMA_D128, "128", "129", "130", KC_ACC128);
  }
}

// d[64×N] += A(64×16, bf16 registers) · B(16×N) with B MN-major in shared memory (imm-trans-b = 1).
// The A fragment of warp w is rows 16w .. 16w+15 in the mma.sync m16n8k16 A layout: with r and q as
// above, a[0] = (r, 2q..2q+1), a[1] = (r + 8, 2q..2q+1), a[2] = (r, 2q+8..2q+9), a[3] = (r + 8, 2q+8..2q+9),
// each register two bf16 with the lower column in the low half. That is exactly how an f32 accumulator
// of the same rows packs: a[0] = d[8k..8k+1], a[1] = d[8k+2..3], a[2] = d[8k+4..5], a[3] = d[8k+6..7]
// for the K step covering columns 16k .. 16k+15.
template <int N>
__device__ __forceinline__ void kc_wgmma_rs_tb(float* d, const uint32_t* a, uint64_t desc_b) {
  static_assert(N == 64 || N == 128, "instantiated shapes: m64n64k16, m64n128k16");
  if constexpr (N == 64) {
    asm volatile("{\n .reg .pred p;\n setp.ne.b32 p, 1, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 " KC_WGMMA_D32
                 ", {%32, %33, %34, %35}, %36, p, 1, 1, 1;\n}\n"
                 : KC_ACC32(0)
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc_b));
  } else {
    asm volatile("{\n .reg .pred p;\n setp.ne.b32 p, 1, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 " KC_WGMMA_D64
                 ", {%64, %65, %66, %67}, %68, p, 1, 1, 1;\n}\n"
                 : KC_ACC32(0), KC_ACC32(32)
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc_b));
  }
}
#endif  // KC_HAS_WGMMA

// ---- host: tensor maps ---------------------------------------------------------------------------------
typedef CUresult (*KcEncodeTiledFn)(CUtensorMap*, CUtensorMapDataType, cuuint32_t, void*, const cuuint64_t*,
                                    const cuuint64_t*, const cuuint32_t*, const cuuint32_t*, CUtensorMapInterleave,
                                    CUtensorMapSwizzle, CUtensorMapL2promotion, CUtensorMapFloatOOBfill);

// Describes a tensor of `type` for TMA: `rank` dimensions innermost first (dims[0] contiguous), byte
// strides of dimensions 1.. (multiples of 16), boxes of box[] elements, zeros outside the dimensions
// for loads (stores skip what lies outside), `swizzle` the shared-memory layout of a box (with the
// 128-byte swizzle, box[0] fills one 128-byte row). Needs ctx->encode_tensor_map (sm_90 only).
static inline int kc_encode_tma_as(KcContext* ctx, CUtensorMap* map, CUtensorMapDataType type, const void* ptr, int rank,
                                   const cuuint64_t* dims, const cuuint64_t* strides, const cuuint32_t* box,
                                   CUtensorMapSwizzle swizzle, const char* what) {
  const cuuint32_t elem_strides[5] = {1, 1, 1, 1, 1};
  CUresult r = ((KcEncodeTiledFn)ctx->encode_tensor_map)(map, type, (cuuint32_t)rank, const_cast<void*>(ptr), dims, strides, box,
                                                         elem_strides, CU_TENSOR_MAP_INTERLEAVE_NONE, swizzle,
                                                         CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (r != CUDA_SUCCESS) return kc_fail(ctx, (int)r, "cuTensorMapEncodeTiled", what);
  return 0;
}

// A bf16 (or f16) operand with the 128-byte swizzle: box[0] = 64 (one 128-byte swizzled row).
static inline int kc_encode_tma(KcContext* ctx, CUtensorMap* map, const void* ptr, bool f16, int rank,
                                const cuuint64_t* dims, const cuuint64_t* strides, const cuuint32_t* box,
                                const char* what) {
  return kc_encode_tma_as(ctx, map, f16 ? CU_TENSOR_MAP_DATA_TYPE_FLOAT16 : CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, ptr, rank, dims,
                          strides, box, CU_TENSOR_MAP_SWIZZLE_128B, what);
}
