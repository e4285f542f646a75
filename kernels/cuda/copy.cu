// Data movement for any dtype (element size 1, 2 or 4 bytes): strided row copies and index gathers.
// Launched through KC_LAUNCH, so that the CPU emulator runs this file too (cuda-emulated-copy.test.ts).
//
// CPU reference (src/runtime/reference.ts):
//   slice / writeSlice / concat / KV-cache append and read — a tensor seen as [outer, dim, inner]:
//     copy_rows   dst[r·dst_pitch + i] = src[r·src_pitch + i]   for r < rows, i < row_bytes (bytes)
//     slice:      rows = outer, row = len·inner, src_pitch = bigLen·inner, src += start·inner
//     writeSlice: rows = outer, row = len·inner, dst_pitch = bigLen·inner, dst += start·inner
//   permute / upsampleNearest — out coordinate c (row-major over out_shape) reads
//     gather      in[Σ_d (c[d] / div[d]) · in_stride[d]]
//     permute:    div = 1, in_stride[d] = x's stride of dim perm[d]
//     upsample:   div[d] = out_shape[d] / x_shape[d], in_stride = x's strides
#include "common.cuh"

namespace {
constexpr int MAX_RANK = 8;

struct GatherDims {
  int rank;
  int64_t out_shape[MAX_RANK], div[MAX_RANK], in_stride[MAX_RANK];
};

// Copies in units of U (16, 4 or 1 bytes), chosen by the launcher from the common alignment.
template <typename U>
__global__ void copy_rows_kernel(uint8_t* dst, int64_t dst_pitch, const uint8_t* src, int64_t src_pitch, int64_t rows,
                                 int64_t units_per_row) {
  const int64_t n = rows * units_per_row;
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
    int64_t r = i / units_per_row, u = i % units_per_row;
    reinterpret_cast<U*>(dst + r * dst_pitch)[u] = reinterpret_cast<const U*>(src + r * src_pitch)[u];
  }
}

template <typename E>
__global__ void gather_kernel(E* out, const E* x, int64_t n, GatherDims g) {
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
    int64_t rem = i, off = 0;
    for (int d = g.rank - 1; d >= 0; d--) {
      int64_t c = rem % g.out_shape[d];
      rem /= g.out_shape[d];
      off += (c / g.div[d]) * g.in_stride[d];
    }
    out[i] = x[off];
  }
}

}  // namespace

// Byte-granular strided copy of `rows` rows of `row_bytes` each.
KC_API int kc_copy_rows(KcContext* ctx, void* dst, int64_t dst_pitch, const void* src, int64_t src_pitch, int64_t rows,
                        int64_t row_bytes) {
  if (rows <= 0 || row_bytes <= 0) return 0;
  const uintptr_t all = (uintptr_t)dst | (uintptr_t)src | (uintptr_t)dst_pitch | (uintptr_t)src_pitch | (uintptr_t)row_bytes;
  uint8_t* d = (uint8_t*)dst;
  const uint8_t* s = (const uint8_t*)src;
  if ((all & 15) == 0) {
    KC_LAUNCH(copy_rows_kernel<uint4>, kc_grid_for(ctx, rows * row_bytes / 16), 256, 0, ctx->stream)(d, dst_pitch, s, src_pitch, rows,
                                                                                           row_bytes / 16);
  } else if ((all & 3) == 0) {
    KC_LAUNCH(copy_rows_kernel<uint32_t>, kc_grid_for(ctx, rows * row_bytes / 4), 256, 0, ctx->stream)(d, dst_pitch, s, src_pitch,
                                                                                             rows, row_bytes / 4);
  } else {
    KC_LAUNCH(copy_rows_kernel<uint8_t>, kc_grid_for(ctx, rows * row_bytes), 256, 0, ctx->stream)(d, dst_pitch, s, src_pitch, rows,
                                                                                        row_bytes);
  }
  return kc_launched(ctx, "kc_copy_rows");
}

// out_shape, div, in_stride: `rank` int64 each (host arrays); elem_bytes 1, 2 or 4.
KC_API int kc_gather(KcContext* ctx, void* out, const void* x, int elem_bytes, int rank, const int64_t* out_shape,
                     const int64_t* div, const int64_t* in_stride) {
  if (rank < 1 || rank > MAX_RANK) return kc_fail(ctx, KC_E_ARG, "kc_gather", "rank must be 1..8");
  GatherDims g;
  g.rank = rank;
  int64_t n = 1;
  for (int d = 0; d < rank; d++) {
    g.out_shape[d] = out_shape[d];
    g.div[d] = div[d] > 0 ? div[d] : 1;
    g.in_stride[d] = in_stride[d];
    n *= out_shape[d];
  }
  if (n <= 0) return 0;
  switch (elem_bytes) {
    case 1: KC_LAUNCH(gather_kernel<uint8_t>, kc_grid_for(ctx, n), 256, 0, ctx->stream)((uint8_t*)out, (const uint8_t*)x, n, g); break;
    case 2: KC_LAUNCH(gather_kernel<uint16_t>, kc_grid_for(ctx, n), 256, 0, ctx->stream)((uint16_t*)out, (const uint16_t*)x, n, g); break;
    case 4: KC_LAUNCH(gather_kernel<uint32_t>, kc_grid_for(ctx, n), 256, 0, ctx->stream)((uint32_t*)out, (const uint32_t*)x, n, g); break;
    default: return kc_fail(ctx, KC_E_ARG, "kc_gather", "element size must be 1, 2 or 4");
  }
  return kc_launched(ctx, "kc_gather");
}
