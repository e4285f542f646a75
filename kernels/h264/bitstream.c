/* NAL unit packaging (H.264 clause 7.3.1 / 7.4.1). */
#include "bitstream.h"

/*
 * Writes the NAL header byte and the payload with emulation_prevention_three_byte inserted: inside a
 * NAL, 00 00 followed by a byte <= 03 would look like a start code (or be reserved), so an 03 goes
 * between. Returns the NAL size; dst needs room for rbsp_size * 3 / 2 + 2 bytes. dst may overlap
 * rbsp when it starts at least rbsp_size / 2 + 2 bytes before it (the output never catches up).
 */
int nal_wrap(u8 *dst, int header, const u8 *rbsp, int rbsp_size) {
  int n = 0, zeros = 0;
  dst[n++] = (u8)header;
  for (int i = 0; i < rbsp_size; i++) {
    u8 b = rbsp[i];
    if (zeros >= 2 && b <= 3) {
      dst[n++] = 3;
      zeros = 0;
    }
    dst[n++] = b;
    zeros = b == 0 ? zeros + 1 : 0;
  }
  return n;
}
