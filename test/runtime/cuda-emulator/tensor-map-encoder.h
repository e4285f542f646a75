// The driver's cuTensorMapEncodeTiled, emulated, for every build that runs the Hopper kernels: the
// harnesses (host-runtime.h) and the emulated library (library-runtime.cpp). Included by one
// translation unit of each.
#pragma once
#include "emulator.h"

// cuTensorMapEncodeTiled (what a context's encode_tensor_map points to on sm_90): checks its arguments
// against the requirements the driver API documents (cuda.h) — an argument they rule out returns
// CUDA_ERROR_INVALID_VALUE, with the reason on stderr — and stores what TMA needs in the map's opaque
// bytes (kc_emu::TensorMap, read by hopper-tma.h). Valid settings the emulator does not model (other
// element types, interleave, element strides, the 32 and 64 B swizzles, a NaN fill, a box row narrower
// than its swizzle) stop it.
static CUresult encode_invalid(const char* why, int i = -1) {
  fprintf(stderr, "emulator: cuTensorMapEncodeTiled: %s", why);
  if (i >= 0) fprintf(stderr, " (index %d)", i);
  fputc('\n', stderr);
  return CUDA_ERROR_INVALID_VALUE;
}
CUresult kc_emu_encode_tiled(CUtensorMap* map, CUtensorMapDataType type, cuuint32_t rank, void* address, const cuuint64_t* dims,
                             const cuuint64_t* strides, const cuuint32_t* box, const cuuint32_t* element_strides,
                             CUtensorMapInterleave interleave, CUtensorMapSwizzle swizzle, CUtensorMapL2promotion,
                             CUtensorMapFloatOOBfill fill) {
  static_assert(sizeof(kc_emu::TensorMap) <= sizeof(CUtensorMap), "the emulated tensor map must fit the opaque bytes");
  if ((uintptr_t)map % 64) return encode_invalid("tensorMap not 64-byte aligned");
  if (rank == 0 || rank > 5) return encode_invalid("tensorRank must be 1 .. 5");
  if ((uintptr_t)address % 16) return encode_invalid("globalAddress not 16-byte aligned");
  int elem;
  if (type == CU_TENSOR_MAP_DATA_TYPE_BFLOAT16 || type == CU_TENSOR_MAP_DATA_TYPE_FLOAT16) elem = 2;
  else if (type == CU_TENSOR_MAP_DATA_TYPE_FLOAT32) elem = 4;
  else kc_emu::failf("cuTensorMapEncodeTiled: data type %d is not emulated", (int)type);
  for (cuuint32_t i = 0; i < rank; i++) {
    if (dims[i] == 0 || dims[i] > (1ull << 32)) return encode_invalid("globalDim must be 1 .. 2^32", (int)i);
    if (box[i] == 0 || box[i] > 256) return encode_invalid("boxDim must be 1 .. 256", (int)i);
    if (element_strides[i] == 0 || element_strides[i] > 8) return encode_invalid("elementStrides must be 1 .. 8", (int)i);
    if (i > 0 && element_strides[i] != 1) kc_emu::fail("cuTensorMapEncodeTiled: element strides other than 1 are not emulated");
  }
  for (cuuint32_t i = 0; i + 1 < rank; i++)
    if (strides[i] % 16 || strides[i] >= (1ull << 40)) return encode_invalid("globalStrides must be multiples of 16 below 2^40", (int)i);
  if ((box[0] * elem) % 16) return encode_invalid("boxDim[0] times the element size must be a multiple of 16 bytes");
  if (interleave != CU_TENSOR_MAP_INTERLEAVE_NONE) kc_emu::fail("cuTensorMapEncodeTiled: interleaved layouts are not emulated");
  const int span = swizzle == CU_TENSOR_MAP_SWIZZLE_NONE ? 0 : swizzle == CU_TENSOR_MAP_SWIZZLE_128B ? 128 : -1;
  if (span < 0) kc_emu::failf("cuTensorMapEncodeTiled: swizzle mode %d is not emulated (none and 128 B are)", (int)swizzle);
  if (span && (int)box[0] * elem > span) return encode_invalid("the box's inner dimension is wider than the swizzle span");
  if (span && (int)box[0] * elem != span) kc_emu::fail("cuTensorMapEncodeTiled: a box row narrower than its swizzle span is not emulated");
  if (fill != CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) kc_emu::fail("cuTensorMapEncodeTiled: the NaN fill is not emulated");
  kc_emu::TensorMap m{};
  m.magic = kc_emu::TensorMap::MAGIC;
  m.rank = (uint8_t)rank, m.elem_bytes = (uint8_t)elem, m.swizzle_bytes = (uint8_t)span;
  m.base = (uint64_t)(uintptr_t)address;
  for (cuuint32_t i = 0; i < rank; i++) m.dims_minus1[i] = (uint32_t)(dims[i] - 1), m.box[i] = (uint16_t)box[i];
  for (cuuint32_t i = 0; i + 1 < rank; i++) m.strides[i] = strides[i];
  memset(map, 0, sizeof *map);
  memcpy(map, &m, sizeof m);
  return CUDA_SUCCESS;
}
