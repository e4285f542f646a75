// kc_copy_rows (kernels/cuda/copy.cu, the file itself) on the CPU emulator, for
// test/runtime/cuda-emulated-copy.test.ts: the copies CudaBackend.copyWithin enqueues, run in order on
// one buffer.
//
//   copy IN OUT
//   IN:  int64 bytes, count; then count × int64 (dst, src, pitch, rows, row_bytes), offsets into the
//        buffer; then the buffer's bytes
//   OUT: the buffer's bytes after the copies
// Prints one line per kernel launch; exits 1 with the library's message when a launch fails.
#include "host-runtime.h"

#include "../../../kernels/cuda/copy.cu"

int main(int argc, char** argv) {
  if (argc != 3) kc_emu::fail("usage: copy IN OUT");
  FILE* f = fopen(argv[1], "rb");
  if (!f) kc_emu::fail("cannot open the input");
  int64_t head[2];
  if (fread(head, sizeof head, 1, f) != 1) kc_emu::fail("input file too short");
  const int64_t bytes = head[0], count = head[1];
  int64_t* copies = (int64_t*)malloc(sizeof(int64_t) * 5 * (count ? count : 1));
  if (fread(copies, sizeof(int64_t) * 5, count, f) != (size_t)count) kc_emu::fail("input file too short");
  // an exact-size allocation, so that the sanitizer sees a copy past either end
  uint8_t* buf = (uint8_t*)kc_emu::device_alloc(bytes);
  if (fread(buf, 1, bytes, f) != (size_t)bytes) kc_emu::fail("input file too short");
  fclose(f);
  KcContext ctx{};
  ctx.sm_count = 2;  // a few blocks: the grid-stride loop takes several turns
  for (int64_t i = 0; i < count; i++) {
    const int64_t* c = copies + 5 * i;
    const int rc = kc_copy_rows(&ctx, buf + c[0], c[2], buf + c[1], c[2], c[3], c[4]);
    if (rc) {
      fprintf(stderr, "kc_copy_rows: %s (%d)\n", ctx.error, rc);
      return 1;
    }
  }
  f = fopen(argv[2], "wb");
  if (!f || fwrite(buf, 1, bytes, f) != (size_t)bytes) kc_emu::fail("cannot write the output");
  fclose(f);
  return 0;
}
