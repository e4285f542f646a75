// The emulated cuTensorMapEncodeTiled (host-runtime.h) on its own, for test/runtime/cuda-emulator.test.ts:
// which argument sets it accepts and which it refuses with CUDA_ERROR_INVALID_VALUE, case by case, so
// that the test can hold it to the rules of the driver API's documentation (cuda.h, "Tensor Map Object
// Managment": cuTensorMapEncodeTiled). Every case starts from one valid description — a [20, 72] bf16
// tensor at a 256-byte aligned address, rows of 144 bytes, 64 × 16 boxes with the 128-byte swizzle —
// and changes one thing.
//
//   tensor-map OUT    prints "<case> <CUresult>" per case; OUT is empty
#include "host-runtime.h"
#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace {
struct Args {
  CUtensorMapDataType type = CU_TENSOR_MAP_DATA_TYPE_BFLOAT16;
  cuuint32_t rank = 2;
  size_t address_offset = 0;  // bytes past the 256-byte aligned allocation
  size_t map_offset = 0;      // bytes past a 64-byte aligned CUtensorMap
  cuuint64_t dims[5] = {72, 20, 1, 1, 1}, strides[4] = {144, 2880, 2880, 2880};
  cuuint32_t box[5] = {64, 16, 1, 1, 1}, element_strides[5] = {1, 1, 1, 1, 1};
  CUtensorMapSwizzle swizzle = CU_TENSOR_MAP_SWIZZLE_128B;
};

const std::vector<std::pair<const char*, std::function<void(Args&)>>> CASES = {
    {"valid", [](Args&) {}},
    {"dim-2^32", [](Args& a) { a.dims[1] = 1ull << 32; }},
    {"box-256", [](Args& a) { a.box[1] = 256; }},
    {"rank-5", [](Args& a) { a.rank = 5; }},
    {"plain-16-byte-rows", [](Args& a) { a.swizzle = CU_TENSOR_MAP_SWIZZLE_NONE, a.box[0] = 8; }},
    {"f32-128-byte-rows", [](Args& a) { a.type = CU_TENSOR_MAP_DATA_TYPE_FLOAT32, a.box[0] = 32; }},
    {"map-misaligned", [](Args& a) { a.map_offset = 16; }},
    {"rank-0", [](Args& a) { a.rank = 0; }},
    {"rank-6", [](Args& a) { a.rank = 6; }},
    {"address-8", [](Args& a) { a.address_offset = 8; }},
    {"dim-0", [](Args& a) { a.dims[0] = 0; }},
    {"dim-2^32+1", [](Args& a) { a.dims[1] = (1ull << 32) + 1; }},
    {"stride-8", [](Args& a) { a.strides[0] = 152; }},
    {"stride-2^40", [](Args& a) { a.strides[0] = 1ull << 40; }},
    {"box-0", [](Args& a) { a.box[1] = 0; }},
    {"box-257", [](Args& a) { a.box[1] = 257; }},
    {"box-row-8-bytes", [](Args& a) { a.swizzle = CU_TENSOR_MAP_SWIZZLE_NONE, a.box[0] = 4; }},
    {"element-stride-0", [](Args& a) { a.element_strides[1] = 0; }},
    {"element-stride-9", [](Args& a) { a.element_strides[0] = 9; }},
    {"swizzle-256-byte-rows", [](Args& a) { a.box[0] = 128; }},
    {"f32-swizzle-256-byte-rows", [](Args& a) { a.type = CU_TENSOR_MAP_DATA_TYPE_FLOAT32; }},
};
}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) kc_emu::fail("usage: tensor-map OUT");
  uint8_t* tensor = (uint8_t*)kc_emu::device_alloc(20 * 144 + 64);
  alignas(64) static uint8_t maps[2 * sizeof(CUtensorMap)];
  for (const auto& [name, change] : CASES) {
    Args a;
    change(a);
    CUtensorMap* map = (CUtensorMap*)(maps + a.map_offset);
    const CUresult r = kc_emu_encode_tiled(map, a.type, a.rank, tensor + a.address_offset, a.dims, a.strides, a.box, a.element_strides,
                                           CU_TENSOR_MAP_INTERLEAVE_NONE, a.swizzle, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                                           CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
    printf("%s %d\n", name, (int)r);
  }
  const uint8_t nothing = 0;
  kc_emu::write_file(argv[1], &nothing, 0);
  return 0;
}
