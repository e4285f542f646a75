// Wan's 3D RoPE against goldens/rope: the per-axis tables (head dims 12, 32 and the real 128) and
// rope_apply on a token grid with padded tokens, on every backend through DeviceRope.
import { describe, expect, test } from "bun:test";
import { DeviceRope, ropeAxisPairs, ropeTables } from "../../src/models/rope.ts";
import { get, loadGolden, maxAbsDiff } from "./helpers/goldens.ts";
import { testBackends } from "./helpers/backends.ts";

const g = await loadGolden("rope", "rope.safetensors");

describe("RoPE tables", () => {
  test("axis split: 44/42/42 dims for head dim 128, 12/10/10 for 32, 4/4/4 for 12", () => {
    expect(ropeAxisPairs(128)).toEqual([22, 21, 21]);
    expect(ropeAxisPairs(32)).toEqual([6, 5, 5]);
    expect(ropeAxisPairs(12)).toEqual([2, 2, 2]);
  });
  for (const hd of [12, 32, 128]) {
    test(`hd${hd}: cos/sin of the first 64 positions`, () => {
      const { cos, sin } = ropeTables(64, hd);
      const e = Math.max(maxAbsDiff(cos, get(g, `hd${hd}.freqs_cos_first64pos`).data), maxAbsDiff(sin, get(g, `hd${hd}.freqs_sin_first64pos`).data));
      expect(e).toBeLessThan(1e-7);
    });
  }
});

for (const tb of await testBackends()) {
  describe.skipIf(!tb.backend)(`rope_apply on ${tb.label}${tb.skip ? ` (skipped: ${tb.skip})` : ""}`, () => {
    for (const [hd, grid] of [[32, [3, 4, 5]], [12, [2, 3, 2]]] as const) {
      test(`hd${hd} grid ${grid}`, async () => {
        const be = tb.backend!;
        const q = get(g, `hd${hd}.q`);
        const rope = new DeviceRope(be, hd, 1024);
        const x = be.upload(q.data, q.shape);
        be.rope3d(x, x, rope.options(grid));
        const e = maxAbsDiff(await be.download(x), get(g, `hd${hd}.q_rope`).data);
        console.log(`rope hd${hd} on ${tb.label}: max abs err ${e.toExponential(2)}`);
        expect(e).toBeLessThan(1e-5);
        be.free(x);
        rope.free();
      });
    }
    test("a frame offset past the initial rows grows the table", async () => {
      const be = tb.backend!;
      const rope = new DeviceRope(be, 32, 8);
      const far = rope.options([2, 1, 1], 20);
      expect(far.cos.shape[0]).toBeGreaterThanOrEqual(22);
      const { cos } = ropeTables(22, 32);
      expect(maxAbsDiff((await be.download(far.cos)).subarray(0, 22 * 16), cos)).toBe(0);
      rope.free();
    });
  });
}
