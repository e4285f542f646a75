// What a harness's main file adds to the emulator (emulator.h): the few CUDA runtime calls the
// kernel files make on the host, answered without a device (device memory is host memory here),
// context.cu's error plumbing and scratch memory, the driver's tensor-map encoder for the Hopper
// kernels, and reading and writing the harness's files. Only the translation unit with main()
// includes it.
#pragma once
#include "emulator.h"

// A launch the device would refuse (emulator.h) reports here, once, as the runtime's does.
extern "C" cudaError_t cudaGetLastError(void) {
  const cudaError_t e = kc_emu::launch_error;
  kc_emu::launch_error = cudaSuccess;
  return e;
}
extern "C" const char* cudaGetErrorString(cudaError_t e) { return e == cudaErrorInvalidValue ? "invalid argument" : "emulated"; }
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
extern "C" cudaError_t cudaMemsetAsync(void* p, int value, size_t bytes, cudaStream_t) {
  memset(p, value, bytes);
  return cudaSuccess;
}

int kc_fail(KcContext* ctx, int code, const char* where, const char* detail) {
  snprintf(ctx->error, sizeof ctx->error, "%s: %s", where, detail ? detail : "failed");
  return code;
}
namespace kc_emu {
// "Device" memory: an allocation of exactly `bytes`, so that the sanitizer sees an access past its end,
// starting 256-byte aligned as the library's caching allocator hands blocks out (alloc.cu) — or, where
// the environment has KC_EMU_MISALIGN=1, 16 bytes past a 128-byte boundary, as a view into a block may
// start (the kernels' alignment checks and fallbacks).
inline void* device_alloc(size_t bytes) {
  static const bool misalign = getenv("KC_EMU_MISALIGN") && atoi(getenv("KC_EMU_MISALIGN")) == 1;
  void* p = nullptr;
  if (posix_memalign(&p, 256, (bytes ? bytes : 1) + (misalign ? 16 : 0))) fail("out of memory");
  return misalign ? (uint8_t*)p + 16 : p;
}
}  // namespace kc_emu

// Scratch blocks come from the caching allocator: 256-byte aligned, of their exact size here.
void* kc_scratch(KcContext*, size_t bytes) {
  void* p = nullptr;
  if (posix_memalign(&p, 256, bytes ? bytes : 1)) kc_emu::fail("out of memory");
  return p;
}
void kc_scratch_release(KcContext*, void* p) { free(p); }

// f32 → bf16/f16 of a buffer (elementwise.cu's kc_convert_launch, which the harnesses do not link),
// element by element through the same device helpers its kernels store with (kc_ld, kc_st: round to
// nearest even), on the host.
int kc_convert_launch(KcContext*, const void* src, int src_dt, void* dst, int dst_dt, int64_t n) {
  for (int64_t i = 0; i < n; i++) kc_st(dst, dst_dt, i, kc_ld(src, src_dt, i));
  return 0;
}

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

namespace kc_emu {

inline std::vector<uint8_t> read_file(const char* path) {
  FILE* f = fopen(path, "rb");
  if (!f) fail("cannot open the input");
  std::vector<uint8_t> data;
  uint8_t buf[65536];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, f)) > 0) data.insert(data.end(), buf, buf + n);
  fclose(f);
  return data;
}

// The arrays of an input file in order, each copied into "device" memory of its exact size (so that
// the sanitizer sees reads past its end; device_alloc).
struct Reader {
  std::vector<uint8_t> in;
  size_t at = 0;
  explicit Reader(const char* path) : in(read_file(path)) {}
  void* take(size_t bytes) {
    if (at + bytes > in.size()) fail("input file too short");
    void* p = device_alloc(bytes);
    memcpy(p, in.data() + at, bytes);
    at += bytes;
    return p;
  }
  void end() const {
    if (at != in.size()) fail("input file too long");
  }
};

inline void write_file(const char* path, const void* data, size_t bytes) {
  FILE* f = fopen(path, "wb");
  if (!f || fwrite(data, 1, bytes, f) != bytes) fail("cannot write the output");
  fclose(f);
}

}  // namespace kc_emu
